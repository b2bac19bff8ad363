// The hand-written codec against protobufjs, its oracle: random frames both ways, and malformed or
// unusual bytes, where the fast decoder must give exactly what protobufjs gives (or fail where it fails,
// with WireError 502 and nothing else).
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import {
  EDGE_TAGS,
  int,
  pick,
  type Rand,
  randomBody,
  randomProperties,
  randomString,
  randomTag,
  rng,
  xDeath,
} from '../test-support/random-wire.ts';
import { wireShape } from '../test-support/wire-shape.ts';
import { decodeBatch, encodeBatch, encodeFrame, encodeProperties, frame } from './codec.ts';
import {
  encodeAckFrame,
  encodeDeliverFrame,
  encodeNackFrame,
  encodePublishFrame,
  encodeRejectFrame,
} from './fast-codec.ts';
import { createNumberReader } from './number-reader.ts';
import { encodePropertiesOnce } from './properties-encoding.ts';
import { BatchType, FrameType, PropertiesType } from './schema.ts';
import type { BasicProperties, Frame } from './types.ts';
import { WireError } from './wire-error.ts';

function randomChannel(r: Rand): number {
  return pick(r, [0, 1, 2, 127, 128, 2047, 65535]);
}

interface DeliverArgs {
  channel: number;
  consumerTag: string;
  deliveryTag: number;
  redelivered: boolean;
  exchange: string;
  routingKey: string;
  properties: BasicProperties | undefined;
  body: Uint8Array;
  /** 0: the body is whole in the frame. */
  bodySize: number;
}

/** A body_size: usually none, else one at the varint boundaries (as delivery tags). */
function randomBodySize(r: Rand): number {
  return r() < 0.75 ? 0 : randomTag(r);
}

function randomDeliver(r: Rand): DeliverArgs {
  return {
    channel: randomChannel(r),
    consumerTag: randomString(r),
    deliveryTag: randomTag(r),
    redelivered: r() < 0.5,
    exchange: randomString(r),
    routingKey: randomString(r),
    properties: randomProperties(r),
    body: randomBody(r),
    bodySize: randomBodySize(r),
  };
}

function deliverFrame(a: DeliverArgs): Frame {
  return frame(a.channel, 'basicDeliver', {
    consumerTag: a.consumerTag,
    deliveryTag: a.deliveryTag,
    redelivered: a.redelivered,
    exchange: a.exchange,
    routingKey: a.routingKey,
    ...(a.properties === undefined ? {} : { properties: a.properties }),
    body: a.body,
    ...(a.bodySize === 0 ? {} : { bodySize: a.bodySize }),
  });
}

function publishFrame(r: Rand): Frame {
  const properties = randomProperties(r);
  return frame(randomChannel(r), 'basicPublish', {
    exchange: randomString(r),
    routingKey: randomString(r),
    mandatory: r() < 0.5,
    immediate: r() < 0.2,
    ...(properties === undefined ? {} : { properties }),
    body: randomBody(r),
    bodySize: randomBodySize(r),
  });
}

function randomFrame(r: Rand): Frame {
  const channel = randomChannel(r);
  const tag = randomTag(r);
  switch (int(r, 11)) {
    case 0:
    case 1:
      return publishFrame(r);
    case 2:
    case 3:
      return deliverFrame(randomDeliver(r));
    case 4:
      return frame(channel, 'basicAck', { deliveryTag: tag, multiple: r() < 0.5 });
    case 5:
      return frame(channel, 'basicNack', { deliveryTag: tag, multiple: r() < 0.5, requeue: r() < 0.5 });
    case 6:
      return frame(channel, 'basicReject', { deliveryTag: tag, requeue: r() < 0.5 });
    case 7:
      return frame(channel, 'heartbeat', {});
    case 8:
      return frame(channel, 'queueDeclareOk', {
        queue: randomString(r),
        messageCount: int(r, 1000),
        consumerCount: int(r, 3),
      });
    case 9: {
      const properties = randomProperties(r);
      return frame(channel, 'basicGetOk', {
        deliveryTag: tag,
        redelivered: r() < 0.5,
        exchange: randomString(r),
        routingKey: randomString(r),
        messageCount: int(r, 100),
        ...(properties === undefined ? {} : { properties }),
        body: randomBody(r),
      });
    }
    default:
      return frame(channel, 'channelClose', {
        replyCode: 406,
        replyText: randomString(r),
        failingMethod: '',
      });
  }
}

// ---------------------------------------------------------------- the oracle and a comparable view

type Outcome = { frames: unknown[] } | { error: WireError };

/** What decodeBatch gave before the fast decoder: protobufjs over the whole batch, then the method check. */
function protobufjsDecode(bytes: Uint8Array): Outcome {
  let frames: Frame[];
  try {
    frames = (BatchType.decode(createNumberReader(bytes)) as unknown as { frames: Frame[] }).frames;
  } catch (err) {
    return { error: WireError.syntax(String(err)) };
  }
  if (frames.some((f) => (f as { method?: string }).method === undefined))
    return { error: WireError.syntax('no method') };
  return { frames: frames.map(frameView) };
}

function fastDecode(bytes: Uint8Array): Outcome {
  try {
    return { frames: decodeBatch(bytes).map(frameView) };
  } catch (err) {
    expect(err).toBeInstanceOf(WireError);
    expect((err as WireError).code).toBe(502);
    return { error: err as WireError };
  }
}

/** Every field of a message by the schema, read the way applications read them (defaults included). */
function messageView(value: unknown, type: protobuf.Type): unknown {
  if (value === null || value === undefined) return null;
  const record = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    field.resolve();
    const v = record[field.name];
    out[field.name] = field.repeated
      ? ((v as unknown[] | null | undefined) ?? []).map((x) => valueView(x, field))
      : valueView(v, field);
  }
  return out;
}

function valueView(v: unknown, field: protobuf.Field): unknown {
  if (field.resolvedType instanceof protobuf.Type) return messageView(v, field.resolvedType);
  if (v instanceof Uint8Array) return { hex: Buffer.from(v).toString('hex'), buffer: Buffer.isBuffer(v) };
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  return v === undefined ? '(undefined)' : v;
}

function frameView(f: Frame): unknown {
  const method = f.method as string;
  const member = FrameType.fields[method];
  if (member === undefined) throw new Error(`no frame field ${method}`);
  member.resolve();
  const body = (f as unknown as Record<string, unknown>)[method] as Record<string, unknown>;
  return {
    channel: f.channel,
    method,
    body: messageView(body, member.resolvedType as protobuf.Type),
    // The same objects, not only the same values: message types, own keys, recursively.
    properties: wireShape(body.properties),
  };
}

/** The fast decoder gives what protobufjs gives: the same frames, or an error (502) where it fails. */
function expectAgreement(bytes: Uint8Array): Outcome {
  const oracle = protobufjsDecode(bytes);
  const fast = fastDecode(bytes);
  if ('error' in oracle) {
    if (!('error' in fast))
      throw new Error(`protobufjs fails (${oracle.error.message}) but the fast decoder does not`);
  } else {
    if ('error' in fast)
      throw new Error(`the fast decoder fails (${fast.error.message}) but protobufjs does not`);
    expect(fast.frames).toEqual(oracle.frames);
  }
  return oracle;
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

/** A batch of one frame on channel 1 whose method field `methodField` holds `content`. */
function batchOf(methodField: number, content: number[], frameExtra: number[] = []): Uint8Array {
  return new Uint8Array(len(1, [0x08, 0x01, ...frameExtra, ...len(methodField, content)]));
}

const DELIVER = 58;
const PUBLISH = 56;
const ACK = 62;

// ---------------------------------------------------------------- encoders

describe('fast encoders', () => {
  it('write exactly the bytes protobufjs writes for random deliveries, which decode back to the input', () => {
    const r = rng(1);
    for (let n = 0; n < 400; n++) {
      const a = randomDeliver(r);
      const bytes = encodeDeliverFrame(
        a.channel,
        a.consumerTag,
        a.deliveryTag,
        a.redelivered,
        a.exchange,
        a.routingKey,
        a.properties === undefined ? undefined : encodeProperties(a.properties),
        a.body,
        a.bodySize,
      );
      const reference = deliverFrame(a);
      expect(Buffer.from(bytes).toString('hex')).toBe(Buffer.from(encodeFrame(reference)).toString('hex'));
      const [decoded] = decodeBatch(encodeBatch([reference]));
      const back = FrameType.decode(createNumberReader(bytes)) as unknown as Frame;
      expect(frameView(back)).toEqual(frameView(decoded as Frame));
      if (back.method !== 'basicDeliver') throw new Error(back.method);
      expect(back.channel).toBe(a.channel);
      expect(back.basicDeliver.consumerTag).toBe(a.consumerTag);
      expect(back.basicDeliver.deliveryTag).toBe(a.deliveryTag);
      expect(back.basicDeliver.redelivered).toBe(a.redelivered);
      expect(back.basicDeliver.exchange).toBe(a.exchange);
      expect(back.basicDeliver.routingKey).toBe(a.routingKey);
      expect(Buffer.from(back.basicDeliver.body).equals(Buffer.from(a.body))).toBe(true);
      expect(back.basicDeliver.properties === null).toBe(a.properties === undefined);
      expect(back.basicDeliver.bodySize).toBe(a.bodySize);
    }
  });

  it('write exactly the bytes protobufjs writes for random publishes', () => {
    const r = rng(2);
    for (let n = 0; n < 400; n++) {
      const f = publishFrame(r);
      if (f.method !== 'basicPublish') throw new Error(f.method);
      const p = f.basicPublish;
      const bytes = encodePublishFrame(
        f.channel,
        p.exchange,
        p.routingKey,
        p.mandatory,
        p.immediate,
        p.properties == null ? undefined : encodeProperties(p.properties),
        p.body,
        p.bodySize,
      );
      expect(Buffer.from(bytes).toString('hex')).toBe(Buffer.from(encodeFrame(f)).toString('hex'));
      const [back] = decodeBatch(encodeBatch([f]));
      expect(frameView(FrameType.decode(createNumberReader(bytes)) as unknown as Frame)).toEqual(
        frameView(back as Frame),
      );
    }
  });

  it('write exactly the bytes protobufjs writes for acks, nacks and rejects, odd tags included', () => {
    const r = rng(3);
    // protobufjs writes any number through LongBits.fromNumber: negatives in two's complement,
    // fractions truncated, NaN as 0 (but present), 2^64 and beyond wrapped.
    const odd = [-1, -(2 ** 40), 1.5, Number.NaN, 2 ** 64, 2 ** 70 + 2 ** 60, -0];
    const tags = [...EDGE_TAGS, ...odd, ...Array.from({ length: 200 }, () => randomTag(r))];
    const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
    for (const deliveryTag of tags) {
      for (const flags of [0, 1, 2, 3]) {
        const channel = randomChannel(r);
        const a = (flags & 1) === 1;
        const b = (flags & 2) === 2;
        expect(hex(encodeAckFrame(channel, deliveryTag, a))).toBe(
          hex(encodeFrame(frame(channel, 'basicAck', { deliveryTag, multiple: a }))),
        );
        expect(hex(encodeNackFrame(channel, deliveryTag, a, b))).toBe(
          hex(encodeFrame(frame(channel, 'basicNack', { deliveryTag, multiple: a, requeue: b }))),
        );
        expect(hex(encodeRejectFrame(channel, deliveryTag, b))).toBe(
          hex(encodeFrame(frame(channel, 'basicReject', { deliveryTag, requeue: b }))),
        );
      }
    }
  });

  it('write the properties field when given, even empty, and leave it out when undefined', () => {
    const body = new Uint8Array(0);
    const withEmpty = encodeDeliverFrame(1, 'c', 1, false, '', 'q', new Uint8Array(0), body);
    const without = encodeDeliverFrame(1, 'c', 1, false, '', 'q', undefined, body);
    const decode = (b: Uint8Array) =>
      (FrameType.decode(b) as unknown as { basicDeliver: { properties: unknown } }).basicDeliver.properties;
    expect(decode(withEmpty)).not.toBeNull();
    expect(decode(without)).toBeNull();
    expect(Buffer.from(withEmpty).toString('hex')).toBe(
      Buffer.from(
        encodeFrame(
          frame(1, 'basicDeliver', {
            consumerTag: 'c',
            deliveryTag: 1,
            redelivered: false,
            exchange: '',
            routingKey: 'q',
            properties: {},
            body,
          }),
        ),
      ).toString('hex'),
    );
  });
});

// ---------------------------------------------------------------- decoder on valid input

describe('decodeBatch (fast decoder) on what protobufjs writes', () => {
  it('gives protobufjs values, field by field, for random batches, from Buffers and Uint8Arrays', () => {
    const r = rng(4);
    for (let n = 0; n < 300; n++) {
      const frames = Array.from({ length: 1 + int(r, 6) }, () => randomFrame(r));
      const bytes = encodeBatch(frames);
      const oracle = expectAgreement(Buffer.from(bytes));
      expectAgreement(new Uint8Array(bytes));
      if ('frames' in oracle) expect(oracle.frames).toHaveLength(frames.length);
    }
  });

  it('decodes the hot frames into plain objects carrying every field', () => {
    const bytes = encodeBatch([
      frame(3, 'basicDeliver', {
        consumerTag: '',
        deliveryTag: 0,
        redelivered: false,
        exchange: '',
        routingKey: '',
        body: new Uint8Array(0),
      }),
      frame(0, 'basicPublish', {
        exchange: '',
        routingKey: '',
        mandatory: false,
        immediate: false,
        body: new Uint8Array(0),
      }),
      frame(1, 'basicAck', { deliveryTag: 0, multiple: false }),
      frame(1, 'basicNack', { deliveryTag: 0, multiple: false, requeue: false }),
      frame(1, 'basicReject', { deliveryTag: 0, requeue: false }),
    ]);
    const decoded = decodeBatch(Buffer.from(bytes)) as unknown as Record<string, Record<string, unknown>>[];
    const expected: Record<string, string[]> = {
      basicDeliver: [
        'consumerTag',
        'deliveryTag',
        'redelivered',
        'exchange',
        'routingKey',
        'properties',
        'body',
        'bodySize',
      ],
      basicPublish: ['exchange', 'routingKey', 'mandatory', 'immediate', 'properties', 'body', 'bodySize'],
      basicAck: ['deliveryTag', 'multiple'],
      basicNack: ['deliveryTag', 'multiple', 'requeue'],
      basicReject: ['deliveryTag', 'requeue'],
    };
    for (const f of decoded) {
      expect(Object.getPrototypeOf(f)).toBe(Object.prototype);
      const method = f.method as unknown as string;
      const body = f[method] as Record<string, unknown>;
      expect(Object.getPrototypeOf(body)).toBe(Object.prototype);
      expect(Object.keys(body).sort()).toEqual((expected[method] as string[]).slice().sort());
      expect(Object.keys(f).sort()).toEqual(['channel', 'method', method].sort());
    }
    const deliver = decoded[0]?.basicDeliver as Record<string, unknown>;
    expect(deliver.properties).toBeNull();
    expect(Buffer.isBuffer(deliver.body)).toBe(true);
    expect((deliver.body as Uint8Array).length).toBe(0);
  });

  it('remembers the bytes a publish carried as its properties encoding', () => {
    const properties: BasicProperties = {
      contentType: 'text/plain',
      headers: xDeath(rng(5)),
      deliveryMode: 2,
    };
    const bytes = encodeBatch([
      frame(1, 'basicPublish', {
        exchange: 'x',
        routingKey: 'k',
        mandatory: false,
        immediate: false,
        properties,
        body: new Uint8Array([1, 2, 3]),
      }),
    ]);
    const [f] = decodeBatch(Buffer.from(bytes));
    if (f?.method !== 'basicPublish') throw new Error('method');
    const decoded = f.basicPublish.properties as BasicProperties;
    const remembered = encodePropertiesOnce(decoded);
    expect(Buffer.from(remembered).equals(Buffer.from(encodeProperties(properties)))).toBe(true);
    // A copy, not a view of the batch: a queued message must not keep its whole batch alive.
    expect(remembered.buffer).not.toBe((f.basicPublish.body as Uint8Array).buffer);
    expect(remembered.byteLength).toBe(remembered.buffer.byteLength);
    expect(encodePropertiesOnce(decoded)).toBe(remembered);
  });

  it('remembers no publisher bytes for properties merged from several fields', () => {
    const props1 = [...PropertiesType.encode({ contentType: 'a', priority: 3 }).finish()];
    const props2 = [...PropertiesType.encode({ contentType: 'b', appId: 'z' }).finish()];
    const bytes = batchOf(PUBLISH, [...len(5, props1), ...len(5, props2)]);
    expectAgreement(bytes);
    const [f] = decodeBatch(bytes);
    if (f?.method !== 'basicPublish') throw new Error('method');
    const p = f.basicPublish.properties as BasicProperties;
    expect([p.contentType, p.priority, p.appId]).toEqual(['b', 3, 'z']);
    expect(Buffer.from(encodePropertiesOnce(p)).equals(Buffer.from(encodeProperties(p)))).toBe(true);
  });
});

// ---------------------------------------------------------------- decoder on malformed and unusual input

describe('decodeBatch (fast decoder) on malformed and unusual bytes', () => {
  const r = rng(6);
  const sample = encodeBatch([
    frame(1, 'basicPublish', {
      exchange: 'éx',
      routingKey: 'rk',
      mandatory: true,
      immediate: false,
      properties: { contentType: 'text/plain', headers: xDeath(r), timestamp: 2 ** 40 },
      body: new Uint8Array([1, 2, 3, 4, 5]),
    }),
    deliverFrame({ ...randomDeliver(r), properties: { headers: xDeath(r) } }),
    frame(2, 'basicAck', { deliveryTag: 2 ** 53 - 1, multiple: true }),
    frame(0, 'heartbeat', {}),
    frame(2, 'basicNack', { deliveryTag: 300, multiple: false, requeue: true }),
    frame(2, 'basicReject', { deliveryTag: 2 ** 32, requeue: true }),
  ]);

  it('agrees with protobufjs on a batch cut at every offset', () => {
    let failures = 0;
    for (let cut = 0; cut <= sample.length; cut++) {
      const outcome = expectAgreement(Buffer.from(sample.subarray(0, cut)));
      if ('error' in outcome) failures++;
    }
    // Most cuts land inside a frame, and those must fail.
    expect(failures).toBeGreaterThan(sample.length / 2);
  });

  it('agrees with protobufjs on random mutations (bytes changed, inserted, removed)', () => {
    const m = rng(7);
    for (let n = 0; n < 4000; n++) {
      const bytes = Array.from(sample);
      for (let k = 1 + int(m, 3); k > 0; k--) {
        const at = int(m, bytes.length);
        const what = int(m, 3);
        if (what === 0) bytes[at] = int(m, 256);
        else if (what === 1) bytes.splice(at, 0, int(m, 256));
        else bytes.splice(at, 1);
      }
      expectAgreement(Buffer.from(bytes));
    }
  });

  it('agrees with protobufjs on random bytes', () => {
    const m = rng(8);
    for (let n = 0; n < 2000; n++) {
      const bytes = new Uint8Array(1 + int(m, 48));
      for (let i = 0; i < bytes.length; i++) bytes[i] = int(m, 256);
      // A plausible start now and then, so the frame and method decoders are reached.
      if (n % 2 === 0) bytes.set([0x0a, bytes.length - 2, 0x08, 0x01, 0xd2, 0x03].slice(0, bytes.length));
      expectAgreement(bytes);
    }
  });

  it('agrees with protobufjs on bad varints, tags and lengths', () => {
    const cases: number[][] = [
      // A delivery tag of 10 bytes (valid), 11 bytes (invalid), and cut inside.
      [...key(2, 0), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
      [...key(2, 0), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
      [...key(2, 0), 0xff, 0xff],
      // A bool of 10 bytes, of 11.
      [...key(3, 0), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
      [...key(3, 0), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00],
      // Tags: 5 bytes with high bits in the fifth, 6 bytes, over 4 bytes near the end.
      [0x80, 0x80, 0x80, 0x80, 0x10, 0x00],
      [0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00, 0x00],
      [0xff, 0xff, 0xff, 0x7f],
      [0x80, 0x80, 0x80, 0x80],
      // Lengths: fifth byte above 7, a length beyond the end, a non-minimal length.
      [...key(1, 2), 0x80, 0x80, 0x80, 0x80, 0x08, 0x00],
      [...key(1, 2), 0x80, 0x80, 0x80, 0x80, 0x10, ...len(4, [0x61])], // 0x10 << 28 would wrap to 0
      [...key(1, 2), 0x05, 0x61],
      [...key(1, 2), 0x81, 0x00, 0x61],
      // Invalid UTF-8 in strings, short and long.
      [...len(1, [0xc3, 0x28])],
      [...len(4, [...Array.from({ length: 70 }, () => 0x61), 0xff])],
      [...len(1, [0xed, 0xa0, 0x80])],
    ];
    for (const content of cases) {
      for (const method of [DELIVER, PUBLISH, ACK, 63, 64]) {
        expectAgreement(batchOf(method, content));
        expectAgreement(new Uint8Array(batchOf(method, content)));
      }
    }
    // A channel of 10 bytes (its low 32 bits count), of 11, at the frame level.
    expectAgreement(
      new Uint8Array(
        len(1, [0x08, 0x81, 0x80, 0x80, 0x80, 0x70, 0x80, 0x80, 0x80, 0x80, 0x01, ...len(ACK, [])]),
      ),
    );
    expectAgreement(
      new Uint8Array(
        len(1, [0x08, 0x81, 0x80, 0x80, 0x80, 0x70, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, ...len(ACK, [])]),
      ),
    );
  });

  it('agrees with protobufjs on fields of the wrong wire type (skipped as unknown)', () => {
    const payloads: Record<number, number[]> = {
      0: [0x96, 0x01],
      1: [1, 2, 3, 4, 5, 6, 7, 8],
      2: [0x02, 0x61, 0x62],
      5: [1, 2, 3, 4],
    };
    let tried = 0;
    let decoded = 0;
    for (const method of [DELIVER, PUBLISH, ACK, 63, 64]) {
      for (let field = 1; field <= 8; field++) {
        for (const wireType of [0, 1, 2, 5]) {
          const content = [...key(field, wireType), ...(payloads[wireType] as number[]), ...len(4, [0x61])];
          if ('frames' in expectAgreement(batchOf(method, content))) decoded++;
          tried++;
        }
      }
      // The method field itself with a wrong wire type: skipped, so the frame has no method.
      const outcome = expectAgreement(new Uint8Array(len(1, [0x08, 0x01, ...key(method, 0), 0x05])));
      expect('error' in outcome).toBe(true);
    }
    // Only a payload that fits the field's own type can fail (e.g. bytes 'ab' read as properties).
    expect(decoded).toBeGreaterThan(tried * 0.9);
  });

  it('agrees with protobufjs on unknown fields of every wire type at every level', () => {
    const unknown = [
      [...key(99, 0), 0xff, 0xff, 0x01],
      [...key(99, 1), 1, 2, 3, 4, 5, 6, 7, 8],
      [...key(99, 2), 0x01, 0x00],
      [...key(99, 5), 1, 2, 3, 4],
      [...key(99, 3), ...key(1, 0), 0x05, ...key(7, 3), ...key(7, 4), ...key(99, 4)],
      [...key(99, 3), ...key(98, 4)], // mismatched end group
      [...key(99, 4)], // a stray end group
      [...key(0, 0), 0x00], // field number 0
      [...key(99, 6)], // no such wire type
      [...key(99, 7)],
      [...key(2 ** 29 - 1, 0), 0x01], // the largest field number
    ];
    const deliver = encodeFrame(deliverFrame(randomDeliver(rng(9))));
    for (const u of unknown) {
      // In the batch, in a frame, in each hot method.
      expectAgreement(new Uint8Array([...u, ...len(1, [...deliver])]));
      expectAgreement(new Uint8Array(len(1, [...u, ...deliver])));
      for (const method of [DELIVER, PUBLISH, ACK, 63, 64])
        expectAgreement(batchOf(method, [...u, ...key(2, 0), 0x07]));
    }
    // Groups nested to the recursion limit and past it.
    for (const depth of [95, 97, 98, 99, 100, 101, 150]) {
      let group: number[] = [];
      for (let i = 0; i < depth; i++) group = [...key(5, 3), ...group, ...key(5, 4)];
      for (const method of [DELIVER, PUBLISH, ACK]) expectAgreement(batchOf(method, group));
      expectAgreement(new Uint8Array(len(1, [...group, ...deliver])));
      expectAgreement(new Uint8Array([...group, ...len(1, [...deliver])]));
    }
  });

  it('agrees with protobufjs on repeated fields: last scalar wins, properties merge, several methods', () => {
    const props = (p: BasicProperties): number[] => [...PropertiesType.encode(p).finish()];
    const cases: Uint8Array[] = [
      batchOf(DELIVER, [...len(1, [0x61]), ...len(1, [0x62]), ...key(2, 0), 5, ...key(2, 0), 0]),
      batchOf(DELIVER, [
        ...len(6, props({ contentType: 'a' })),
        ...len(6, props({ headers: xDeath(rng(10)) })),
      ]),
      batchOf(PUBLISH, [...len(6, [1, 2]), ...len(6, []), ...key(3, 0), 1, ...key(3, 0), 0]),
      // Two method fields: the same method twice (merged), two different methods (the last one counts).
      batchOf(ACK, [...key(1, 0), 7], len(ACK, [...key(2, 0), 1])),
      batchOf(ACK, [...key(1, 0), 7], len(DELIVER, [...len(1, [0x63])])),
      batchOf(DELIVER, [...len(1, [0x63])], len(ACK, [...key(1, 0), 7])),
      batchOf(12, [], len(ACK, [...key(1, 0), 7])),
      // Channel twice, the last being 0.
      new Uint8Array(len(1, [0x08, 0x05, ...len(ACK, []), 0x08, 0x00])),
    ];
    for (const bytes of cases) {
      const outcome = expectAgreement(bytes);
      expect('frames' in outcome).toBe(true);
    }
  });

  it('agrees with protobufjs on properties nested to the recursion limit', () => {
    // FieldValue{table: FieldTable{entries: [FieldEntry{key, value}]}}: three message levels per table.
    const nest = (levels: number): number[] => {
      let value = len(19, []);
      for (let i = 0; i < levels; i++) value = len(17, len(1, [...len(1, [0x6b]), ...len(2, value)]));
      return len(3, len(1, [...len(1, [0x6b]), ...len(2, value)]));
    };
    let sawBoth = 0;
    for (let levels = 28; levels <= 34; levels++) {
      const deliverOutcome = expectAgreement(batchOf(DELIVER, len(6, nest(levels))));
      expectAgreement(batchOf(PUBLISH, len(5, nest(levels))));
      sawBoth |= 'error' in deliverOutcome ? 1 : 2;
    }
    // The range straddles the limit: some decode, some do not.
    expect(sawBoth).toBe(3);
  });

  it('throws WireError 502 for a frame without a method, naming its channel', () => {
    let caught: unknown;
    try {
      decodeBatch(new Uint8Array(len(1, [0x08, 0x07])));
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(WireError);
    expect((caught as WireError).code).toBe(502);
    expect((caught as WireError).message).toMatch(
      /frame 0 of the batch \(channel 7\) carries no known method/,
    );
  });
});
