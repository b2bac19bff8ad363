// The hand-written BasicProperties codec against protobufjs, its oracle: the same bytes for the same
// objects, and, from the same bytes, the same objects (instances of the same message types, the same own
// keys, the same values) or a failure where protobufjs fails.
import { describe, expect, it } from 'vitest';
import {
  int,
  pick,
  type Rand,
  randomFieldValue,
  randomProperties,
  randomString,
  randomTable,
  rng,
  xDeath,
} from '../test-support/random-wire.ts';
import { wireShape } from '../test-support/wire-shape.ts';
import { decodeProperties, encodeProperties } from './codec.ts';
import { createNumberReader } from './number-reader.ts';
import { PropertiesType } from './schema.ts';
import type { BasicProperties, FieldTable, FieldValue } from './types.ts';
import { WireError } from './wire-error.ts';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

type Outcome<T> = { value: T } | { error: unknown };

function attempt<T>(fn: () => T): Outcome<T> {
  try {
    return { value: fn() };
  } catch (error) {
    return { error };
  }
}

/** encodeProperties writes what protobufjs writes for `p`, or fails where it fails. */
function expectSameEncoding(p: BasicProperties): void {
  const oracle = attempt(() => hex(PropertiesType.encode(p).finish()));
  const ours = attempt(() => hex(encodeProperties(p)));
  if ('error' in oracle) expect('error' in ours).toBe(true);
  else expect(ours).toEqual(oracle);
}

/** decodeProperties builds what protobufjs builds from `bytes`, or fails (502) where it fails. */
function expectSameDecoding(bytes: Uint8Array): boolean {
  const oracle = attempt(() => wireShape(PropertiesType.decode(createNumberReader(bytes))));
  const ours = attempt(() => wireShape(decodeProperties(bytes)));
  if ('error' in oracle) {
    if (!('error' in ours))
      throw new Error(`protobufjs fails (${String(oracle.error)}) but decodeProperties does not`);
    expect(ours.error).toBeInstanceOf(WireError);
    expect((ours.error as WireError).code).toBe(502);
    return false;
  }
  if ('error' in ours)
    throw new Error(`decodeProperties fails (${String(ours.error)}) but protobufjs does not`);
  expect(ours.value).toEqual(oracle.value);
  return true;
}

function richProperties(r: Rand): BasicProperties {
  const p = randomProperties(r) ?? {};
  if (r() < 0.5) p.headers = randomTable(r);
  return p;
}

// ---------------------------------------------------------------- raw protobuf for hand-made inputs

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function key(field: number, wireType: number): number[] {
  return varint(field * 8 + wireType);
}

function len(field: number, content: number[]): number[] {
  return [...key(field, 2), ...varint(content.length), ...content];
}

/** Properties { headers: { entries: [{ key: 'k', value: <value bytes> }] } }. */
function headerWith(value: number[]): Uint8Array {
  return new Uint8Array(len(3, len(1, [...len(1, [0x6b]), ...len(2, value)])));
}

describe('encodeProperties (hand-written)', () => {
  it('writes the bytes protobufjs writes for random properties, every field value kind included', () => {
    const r = rng(11);
    for (let n = 0; n < 1500; n++) expectSameEncoding(richProperties(r));
  });

  it('writes the bytes protobufjs writes for decoded instances (re-encoding what was received)', () => {
    const r = rng(12);
    for (let n = 0; n < 300; n++) {
      const decoded = PropertiesType.decode(PropertiesType.encode(richProperties(r)).finish());
      expectSameEncoding(decoded as unknown as BasicProperties);
    }
  });

  it('writes what protobufjs writes for hand-built oddities', () => {
    const inherited = Object.create({ contentType: 'from the prototype', priority: 3 }) as BasicProperties;
    inherited.appId = 'own';
    const cases: BasicProperties[] = [
      {},
      { contentType: '', priority: 0, timestamp: 0, deliveryMode: 0 },
      { contentType: null, headers: null, timestamp: undefined },
      inherited,
      { headers: { entries: [] } },
      { headers: {} as FieldTable },
      { headers: { entries: [{ key: '', value: { i8: 0 } }] } },
      { headers: { entries: [{ key: 'no value' } as unknown as FieldTable['entries'][number]] } },
      // A hand-built value with two members: protobufjs writes both, in field order.
      { headers: { entries: [{ key: 'k', value: { longStr: 'x', i8: -1 } as unknown as FieldValue }] } },
      {
        headers: {
          entries: [{ key: 'k', value: { i8: null, u8: 7, extra: 'not a member' } as unknown as FieldValue }],
        },
      },
      { headers: { entries: [{ key: 'k', value: {} as FieldValue }] } },
      { headers: { entries: [{ key: 'd', value: { decimal: { scale: 0, value: 0 } } }] } },
      { headers: { entries: [{ key: 'd', value: { decimal: {} as never } }] } },
      { headers: { entries: [{ key: 'v', value: { void: { ignored: 1 } as never } }] } },
      { headers: { entries: [{ key: 'a', value: { array: {} as never } }] } },
      // JavaScript types protobufjs coerces its own ways: handed to protobufjs.
      { deliveryMode: '2' as unknown as number },
      { contentType: 5 as unknown as string },
      { timestamp: '12' as unknown as number },
      { headers: { entries: [{ key: 'b', value: { byteArray: 'AAEC' as unknown as Uint8Array } }] } },
      { headers: { entries: [{ key: 'b', value: { bool: 1 as unknown as boolean } }] } },
      { headers: { entries: [{ key: 'n', value: { i32: '7' as unknown as number } }] } },
      { headers: { entries: [{ key: 'n', value: { i64: 1.5 } }] } },
      { headers: { entries: [{ key: 'n', value: { u32: -1 } }] } },
      { headers: { entries: [{ key: 'n', value: { u64: -1 } }] } },
      { headers: { entries: [{ key: 'n', value: { f32: 1e40 } }] } },
      { headers: { entries: [null as never] } },
    ];
    for (const p of cases) expectSameEncoding(p);
  });

  it('fails where protobufjs fails: tables nested past its recursion limit', () => {
    const nested = (levels: number): BasicProperties => {
      let value: FieldValue = { void: {} };
      for (let i = 0; i < levels; i++) value = { table: { entries: [{ key: 'k', value }] } };
      return { headers: { entries: [{ key: 'k', value }] } };
    };
    let outcomes = 0;
    for (let levels = 28; levels <= 34; levels++) {
      expectSameEncoding(nested(levels));
      outcomes |= 'error' in attempt(() => encodeProperties(nested(levels))) ? 1 : 2;
    }
    expect(outcomes).toBe(3);
  });

  it('writes a lone surrogate as U+FFFD, so the bytes decode (protobufjs would write undecodable ones)', () => {
    const short = {
      contentType: 'a\ud800b',
      headers: { entries: [{ key: '\udc00', value: { longStr: 'x\ud83d' } }] },
    };
    const decoded = decodeProperties(encodeProperties(short));
    expect(decoded.contentType).toBe('a\ufffdb');
    expect(decoded.headers?.entries[0]?.key).toBe('\ufffd');
    expect(decoded.headers?.entries[0]?.value.longStr).toBe('x\ufffd');
    // From 40 characters on, protobufjs under Node writes them the same way.
    const long = {
      contentType: `${'x'.repeat(70)}\ud800${'y'.repeat(10)}`,
      messageId: `${'m'.repeat(45)}\udfff`,
    };
    expect(hex(encodeProperties(long))).toBe(hex(PropertiesType.encode(long).finish()));
  });
});

describe('decodeProperties (hand-written)', () => {
  it('builds what protobufjs builds for random properties, from Buffers and Uint8Arrays', () => {
    const r = rng(13);
    for (let n = 0; n < 1000; n++) {
      const bytes = PropertiesType.encode(richProperties(r)).finish();
      expectSameDecoding(Buffer.from(bytes));
      expectSameDecoding(new Uint8Array(bytes));
    }
  });

  it('agrees with protobufjs on properties cut at every offset and on random mutations', () => {
    const r = rng(14);
    const sample = PropertiesType.encode({
      contentType: 'application/json',
      headers: { entries: [...xDeath(r).entries, ...randomTable(r).entries] },
      deliveryMode: 2,
      timestamp: 2 ** 40,
      correlationId: 'é✓',
    }).finish();
    for (let cut = 0; cut <= sample.length; cut++) expectSameDecoding(sample.subarray(0, cut));
    for (let n = 0; n < 4000; n++) {
      const bytes = Array.from(sample);
      for (let k = 1 + int(r, 3); k > 0; k--) {
        const at = int(r, bytes.length);
        const what = int(r, 3);
        if (what === 0) bytes[at] = int(r, 256);
        else if (what === 1) bytes.splice(at, 0, int(r, 256));
        else bytes.splice(at, 1);
      }
      expectSameDecoding(new Uint8Array(bytes));
    }
  });

  it('agrees with protobufjs on each field value member with every wire type', () => {
    const payloads: Record<number, number[]> = {
      0: [0xfe, 0xff, 0xff, 0xff, 0x0f],
      1: [1, 2, 3, 4, 5, 6, 0xf0, 0x7f],
      2: [0x03, 0x08, 0x05, 0x10],
      3: [...key(1, 0), 0x01, ...key(0, 4)],
      5: [0x00, 0x00, 0x80, 0x7f],
    };
    let decoded = 0;
    for (let field = 0; field <= 21; field++) {
      for (const wireType of [0, 1, 2, 3, 5]) {
        const group =
          wireType === 3 ? [...key(1, 0), 0x01, ...key(field, 4)] : (payloads[wireType] as number[]);
        if (expectSameDecoding(headerWith([...key(field, wireType), ...group]))) decoded++;
      }
    }
    expect(decoded).toBeGreaterThan(50);
  });

  it('agrees with protobufjs on repeated fields: members switching, messages merging', () => {
    const cases: number[][] = [
      // i8 then longStr then i8 in one value: the last member wins, alone.
      [...key(1, 0), 0x03, ...len(13, [0x61]), ...key(1, 0), 0x05],
      // table twice (merged: entries appended), then array, then table again (fresh).
      [...len(17, len(1, len(1, [0x61]))), ...len(17, len(1, len(1, [0x62])))],
      [...len(17, len(1, len(1, [0x61]))), ...len(16, []), ...len(17, len(1, len(1, [0x62])))],
      // decimal twice: scale from the first, value from the second; then a zero scale clears it.
      [...len(11, [0x08, 0x02]), ...len(11, [0x10, 0x03])],
      [...len(11, [0x08, 0x02, 0x10, 0x03]), ...len(11, [0x08, 0x00])],
      // void twice, byteArray empty, strings empty.
      [...len(19, []), ...len(19, [0x08, 0x01])],
      [...len(18, [])],
      [...len(12, [])],
    ];
    for (const value of cases) expect(expectSameDecoding(headerWith(value))).toBe(true);
    // Properties: headers twice (merged), a scalar twice, an entry's value twice, an empty key after a key.
    const entry = (k: number[], v: number[]): number[] => len(1, [...len(1, k), ...len(2, v)]);
    const more: number[][] = [
      [...len(3, entry([0x61], [0x08, 0x01])), ...len(3, entry([0x62], [0x10, 0x01]))],
      [...key(4, 0), 0x01, ...key(4, 0), 0x02, ...len(1, [0x61]), ...len(1, [])],
      [
        ...len(
          3,
          len(1, [...len(1, [0x61]), ...len(2, [0x08, 0x01]), ...len(2, [0x70, 0x01]), ...len(1, [])]),
        ),
      ],
    ];
    for (const bytes of more) expect(expectSameDecoding(new Uint8Array(bytes))).toBe(true);
  });

  it('agrees with protobufjs on unknown fields, groups, field number 0 and bad UTF-8 at every level', () => {
    const unknown = [
      [...key(99, 0), 0x80, 0x01],
      [...key(99, 1), 1, 2, 3, 4, 5, 6, 7, 8],
      [...key(99, 2), 0x01, 0x00],
      [...key(99, 5), 1, 2, 3, 4],
      [...key(99, 3), ...key(1, 0), 0x05, ...key(99, 4)],
      [...key(99, 3), ...key(98, 4)],
      [...key(99, 4)],
      [...key(0, 0), 0x00],
      [...key(99, 7)],
    ];
    const badUtf8 = [0xc3, 0x28];
    for (const u of unknown) {
      expectSameDecoding(new Uint8Array([...u, ...len(1, [0x61])]));
      expectSameDecoding(new Uint8Array(len(3, [...u, ...len(1, len(1, [0x61]))])));
      expectSameDecoding(new Uint8Array(len(3, len(1, [...u, ...len(1, [0x61])]))));
      expectSameDecoding(headerWith([...u, ...key(1, 0), 0x01]));
      expectSameDecoding(headerWith(len(16, [...u, ...len(1, [0x08, 0x02])])));
      expectSameDecoding(headerWith(len(11, [...u, 0x08, 0x02])));
      expectSameDecoding(headerWith(len(19, u)));
    }
    expect(expectSameDecoding(new Uint8Array(len(1, badUtf8)))).toBe(false);
    expect(expectSameDecoding(new Uint8Array(len(3, len(1, len(1, badUtf8)))))).toBe(false);
    expect(expectSameDecoding(headerWith(len(13, badUtf8)))).toBe(false);
  });

  it('agrees with protobufjs on nesting around its recursion limit', () => {
    let outcomes = 0;
    for (let levels = 28; levels <= 34; levels++) {
      let value = len(19, []);
      for (let i = 0; i < levels; i++) value = len(17, len(1, [...len(1, [0x6b]), ...len(2, value)]));
      outcomes |= expectSameDecoding(headerWith(value)) ? 2 : 1;
      let array = len(13, [0x61]);
      for (let i = 0; i < levels * 2; i++) array = len(16, len(1, array));
      expectSameDecoding(headerWith(array));
    }
    expect(outcomes).toBe(3);
  });

  it('round-trips every field value kind through encodeProperties and decodeProperties', () => {
    const r = rng(15);
    for (let n = 0; n < 500; n++) {
      const value = randomFieldValue(r);
      const p: BasicProperties = {
        headers: { entries: [{ key: randomString(r), value }] },
        priority: pick(r, [0, 5]),
      };
      const bytes = encodeProperties(p);
      expect(hex(bytes)).toBe(hex(PropertiesType.encode(p).finish()));
      expectSameDecoding(bytes);
    }
  });
});
