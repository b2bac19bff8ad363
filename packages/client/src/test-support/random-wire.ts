// Test support: seeded random wire values (strings, delivery tags, bodies, field tables, properties),
// for the property-style tests that compare the hand-written codecs with protobufjs. Seeded, so a
// failure reproduces.
import type { BasicProperties, FieldTable, FieldValue } from '../wire/types.ts';

/** A source of uniform numbers in [0, 1). */
export type Rand = () => number;

/** mulberry32: a small seeded generator. */
export function rng(seed: number): Rand {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A whole number in [0, n). */
export function int(r: Rand, n: number): number {
  return Math.floor(r() * n);
}

export function pick<T>(r: Rand, items: readonly T[]): T {
  return items[int(r, items.length)] as T;
}

// One to four UTF-8 bytes each, NUL and the boundaries of each length included.
const CHARS = [
  'a',
  'Z',
  '0',
  '.',
  '-',
  ' ',
  '\u0000',
  '\u007f',
  '\u0080',
  'é',
  'ß',
  '\u07ff',
  '\u0800',
  '✓',
  '中',
  '\uffff',
];
const ASTRAL = ['😀', '𝄞', '\u{10ffff}'];

/** A well-formed string (no lone surrogate): empty, short, or long enough for TextEncoder/TextDecoder. */
export function randomString(r: Rand): string {
  const length = pick(r, [0, 0, 1, 3, 12, 31, 39, 40, 64, 65, 200]);
  let s = '';
  for (let i = 0; i < length; i++) s += r() < 0.1 ? pick(r, ASTRAL) : r() < 0.7 ? 'q' : pick(r, CHARS);
  return s;
}

/** Delivery tags at the varint and 32-bit boundaries, up to 2^53 - 1. */
export const EDGE_TAGS: readonly number[] = [
  0,
  1,
  127,
  128,
  16383,
  16384,
  2 ** 31 - 1,
  2 ** 31,
  2 ** 32 - 1,
  2 ** 32,
  2 ** 35 + 7,
  2 ** 49,
  2 ** 53 - 1,
];

export function randomTag(r: Rand): number {
  return r() < 0.5 ? pick(r, EDGE_TAGS) : int(r, Number.MAX_SAFE_INTEGER);
}

/** Empty, small, at the 1- and 2-byte length boundaries, 1 KiB, and now and then 70,000 bytes. */
export function randomBody(r: Rand): Uint8Array {
  const length = pick(r, [0, 0, 1, 5, 127, 128, 1024, r() < 0.1 ? 70_000 : 16]);
  const body = new Uint8Array(length);
  for (let i = 0; i < length; i++) body[i] = int(r, 256);
  return body;
}

const INT64_EDGES = [0, 1, -1, 2 ** 31, -(2 ** 31) - 1, 2 ** 32, -(2 ** 32), 2 ** 53 - 1, -(2 ** 53 - 1)];
const FLOAT_EDGES = [
  0,
  -0,
  1.5,
  -1.5,
  Math.PI,
  1e300,
  -1e-300,
  Number.MIN_VALUE,
  Infinity,
  -Infinity,
  Number.NaN,
];

/** A field value of any of the 19 kinds, with edge values; tables and arrays nest up to `depth` 4. */
export function randomFieldValue(r: Rand, depth = 0): FieldValue {
  switch (int(r, depth >= 4 ? 16 : 19)) {
    case 0:
      return { i8: pick(r, [-128, -1, 0, 1, 127]) };
    case 1:
      return { u8: pick(r, [0, 1, 255]) };
    case 2:
      return { i16: pick(r, [-32768, 0, 32767, int(r, 65536) - 32768]) };
    case 3:
      return { u16: pick(r, [0, 65535, int(r, 65536)]) };
    case 4:
      return { i32: pick(r, [-2147483648, -1, 0, 2147483647, int(r, 2 ** 32) - 2 ** 31]) };
    case 5:
      return { u32: pick(r, [0, 4294967295, int(r, 2 ** 32)]) };
    case 6:
      return { i64: r() < 0.5 ? pick(r, INT64_EDGES) : int(r, 2 ** 53) - 2 ** 52 };
    case 7:
      return { u64: r() < 0.5 ? pick(r, EDGE_TAGS) : int(r, 2 ** 53) };
    case 8:
      return { f32: pick(r, [0, -0, 1.5, -2.25, 3.4028234663852886e38, Infinity, Number.NaN]) };
    case 9:
      return { f64: r() < 0.5 ? pick(r, FLOAT_EDGES) : r() * 1e9 - 5e8 };
    case 10:
      return {
        decimal: { scale: pick(r, [0, 2, 255]), value: pick(r, [0, -12345, 2147483647, -2147483648]) },
      };
    case 11:
      return { shortStr: randomString(r) };
    case 12:
      return { longStr: randomString(r) };
    case 13:
      return { bool: r() < 0.5 };
    case 14:
      return { timestamp: pick(r, [0, 1_700_000_000, 2 ** 40, 2 ** 53 - 1]) };
    case 15:
      return { byteArray: randomBody(r).subarray(0, pick(r, [0, 1, 8, 200])) };
    case 16:
      return { array: { values: Array.from({ length: int(r, 4) }, () => randomFieldValue(r, depth + 1)) } };
    case 17:
      return { table: randomTable(r, depth + 1) };
    default:
      return { void: {} };
  }
}

/** A table of up to 4 entries (keys may be empty or repeat). */
export function randomTable(r: Rand, depth = 0): FieldTable {
  return {
    entries: Array.from({ length: int(r, 5) }, () => ({
      key: r() < 0.1 ? 'dup' : randomString(r),
      value: randomFieldValue(r, depth),
    })),
  };
}

/** An x-death header as RabbitMQ writes it: an array of tables. */
export function xDeath(r: Rand): FieldTable {
  const deaths = Array.from({ length: 1 + int(r, 3) }, (_, i) => ({
    table: {
      entries: [
        { key: 'count', value: { i64: 1 + i } },
        { key: 'reason', value: { longStr: pick(r, ['rejected', 'expired', 'maxlen']) } },
        { key: 'queue', value: { longStr: randomString(r) } },
        { key: 'time', value: { timestamp: 1_700_000_000 + i } },
        { key: 'exchange', value: { longStr: '' } },
        { key: 'routing-keys', value: { array: { values: [{ longStr: randomString(r) }] } } },
      ],
    },
  }));
  return { entries: [{ key: 'x-death', value: { array: { values: deaths } } }] };
}

/** Properties as a publisher sets them: any subset, zero and empty values included; undefined now and then. */
export function randomProperties(r: Rand): BasicProperties | undefined {
  if (r() < 0.15) return undefined;
  const p: BasicProperties = {};
  const s = (): string => randomString(r);
  if (r() < 0.5) p.contentType = s();
  if (r() < 0.2) p.contentEncoding = s();
  const headers = r();
  if (headers < 0.3) p.headers = xDeath(r);
  else if (headers < 0.5) p.headers = randomTable(r);
  else if (headers < 0.6) p.headers = { entries: [] };
  if (r() < 0.5) p.deliveryMode = pick(r, [0, 1, 2]);
  if (r() < 0.2) p.priority = pick(r, [0, 9, 255, 2 ** 32 - 1]);
  if (r() < 0.2) p.correlationId = s();
  if (r() < 0.2) p.replyTo = s();
  if (r() < 0.2) p.expiration = String(int(r, 100_000));
  if (r() < 0.2) p.messageId = s();
  if (r() < 0.2) p.timestamp = pick(r, [0, 1_700_000_000, 2 ** 40, 2 ** 53 - 1]);
  if (r() < 0.1) p.type = s();
  if (r() < 0.1) p.userId = s();
  if (r() < 0.1) p.appId = s();
  if (r() < 0.1) p.clusterId = s();
  return p;
}
