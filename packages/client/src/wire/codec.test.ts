import { describe, expect, it } from 'vitest';
import {
  batchEntrySize,
  decodeBatch,
  decodeProperties,
  encodeBatch,
  encodeFrame,
  encodeProperties,
  frame,
  joinEncodedFrames,
} from './codec.ts';
import { fieldValueEquals, fieldValueKind, fieldValuePayload, requireFieldValueKind } from './field-table.ts';
import type { BasicProperties, FieldTable, FieldValue, Frame, MethodMap, MethodName } from './types.ts';
import { METHOD_NAMES } from './types.ts';
import { WireError } from './wire-error.ts';

/** A plain, order-preserving picture of a field value: `{ kind: payload }`, recursively. */
function typed(v: FieldValue): unknown {
  const kind = requireFieldValueKind(v);
  switch (kind) {
    case 'array':
      return { array: fieldValuePayload(v, kind).values.map(typed) };
    case 'table':
      return { table: typedTable(fieldValuePayload(v, kind)) };
    case 'byteArray':
      return { byteArray: Array.from(fieldValuePayload(v, kind)) };
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return { decimal: { scale: d.scale, value: d.value } };
    }
    case 'void':
      return { void: null };
    default:
      return { [kind]: fieldValuePayload(v, kind) };
  }
}

function typedTable(t: FieldTable): unknown[] {
  return t.entries.map((e) => [e.key, typed(e.value)]);
}

function publishWith(headers: FieldTable, properties: Partial<BasicProperties> = {}): Frame {
  return frame(1, 'basicPublish', {
    exchange: 'ex',
    routingKey: 'rk',
    mandatory: false,
    immediate: false,
    properties: { ...properties, headers },
    body: new Uint8Array([1, 2, 3]),
  });
}

function headersOf(f: Frame | undefined): FieldTable {
  if (f?.method !== 'basicPublish') throw new Error(`expected basicPublish, got ${f?.method}`);
  const headers = f.basicPublish.properties?.headers;
  if (headers == null) throw new Error('no headers');
  return headers;
}

function roundTrip(frames: Frame[]): Frame[] {
  return decodeBatch(encodeBatch(frames));
}

function expectWireError(fn: () => unknown): WireError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe(502);
    return err as WireError;
  }
  throw new Error('expected a WireError');
}

// Every FieldValue member, with edge values, including the zero value of each (which proto3 would
// drop outside a oneof).
const EVERY_TYPE: FieldTable = {
  entries: [
    { key: 'i8-min', value: { i8: -128 } },
    { key: 'i8-max', value: { i8: 127 } },
    { key: 'i8-zero', value: { i8: 0 } },
    { key: 'u8-max', value: { u8: 255 } },
    { key: 'u8-zero', value: { u8: 0 } },
    { key: 'i16-min', value: { i16: -32768 } },
    { key: 'i16-max', value: { i16: 32767 } },
    { key: 'u16-max', value: { u16: 65535 } },
    { key: 'i32-min', value: { i32: -2147483648 } },
    { key: 'i32-max', value: { i32: 2147483647 } },
    { key: 'u32-max', value: { u32: 4294967295 } },
    { key: 'i64-min-safe', value: { i64: -Number.MAX_SAFE_INTEGER } },
    { key: 'i64-max-safe', value: { i64: Number.MAX_SAFE_INTEGER } },
    { key: 'i64-minus-one', value: { i64: -1 } },
    { key: 'i64-2^32', value: { i64: 2 ** 32 } },
    { key: 'i64-zero', value: { i64: 0 } },
    { key: 'u64-max-safe', value: { u64: Number.MAX_SAFE_INTEGER } },
    { key: 'u64-zero', value: { u64: 0 } },
    { key: 'f32', value: { f32: -1.5 } },
    { key: 'f32-max', value: { f32: 3.4028234663852886e38 } },
    { key: 'f32-zero', value: { f32: 0 } },
    { key: 'f64', value: { f64: Math.PI } },
    { key: 'f64-negative-zero', value: { f64: -0 } },
    { key: 'f64-tiny', value: { f64: Number.MIN_VALUE } },
    { key: 'decimal', value: { decimal: { scale: 2, value: -12345 } } },
    { key: 'decimal-zero', value: { decimal: { scale: 0, value: 0 } } },
    { key: 'short-str', value: { shortStr: 'short' } },
    { key: 'short-str-empty', value: { shortStr: '' } },
    { key: 'long-str', value: { longStr: 'héllo ✓ 😀' } },
    { key: 'long-str-empty', value: { longStr: '' } },
    { key: 'bool-true', value: { bool: true } },
    { key: 'bool-false', value: { bool: false } },
    { key: 'timestamp', value: { timestamp: 1795308382 } },
    { key: 'timestamp-zero', value: { timestamp: 0 } },
    { key: 'bytes', value: { byteArray: new Uint8Array([0, 255, 7]) } },
    { key: 'bytes-empty', value: { byteArray: new Uint8Array(0) } },
    { key: 'void', value: { void: {} } },
    {
      key: 'array',
      value: {
        array: {
          values: [
            { i8: 1 },
            { longStr: 'two' },
            { array: { values: [{ void: {} }, { array: { values: [] } }] } },
            { table: { entries: [{ key: 'in-array', value: { bool: true } }] } },
          ],
        },
      },
    },
    { key: 'array-empty', value: { array: { values: [] } } },
    {
      key: 'table',
      value: {
        table: {
          entries: [
            { key: 'z', value: { i64: 1 } },
            { key: 'a', value: { table: { entries: [{ key: 'deep', value: { timestamp: 1 } }] } } },
            { key: 'm', value: { array: { values: [{ table: { entries: [] } }] } } },
          ],
        },
      },
    },
    { key: 'table-empty', value: { table: { entries: [] } } },
  ],
};

describe('encodeBatch/decodeBatch', () => {
  it('round-trips every field type exactly, type and value, in order', () => {
    const [decoded] = roundTrip([publishWith(EVERY_TYPE)]);
    const headers = headersOf(decoded);
    expect(typedTable(headers)).toEqual(typedTable(EVERY_TYPE));
    for (let i = 0; i < EVERY_TYPE.entries.length; i++) {
      const sent = EVERY_TYPE.entries[i];
      const got = headers.entries[i];
      expect(got?.key).toBe(sent?.key);
      expect(fieldValueEquals(got?.value as FieldValue, sent?.value as FieldValue)).toBe(true);
    }
  });

  it('keeps -0 as -0 and exposes exactly one member on each decoded value', () => {
    const headers = headersOf(roundTrip([publishWith(EVERY_TYPE)])[0]);
    const negZero = headers.entries.find((e) => e.key === 'f64-negative-zero')?.value as FieldValue;
    expect(Object.is(fieldValuePayload(negZero, 'f64'), -0)).toBe(true);
    const i8 = headers.entries.find((e) => e.key === 'i8-min')?.value as FieldValue;
    const record = i8 as unknown as Record<string, unknown>;
    expect(fieldValueKind(i8)).toBe('i8');
    expect(record.u8).toBeUndefined();
    expect(record.longStr).toBeUndefined();
  });

  it('keeps a table key order that is not sorted', () => {
    const keys = ['x-first-death-reason', 'count', 'a', 'Z', 'routing-keys', '0', 'b'];
    const table: FieldTable = { entries: keys.map((key, i) => ({ key, value: { i32: i } })) };
    const headers = headersOf(roundTrip([publishWith(table)])[0]);
    expect(headers.entries.map((e) => e.key)).toEqual(keys);
  });

  it('keeps duplicate keys as separate entries', () => {
    const table: FieldTable = {
      entries: [
        { key: 'k', value: { i8: 1 } },
        { key: 'k', value: { i8: 2 } },
      ],
    };
    expect(typedTable(headersOf(roundTrip([publishWith(table)])[0]))).toEqual(typedTable(table));
  });

  it('decodes 64-bit fields to plain numbers exact up to 2^53 - 1', () => {
    const frames = roundTrip([
      frame(1, 'basicDeliver', {
        consumerTag: 'c',
        deliveryTag: Number.MAX_SAFE_INTEGER,
        redelivered: true,
        exchange: '',
        routingKey: 'q',
        properties: { timestamp: 2 ** 40 + 1 },
        body: new Uint8Array(0),
      }),
      frame(1, 'basicAck', { deliveryTag: 2 ** 32 + 5, multiple: false }),
    ]);
    const [deliver, ack] = frames;
    if (deliver?.method !== 'basicDeliver' || ack?.method !== 'basicAck') throw new Error('methods');
    expect(deliver.basicDeliver.deliveryTag).toBe(Number.MAX_SAFE_INTEGER);
    expect(deliver.basicDeliver.properties?.timestamp).toBe(2 ** 40 + 1);
    expect(ack.basicAck.deliveryTag).toBe(2 ** 32 + 5);
  });

  it('keeps BasicProperties presence: unset reads as null, set (even empty or zero) as its value', () => {
    const [decoded] = roundTrip([
      frame(1, 'basicPublish', {
        exchange: '',
        routingKey: 'q',
        mandatory: true,
        immediate: false,
        properties: { contentType: '', priority: 0, timestamp: 0, appId: 'app' },
        body: new Uint8Array([9]),
      }),
    ]);
    if (decoded?.method !== 'basicPublish') throw new Error('method');
    const p = decoded.basicPublish.properties as BasicProperties;
    expect(p.contentType).toBe('');
    expect(p.priority).toBe(0);
    expect(p.timestamp).toBe(0);
    expect(p.appId).toBe('app');
    for (const absent of [
      'contentEncoding',
      'headers',
      'deliveryMode',
      'expiration',
      'userId',
      'clusterId',
    ] as const) {
      expect(p[absent]).toBeNull();
    }
    expect(decoded.basicPublish.mandatory).toBe(true);
  });

  it('round-trips every method with its channel', () => {
    const frames = METHOD_NAMES.map((m, i) => frame(i * 1000, m, {} as MethodMap[MethodName]) as Frame);
    const decoded = roundTrip(frames);
    expect(decoded.map((f) => [f.channel, f.method])).toEqual(frames.map((f) => [f.channel, f.method]));
  });

  it('narrows on method and reads zero-valued scalars from a decoded frame', () => {
    const [f] = roundTrip([
      frame(0, 'queueDeclareOk', { queue: 'amq.gen-1', messageCount: 0, consumerCount: 2 }),
    ]);
    expect(f?.channel).toBe(0);
    if (f?.method !== 'queueDeclareOk') throw new Error('method');
    expect(f.queueDeclareOk).toMatchObject({ queue: 'amq.gen-1', messageCount: 0, consumerCount: 2 });
  });

  it('gives Buffer bodies for Buffer input and Uint8Array views otherwise', () => {
    const bytes = encodeBatch([publishWith({ entries: [] })]);
    const fromBuffer = decodeBatch(Buffer.from(bytes))[0];
    const fromArray = decodeBatch(new Uint8Array(bytes))[0];
    if (fromBuffer?.method !== 'basicPublish' || fromArray?.method !== 'basicPublish')
      throw new Error('method');
    expect(Buffer.isBuffer(fromBuffer.basicPublish.body)).toBe(true);
    expect(Buffer.isBuffer(fromArray.basicPublish.body)).toBe(false);
    expect(Array.from(fromArray.basicPublish.body)).toEqual([1, 2, 3]);
  });

  it('re-encodes decoded frames to the same bytes', () => {
    const bytes = encodeBatch([
      publishWith(EVERY_TYPE),
      frame(2, 'basicNack', { deliveryTag: 3, multiple: true, requeue: false }),
    ]);
    expect(Array.from(encodeBatch(decodeBatch(bytes)))).toEqual(Array.from(bytes));
  });

  it('joins frames encoded one by one into the bytes encodeBatch gives', () => {
    const big = new Uint8Array(300).fill(7);
    const frames = [
      publishWith(EVERY_TYPE),
      frame(1, 'basicPublish', {
        exchange: '',
        routingKey: 'q',
        mandatory: false,
        immediate: false,
        body: big,
      }),
      frame(0, 'heartbeat', {}),
    ];
    const encoded = frames.map(encodeFrame);
    expect(Array.from(joinEncodedFrames(encoded))).toEqual(Array.from(encodeBatch(frames)));
    expect(Array.from(joinEncodedFrames(encoded, 1, 2))).toEqual(
      Array.from(encodeBatch([frames[1] as Frame])),
    );
    expect(encoded.reduce((n, f) => n + batchEntrySize(f.length), 0)).toBe(encodeBatch(frames).length);
  });

  it('decodes an absent body as empty bytes', () => {
    const [f] = roundTrip([
      frame(1, 'basicPublish', {
        exchange: '',
        routingKey: 'q',
        mandatory: false,
        immediate: false,
        body: new Uint8Array(0),
      }),
    ]);
    if (f?.method !== 'basicPublish') throw new Error('method');
    expect(f.basicPublish.body).toBeInstanceOf(Uint8Array);
    expect(f.basicPublish.body.length).toBe(0);
  });

  it('accepts an empty batch', () => {
    expect(decodeBatch(encodeBatch([]))).toEqual([]);
  });
});

describe('encodeProperties/decodeProperties', () => {
  it('gives exactly the bytes a publish frame carries as its properties, and decodes them back', () => {
    const properties: BasicProperties = { contentType: 'text/plain', priority: 0, headers: EVERY_TYPE };
    const bytes = encodeProperties(properties);
    const publish = encodeFrame(
      frame(0, 'basicPublish', {
        exchange: '',
        routingKey: '',
        mandatory: false,
        immediate: false,
        properties,
        body: new Uint8Array(0),
      }),
    );
    // Frame{basic_publish (56) {properties (5)}}: the properties field's content ends the frame.
    expect(Array.from(publish.subarray(publish.length - bytes.length))).toEqual(Array.from(bytes));
    const decoded = decodeProperties(bytes);
    expect(decoded.contentType).toBe('text/plain');
    expect(decoded.priority).toBe(0);
    expect(decoded.expiration).toBeNull();
    expect(typedTable(decoded.headers as FieldTable)).toEqual(typedTable(EVERY_TYPE));
  });

  it('throws WireError 502 on properties that do not decode', () => {
    const error = (() => {
      try {
        decodeProperties(new Uint8Array([0x0a, 0x05, 0x61]));
      } catch (err) {
        return err;
      }
      return undefined;
    })();
    expect(error).toBeInstanceOf(WireError);
    expect((error as WireError).code).toBe(502);
  });
});

describe('decodeBatch on bad input', () => {
  it('throws WireError 502 on garbage', () => {
    for (const garbage of [
      [0xff],
      [0xff, 0xff, 0xff, 0xff],
      [0x0a, 0x05, 0x08],
      [0x0b],
      [0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f],
    ]) {
      expectWireError(() => decodeBatch(new Uint8Array(garbage)));
    }
  });

  it('never throws anything but WireError 502 on random bytes', () => {
    // Seeded xorshift so a failure reproduces.
    let seed = 0x9e3779b9;
    const next = () => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return seed >>> 0;
    };
    for (let n = 0; n < 2000; n++) {
      const bytes = new Uint8Array(1 + (next() % 64));
      for (let i = 0; i < bytes.length; i++) bytes[i] = next() & 0xff;
      try {
        decodeBatch(bytes);
      } catch (err) {
        expect(err).toBeInstanceOf(WireError);
        expect((err as WireError).code).toBe(502);
      }
    }
  });

  it('throws WireError 502 on a batch truncated inside any frame', () => {
    const frames = [publishWith(EVERY_TYPE), frame(1, 'basicAck', { deliveryTag: 1, multiple: false })];
    const bytes = encodeBatch(frames);
    const firstLength = encodeBatch([frames[0] as Frame]).length;
    for (let cut = 1; cut < bytes.length; cut++) {
      const truncated = bytes.subarray(0, cut);
      if (cut === firstLength) {
        // A cut at a frame boundary is a valid, shorter batch.
        expect(decodeBatch(truncated).map((f) => f.method)).toEqual(['basicPublish']);
      } else {
        expectWireError(() => decodeBatch(truncated));
      }
    }
  });

  it('throws WireError 502 on a frame with no method', () => {
    const err = expectWireError(() => decodeBatch(encodeBatch([{ channel: 7 } as unknown as Frame])));
    expect(err.message).toMatch(/channel 7/);
  });

  it('throws WireError 502 on a frame whose only method is unknown to this version', () => {
    // Frame { channel: 1, <field 99>: {} }: a method added by a newer peer.
    const frameBytes = [0x08, 0x01, 0x9a, 0x06, 0x00];
    expectWireError(() => decodeBatch(new Uint8Array([0x0a, frameBytes.length, ...frameBytes])));
  });

  it('throws WireError 502 on nesting deeper than the recursion limit, never a stack overflow', () => {
    const varint = (n: number): number[] => {
      const out: number[] = [];
      while (n > 0x7f) {
        out.push((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      out.push(n);
      return out;
    };
    const field = (no: number, body: number[]): number[] => [
      ...varint((no << 3) | 2),
      ...varint(body.length),
      ...body,
    ];
    // FieldValue { void: {} }, wrapped 60 times in FieldValue { table: { entries: [{ key: 'k', value }] } }.
    let value = field(19, []);
    for (let i = 0; i < 60; i++) value = field(17, field(1, [...field(1, [0x6b]), ...field(2, value)]));
    const headers = field(1, [...field(1, [0x6b]), ...field(2, value)]);
    const publish = field(5, field(3, headers));
    const bytes = field(1, [0x08, 0x01, ...field(56, publish)]);
    expectWireError(() => decodeBatch(new Uint8Array(bytes)));
  });

  it('throws WireError 502 on a non-bytes argument', () => {
    expectWireError(() => decodeBatch(new ArrayBuffer(4) as unknown as Uint8Array));
    expectWireError(() => decodeBatch('batch' as unknown as Uint8Array));
  });
});
