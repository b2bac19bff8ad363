// Seeded random AMQP values for the codec's property-based tests and fuzzing (test-only: not
// exported from index.ts). Every value generated here decodes back to itself: no shortStr or u64
// field values (AMQP carries them as 'S' and 'l'), 64-bit numbers within 2^53, UTF-8 strings.
import type { BasicProperties, FieldTable, FieldValue } from '@styx/client/wire';
import type { FieldDef, MethodDef } from './spec.gen.ts';

// The project's one seeded generator (mulberry32), re-exported for the codec tests.
export { seededRandom } from '../../test-support/seeded-random.ts';

/** Random integer in [min, max]. */
export function int(rng: () => number, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

const ALPHABET = ['a', 'b', 'z', '0', '.', '-', '_', ' ', 'é', 'ß', '漢', '🐇', '\u0000'];

/** A random UTF-8 string of at most `maxBytes` bytes. */
export function randomString(rng: () => number, maxBytes: number): string {
  const target = int(rng, 0, Math.min(maxBytes, 40));
  let s = '';
  for (;;) {
    const next = s + (ALPHABET[int(rng, 0, ALPHABET.length - 1)] as string);
    if (Buffer.byteLength(next) > target) return s;
    s = next;
  }
}

/** Random bytes. */
export function randomBytes(rng: () => number, max: number): Buffer {
  const b = Buffer.alloc(int(rng, 0, max));
  for (let i = 0; i < b.length; i++) b[i] = int(rng, 0, 255);
  return b;
}

function randomSafeInt64(rng: () => number): number {
  const v =
    int(rng, 0, 2) === 0 ? int(rng, -1000, 1000) : Math.floor((rng() * 2 - 1) * Number.MAX_SAFE_INTEGER);
  return v === 0 ? 0 : v; // never -0
}

/** The field value kinds that survive an AMQP round trip unchanged. */
export const ROUND_TRIP_KINDS = [
  'bool',
  'i8',
  'u8',
  'i16',
  'u16',
  'i32',
  'u32',
  'i64',
  'f32',
  'f64',
  'decimal',
  'longStr',
  'byteArray',
  'timestamp',
  'array',
  'table',
  'void',
] as const;

/** A random field value of `kind` (containers hold random values, nesting at most `depth` more). */
export function randomFieldValueOf(
  rng: () => number,
  kind: (typeof ROUND_TRIP_KINDS)[number],
  depth: number,
): FieldValue {
  switch (kind) {
    case 'bool':
      return { bool: rng() < 0.5 };
    case 'i8':
      return { i8: int(rng, -128, 127) };
    case 'u8':
      return { u8: int(rng, 0, 255) };
    case 'i16':
      return { i16: int(rng, -32768, 32767) };
    case 'u16':
      return { u16: int(rng, 0, 65535) };
    case 'i32':
      return { i32: int(rng, -0x8000_0000, 0x7fff_ffff) };
    case 'u32':
      return { u32: int(rng, 0, 0xffff_ffff) };
    case 'i64':
      return { i64: randomSafeInt64(rng) };
    case 'f32':
      return { f32: Math.fround((rng() - 0.5) * 1e6) };
    case 'f64':
      return { f64: (rng() - 0.5) * 1e12 };
    case 'decimal':
      return { decimal: { scale: int(rng, 0, 255), value: int(rng, 0, 0x7fff_ffff) } };
    case 'longStr':
      return { longStr: randomString(rng, 300) };
    case 'byteArray':
      return { byteArray: randomBytes(rng, 20) };
    case 'timestamp':
      return { timestamp: int(rng, 0, 2 ** 40) };
    case 'array': {
      const values: FieldValue[] = [];
      const n = depth > 0 ? int(rng, 0, 4) : 0;
      for (let i = 0; i < n; i++) values.push(randomFieldValue(rng, depth - 1));
      return { array: { values } };
    }
    case 'table':
      return { table: randomFieldTable(rng, depth - 1) };
    case 'void':
      return { void: {} };
  }
}

/** A random field value of any round-trip kind. */
export function randomFieldValue(rng: () => number, depth: number): FieldValue {
  const kinds = depth > 0 ? ROUND_TRIP_KINDS : ROUND_TRIP_KINDS.filter((k) => k !== 'array' && k !== 'table');
  return randomFieldValueOf(
    rng,
    kinds[int(rng, 0, kinds.length - 1)] as (typeof ROUND_TRIP_KINDS)[number],
    depth,
  );
}

/** A random field table (distinct keys, as amqplib's objects can only carry). */
export function randomFieldTable(rng: () => number, depth = 2): FieldTable {
  const entries: FieldTable['entries'] = [];
  const n = depth >= 0 ? int(rng, 0, 5) : 0;
  const keys = new Set<string>();
  for (let i = 0; i < n; i++) {
    const key = `${randomString(rng, 20)}#${i}`;
    if (keys.has(key)) continue;
    keys.add(key);
    entries.push({ key, value: randomFieldValue(rng, Math.max(depth, 0)) });
  }
  return { entries };
}

/** A random value for one method field. */
export function randomFieldArg(rng: () => number, f: FieldDef): unknown {
  switch (f.type) {
    case 'octet':
      return int(rng, 0, 255);
    case 'short':
      return int(rng, 0, 65535);
    case 'long':
      return int(rng, 0, 0xffff_ffff);
    case 'longlong':
    case 'timestamp':
      return int(rng, 0, 3) === 0 ? Number.MAX_SAFE_INTEGER - int(rng, 0, 9) : int(rng, 0, 2 ** 40);
    case 'shortstr':
      return randomString(rng, 255);
    case 'longstr':
      return randomBytes(rng, 64);
    case 'bit':
      return rng() < 0.5;
    case 'table':
      return randomFieldTable(rng, 2);
  }
}

/** Random fields for every argument of a method. */
export function randomArgs(rng: () => number, def: MethodDef): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const f of def.fields) args[f.key] = randomFieldArg(rng, f);
  return args;
}

/** Random basic properties: each of the 14 present or not. */
export function randomProperties(rng: () => number): BasicProperties {
  const p: BasicProperties = {};
  const s = (): string => randomString(rng, 255);
  if (rng() < 0.5) p.contentType = s();
  if (rng() < 0.5) p.contentEncoding = s();
  if (rng() < 0.5) p.headers = randomFieldTable(rng, 2);
  if (rng() < 0.5) p.deliveryMode = int(rng, 0, 255);
  if (rng() < 0.5) p.priority = int(rng, 0, 255);
  if (rng() < 0.5) p.correlationId = s();
  if (rng() < 0.5) p.replyTo = s();
  if (rng() < 0.5) p.expiration = s();
  if (rng() < 0.5) p.messageId = s();
  if (rng() < 0.5) p.timestamp = int(rng, 0, 2 ** 40);
  if (rng() < 0.5) p.type = s();
  if (rng() < 0.5) p.userId = s();
  if (rng() < 0.5) p.appId = s();
  if (rng() < 0.5) p.clusterId = s();
  return p;
}
