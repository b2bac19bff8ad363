import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { fieldTableToJs, fieldValueToJs, jsToFieldTable, jsToFieldValue } from './field-js.ts';
import { fieldValuePayload, requireFieldValueKind } from './field-table.ts';
import type { FieldTable, FieldValue } from './types.ts';

// amqplib's own codec is the oracle for its inference rules and decoded shapes (the test workspace
// package depends on amqplib 0.10).
const requireFromTests = createRequire(new URL('../../../../test/package.json', import.meta.url));
const amqplibCodec = requireFromTests('amqplib/lib/codec.js') as {
  encodeTable(buffer: Buffer, value: unknown, offset: number): number;
  decodeFields(slice: Buffer): Record<string, unknown>;
};

/** `{ kind: payload }`, recursively, with tables as [key, value] pairs in order. */
function typed(v: FieldValue): unknown {
  const kind = requireFieldValueKind(v);
  switch (kind) {
    case 'array':
      return { array: fieldValuePayload(v, kind).values.map(typed) };
    case 'table':
      return { table: typedTable(fieldValuePayload(v, kind)) };
    case 'byteArray':
      return { byteArray: Array.from(fieldValuePayload(v, kind)) };
    case 'void':
      return { void: null };
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return { decimal: { scale: d.scale, value: d.value } };
    }
    default:
      return { [kind]: fieldValuePayload(v, kind) };
  }
}

function typedTable(t: FieldTable): unknown[] {
  return t.entries.map((e) => [e.key, typed(e.value)]);
}

const TAG_KINDS: Record<string, string> = {
  b: 'i8',
  B: 'u8',
  s: 'i16',
  u: 'u16',
  I: 'i32',
  i: 'u32',
  l: 'i64',
  f: 'f32',
  d: 'f64',
  S: 'longStr',
  t: 'bool',
  T: 'timestamp',
  x: 'byteArray',
  V: 'void',
};

/** Parses the AMQP table bytes amqplib wrote into the same typed picture. */
function parseAmqpTable(buf: Buffer, start: number, end: number): unknown[] {
  const out: unknown[] = [];
  let pos = start;
  while (pos < end) {
    const keyLength = buf.readUInt8(pos);
    const key = buf.toString('utf8', pos + 1, pos + 1 + keyLength);
    pos += 1 + keyLength;
    const [value, next] = parseAmqpValue(buf, pos);
    out.push([key, value]);
    pos = next;
  }
  return out;
}

function parseAmqpValue(buf: Buffer, pos: number): [unknown, number] {
  const tag = String.fromCharCode(buf.readUInt8(pos));
  pos += 1;
  const kind = TAG_KINDS[tag];
  switch (tag) {
    case 'b':
      return [{ i8: buf.readInt8(pos) }, pos + 1];
    case 'B':
      return [{ u8: buf.readUInt8(pos) }, pos + 1];
    case 's':
      return [{ i16: buf.readInt16BE(pos) }, pos + 2];
    case 'u':
      return [{ u16: buf.readUInt16BE(pos) }, pos + 2];
    case 'I':
      return [{ i32: buf.readInt32BE(pos) }, pos + 4];
    case 'i':
      return [{ u32: buf.readUInt32BE(pos) }, pos + 4];
    case 'l':
      return [{ i64: Number(buf.readBigInt64BE(pos)) }, pos + 8];
    case 'T':
      return [{ timestamp: Number(buf.readBigUInt64BE(pos)) }, pos + 8];
    case 'f':
      return [{ f32: buf.readFloatBE(pos) }, pos + 4];
    case 'd':
      return [{ f64: buf.readDoubleBE(pos) }, pos + 8];
    case 'D':
      return [{ decimal: { scale: buf.readUInt8(pos), value: buf.readUInt32BE(pos + 1) } }, pos + 5];
    case 't':
      return [{ bool: buf.readUInt8(pos) !== 0 }, pos + 1];
    case 'V':
      return [{ void: null }, pos];
    case 'S':
    case 'x': {
      const length = buf.readUInt32BE(pos);
      const body = buf.subarray(pos + 4, pos + 4 + length);
      const value = tag === 'S' ? body.toString('utf8') : Array.from(body);
      return [{ [kind as string]: value }, pos + 4 + length];
    }
    case 'A': {
      const end = pos + 4 + buf.readUInt32BE(pos);
      const values: unknown[] = [];
      pos += 4;
      while (pos < end) {
        const [value, next] = parseAmqpValue(buf, pos);
        values.push(value);
        pos = next;
      }
      return [{ array: values }, end];
    }
    case 'F': {
      const end = pos + 4 + buf.readUInt32BE(pos);
      return [{ table: parseAmqpTable(buf, pos + 4, end) }, end];
    }
    default:
      throw new Error(`unexpected tag ${tag}`);
  }
}

function amqplibTyped(obj: Record<string, unknown>): unknown[] {
  const buf = Buffer.alloc(65536);
  const size = amqplibCodec.encodeTable(buf, obj, 0);
  return parseAmqpTable(buf, 4, size);
}

function amqplibRoundTrip(obj: Record<string, unknown>): Record<string, unknown> {
  const buf = Buffer.alloc(65536);
  const size = amqplibCodec.encodeTable(buf, obj, 0);
  return amqplibCodec.decodeFields(buf.subarray(4, size));
}

// Values covering every inference branch and every explicit type name amqplib knows.
const SAMPLES: Record<string, unknown> = {
  zero: 0,
  negativeZero: -0,
  byteMax: 127,
  byteMin: -128,
  shortLow: 128,
  shortMin: -129,
  shortMax: 32767,
  intLow: 32768,
  intMin: -(2 ** 31),
  intMax: 2 ** 31 - 1,
  longLow: 2 ** 31,
  longNeg: -(2 ** 31) - 1,
  longBig: 2 ** 52 + 1,
  fraction: 1.5,
  negativeFraction: -0.25,
  hugeInteger: 2 ** 50,
  string: 'héllo',
  emptyString: '',
  yes: true,
  no: false,
  nothing: null,
  buffer: Buffer.from([1, 2, 3]),
  array: [1, 'two', [3.5, null], { nested: true }],
  object: { b: 1, a: { deep: 'x' } },
  typedDouble: { '!': 'double', value: 2 },
  typedFloat64: { '!': 'float64', value: 3 },
  typedFloat: { '!': 'float', value: 1.25 },
  typedByte: { '!': 'byte', value: -5 },
  typedInt8: { '!': 'int8', value: 5 },
  typedUnsignedByte: { '!': 'unsignedbyte', value: 200 },
  typedUint8: { '!': 'uint8', value: 201 },
  typedShort: { '!': 'short', value: -300 },
  typedInt16: { '!': 'int16', value: 300 },
  typedUnsignedShort: { '!': 'unsignedshort', value: 60000 },
  typedUint16: { '!': 'uint16', value: 60001 },
  typedInt: { '!': 'int', value: 1 },
  typedInt32: { '!': 'int32', value: -1 },
  typedUnsignedInt: { '!': 'unsignedint', value: 4000000000 },
  typedUint32: { '!': 'uint32', value: 4000000001 },
  typedLong: { '!': 'long', value: 1 },
  typedInt64: { '!': 'int64', value: -(2 ** 40) },
  typedTimestamp: { '!': 'timestamp', value: 1795308382 },
  typedDecimal: { '!': 'decimal', value: { places: 2, digits: 12345 } },
  typedString: { '!': 'string', value: 'typed' },
  typedBoolean: { '!': 'boolean', value: true },
  typedNumber: { '!': 'number', value: 70000 },
  skipped: undefined,
};

describe('jsToFieldTable (amqplib inference)', () => {
  it('picks the same types as amqplib for every sample', () => {
    expect(typedTable(jsToFieldTable(SAMPLES))).toEqual(amqplibTyped(SAMPLES));
  });

  it('converts back to what amqplib decodes', () => {
    const withoutBuffers = { ...SAMPLES, buffer: undefined };
    expect(fieldTableToJs(jsToFieldTable(withoutBuffers))).toEqual(amqplibRoundTrip(withoutBuffers));
    expect(fieldTableToJs(jsToFieldTable({ b: Buffer.from('ab') })).b).toEqual(Buffer.from('ab'));
  });

  it('includes inherited enumerable keys after own ones, as amqplib does', () => {
    const base = { inherited: 1, shadowed: 2 };
    const obj = Object.create(base) as Record<string, unknown>;
    obj.own = 'x';
    obj.shadowed = 3;
    expect(typedTable(jsToFieldTable(obj))).toEqual(amqplibTyped(obj));
    expect(jsToFieldTable(obj).entries.map((e) => e.key)).toEqual(['own', 'shadowed', 'inherited']);
  });

  it('treats any Uint8Array as a byte array', () => {
    expect(typed(jsToFieldValue(new Uint8Array([4, 5])))).toEqual({ byteArray: [4, 5] });
  });

  it('makes NaN, infinities and integers beyond 2^63 doubles', () => {
    for (const n of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 2 ** 63, -(2 ** 64)]) {
      expect(requireFieldValueKind(jsToFieldValue(n))).toBe('f64');
    }
  });

  it('supports uint64 explicitly', () => {
    expect(typed(jsToFieldValue({ '!': 'uint64', value: 2 ** 53 - 1 }))).toEqual({ u64: 2 ** 53 - 1 });
  });

  it('an empty or missing object is an empty table', () => {
    expect(jsToFieldTable({})).toEqual({ entries: [] });
    expect(jsToFieldTable(undefined)).toEqual({ entries: [] });
  });

  it('throws TypeError for what amqplib cannot encode', () => {
    for (const bad of [
      undefined,
      () => 1,
      Symbol('s'),
      10n,
      { '!': 'nonsense', value: 1 },
      { '!': 'string', value: 5 },
    ]) {
      expect(() => jsToFieldValue(bad)).toThrow(TypeError);
    }
    expect(() => jsToFieldValue([1, undefined])).toThrow(TypeError);
    expect(() => jsToFieldValue({ '!': 'decimal', value: { places: 300, digits: 1 } })).toThrow(TypeError);
    expect(() => jsToFieldValue({ '!': 'decimal', value: { digits: 1 } })).toThrow(TypeError);
  });

  it('throws RangeError for values outside their explicit type', () => {
    const bad: [string, number][] = [
      ['byte', 128],
      ['int8', -129],
      ['uint8', -1],
      ['unsignedbyte', 256],
      ['short', 32768],
      ['uint16', 65536],
      ['int', 2 ** 31],
      ['uint32', 2 ** 32],
      ['long', 1.5],
      ['timestamp', -1],
    ];
    for (const [type, value] of bad) expect(() => jsToFieldValue({ '!': type, value })).toThrow(RangeError);
    expect(() => jsToFieldValue({ '!': 'decimal', value: { places: 1, digits: 2 ** 31 } })).toThrow(
      RangeError,
    );
  });

  it('refuses keys longer than 255 UTF-8 bytes', () => {
    expect(() => jsToFieldTable({ ['é'.repeat(128)]: 1 })).toThrow(RangeError);
    expect(jsToFieldTable({ ['é'.repeat(127)]: 1 }).entries).toHaveLength(1);
  });
});

describe('fieldValueToJs / fieldTableToJs (amqplib decoded shapes)', () => {
  it('converts each type to what amqplib decodes', () => {
    const table: FieldTable = {
      entries: [
        { key: 'i8', value: { i8: -1 } },
        { key: 'u8', value: { u8: 255 } },
        { key: 'i16', value: { i16: -2 } },
        { key: 'u16', value: { u16: 2 } },
        { key: 'i32', value: { i32: -3 } },
        { key: 'u32', value: { u32: 3 } },
        { key: 'i64', value: { i64: -(2 ** 40) } },
        { key: 'u64', value: { u64: 2 ** 40 } },
        { key: 'f32', value: { f32: 0.5 } },
        { key: 'f64', value: { f64: 0.1 } },
        { key: 'decimal', value: { decimal: { scale: 3, value: 1234 } } },
        { key: 'shortStr', value: { shortStr: 's' } },
        { key: 'longStr', value: { longStr: 'l' } },
        { key: 'bool', value: { bool: false } },
        { key: 'timestamp', value: { timestamp: 1795308382 } },
        { key: 'array', value: { array: { values: [{ i8: 1 }, { void: {} }] } } },
        { key: 'table', value: { table: { entries: [{ key: 'k', value: { longStr: 'v' } }] } } },
        { key: 'bytes', value: { byteArray: new Uint8Array([1, 2]) } },
        { key: 'void', value: { void: {} } },
      ],
    };
    const js = fieldTableToJs(table);
    expect(js).toEqual({
      i8: -1,
      u8: 255,
      i16: -2,
      u16: 2,
      i32: -3,
      u32: 3,
      i64: -(2 ** 40),
      u64: 2 ** 40,
      f32: 0.5,
      f64: 0.1,
      decimal: { '!': 'decimal', value: { places: 3, digits: 1234 } },
      shortStr: 's',
      longStr: 'l',
      bool: false,
      timestamp: { '!': 'timestamp', value: 1795308382 },
      array: [1, null],
      table: { k: 'v' },
      bytes: Buffer.from([1, 2]),
      void: null,
    });
    // Under Node, byte arrays are Buffers, as amqplib gives them.
    expect(Buffer.isBuffer(js.bytes)).toBe(true);
    expect(Object.keys(js)).toEqual(table.entries.map((e) => e.key));
  });

  it('converts the typed JS values back to the same types', () => {
    for (const v of [
      { timestamp: 5 },
      { decimal: { scale: 1, value: 7 } },
      { i8: 3 },
      { longStr: 'x' },
      { void: {} },
    ] as FieldValue[]) {
      expect(typed(jsToFieldValue(fieldValueToJs(v)))).toEqual(typed(v));
    }
  });

  it('keeps first position and last value for a duplicated key, as amqplib does', () => {
    const table: FieldTable = {
      entries: [
        { key: 'a', value: { i8: 1 } },
        { key: 'b', value: { i8: 2 } },
        { key: 'a', value: { i8: 3 } },
      ],
    };
    const js = fieldTableToJs(table);
    expect(Object.keys(js)).toEqual(['a', 'b']);
    expect(js.a).toBe(3);
  });

  it('makes __proto__ an own key instead of a prototype', () => {
    const js = fieldTableToJs({ entries: [{ key: '__proto__', value: { table: { entries: [] } } }] });
    expect(Object.getPrototypeOf(js)).toBe(Object.prototype);
    expect(Object.hasOwn(js, '__proto__')).toBe(true);
  });

  it('a missing table is an empty object', () => {
    expect(fieldTableToJs(null)).toEqual({});
  });

  it('throws WireError 502 for a value with no member', () => {
    expect(() => fieldValueToJs({} as FieldValue)).toThrow(
      expect.objectContaining({ name: 'WireError', code: 502 }),
    );
  });
});
