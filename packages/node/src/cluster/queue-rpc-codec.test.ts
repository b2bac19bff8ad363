import { describe, expect, it } from 'vitest';
import type { QueueCounts, QueueReply, StoredMessage } from '../queue/types.ts';
import { encodeStoredMessage } from '../storage/stored-message-codec.ts';
import {
  expectSameMessage,
  richProperties,
  sampleMessage,
} from '../storage/test-support/storage-fixtures.ts';
import { seededRandom } from '../test-support/seeded-random.ts';
import { QueueLinkFrameError } from './queue-link.ts';
import type { GroupStatus } from './queue-rpc-codec.ts';
import {
  DeliveryEncoder,
  decodeBinaryAnswer,
  decodeCancelled,
  decodeCommandAnswer,
  decodeCounts,
  decodeDelivery,
  decodeGroupStatus,
  decodeText,
  encodeBinaryAnswer,
  encodeCancelled,
  encodeCommandAnswer,
  encodeCounts,
  encodeDelivery,
  encodeJsonBody,
  joinSendBody,
  QueueOp,
} from './queue-rpc-codec.ts';

const encoder = new TextEncoder();

/** A message with rich properties and a headers table (richProperties carries one). */
function richMessage(): StoredMessage {
  const properties = richProperties();
  expect(properties.headers?.entries.length ?? 0).toBeGreaterThan(0);
  return sampleMessage(33, { exchange: 'ëx', routingKey: 'rk.ü', properties, bcc: ['b1', 'ç'] });
}

/** `[u32 length][json]` then the given tail. */
function answerBytes(json: Uint8Array, tail: Uint8Array = new Uint8Array(0)): Uint8Array {
  const out = new Uint8Array(4 + json.byteLength + tail.byteLength);
  new DataView(out.buffer).setUint32(0, json.byteLength);
  out.set(json, 4);
  out.set(tail, 4 + json.byteLength);
  return out;
}

function expectFrameError(fn: () => unknown): void {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(QueueLinkFrameError);
  expect((thrown as QueueLinkFrameError).code).toBe('FRAME_MALFORMED');
}

describe('queue-rpc codec: round-trips', () => {
  it('has distinct op numbers that fit the frame byte', () => {
    const ops = Object.values(QueueOp);
    expect(new Set(ops).size).toBe(ops.length);
    for (const op of ops) {
      expect(op).toBeGreaterThan(0);
      expect(op).toBeLessThan(256);
    }
  });

  it.each<QueueReply>([
    { type: 'ok' },
    { type: 'rejected', reason: 'maxlen' },
    { type: 'duplicate' },
    { type: 'empty' },
    { type: 'purged', count: 12 },
    { type: 'locked', text: 'queue locked by an exclusive consumer ✓' },
  ])('a command answer without a message: %o', (reply) => {
    const decoded = decodeCommandAnswer(encodeCommandAnswer(reply, undefined));
    expect(decoded.reply).toEqual(reply);
    expect(decoded.message).toBeUndefined();
  });

  it('a got answer with a message with properties and headers', () => {
    const message = richMessage();
    const reply: QueueReply = {
      type: 'got',
      id: 2 ** 40,
      redelivered: true,
      deliveryCount: 3,
      messageCount: 7,
    };
    const decoded = decodeCommandAnswer(encodeCommandAnswer(reply, message));
    expect(decoded.reply).toEqual(reply);
    expectSameMessage(decoded.message, message);
    expect(decoded.message?.properties.headers?.entries.map((e) => e.key)).toEqual(
      message.properties.headers?.entries.map((e) => e.key),
    );
  });

  it('a got answer with an empty body still carries its message', () => {
    const message = sampleMessage(0, { properties: {} });
    const reply: QueueReply = { type: 'got', id: 1, redelivered: false, deliveryCount: 0, messageCount: 0 };
    const decoded = decodeCommandAnswer(encodeCommandAnswer(reply, message));
    expectSameMessage(decoded.message, message);
  });

  it('a command answer decodes from a view inside a larger buffer (as a frame payload is)', () => {
    const message = richMessage();
    const bytes = encodeCommandAnswer(
      { type: 'got', id: 5, redelivered: false, deliveryCount: 1, messageCount: 0 },
      message,
    );
    const big = new Uint8Array(bytes.byteLength + 11);
    big.set(bytes, 7);
    const decoded = decodeCommandAnswer(big.subarray(7, 7 + bytes.byteLength));
    expect(decoded.reply.type).toBe('got');
    expectSameMessage(decoded.message, message);
  });

  it('counts', () => {
    const counts: QueueCounts = {
      ready: 3,
      unacked: 2,
      consumers: 1,
      deadLetterPending: 4,
    } as QueueCounts;
    expect(decodeCounts(encodeCounts(counts))).toEqual(counts);
  });

  it('a delivery with a unicode owner and tag', () => {
    const message = richMessage();
    const owner = 'nœud-ü:p.Zx9.12/3 🐇';
    const tag = 'amq.ctag-✓-日本語';
    const bytes = encodeDelivery(owner, tag, 2 ** 41 + 3, true, 17, message);
    const big = new Uint8Array(bytes.byteLength + 3);
    big.set(bytes, 3);
    const d = decodeDelivery(big.subarray(3));
    expect(d.owner).toBe(owner);
    expect(d.tag).toBe(tag);
    expect(d.id).toBe(2 ** 41 + 3);
    expect(d.redelivered).toBe(true);
    expect(d.deliveryCount).toBe(17);
    expectSameMessage(d.message, message);
  });

  it('a delivery with empty owner and tag, id 0, not redelivered; a huge delivery count is capped', () => {
    const message = sampleMessage(1);
    const d = decodeDelivery(encodeDelivery('', '', 0, false, 2 ** 40, message));
    expect(d).toMatchObject({ owner: '', tag: '', id: 0, redelivered: false, deliveryCount: 0xffffffff });
    expectSameMessage(d.message, message);
  });

  it("one owner's deliveries through a DeliveryEncoder: the same bytes as encodeDelivery, tags changing between them", () => {
    const owner = 'nœud-ü:p.Zx9.12/3';
    const deliveries = new DeliveryEncoder(owner);
    const message = richMessage();
    for (const [i, tag] of ['c-1', 'c-1', 'ç-2', '', 'c-1'].entries()) {
      const parts = deliveries.encode(tag, i, i % 2 === 0, i, message);
      // The message's part is its stored encoding itself, not a copy.
      expect(parts[1]).toBe(encodeStoredMessage(message));
      const bytes = joinSendBody(parts);
      expect([...bytes]).toEqual([...encodeDelivery(owner, tag, i, i % 2 === 0, i, message)]);
      expect(decodeDelivery(bytes)).toMatchObject({ owner, tag, id: i, redelivered: i % 2 === 0 });
    }
  });

  it('a cancellation with a unicode owner and tag', () => {
    expect(decodeCancelled(encodeCancelled('ñode:1.2/9', 'tag-🐇'))).toEqual({
      owner: 'ñode:1.2/9',
      tag: 'tag-🐇',
    });
    expect(decodeCancelled(encodeCancelled('', ''))).toEqual({ owner: '', tag: '' });
  });

  it('a group status', () => {
    const status: GroupStatus = {
      leader: 'id-1',
      term: 4,
      commitIndex: 99,
      replicas: [
        { node: 'id-1', role: 'leader', match: 99, active: true },
        { node: 'id-2', role: 'follower', match: 97, active: true },
        { node: 'id-3', role: 'learner', match: 0, active: false },
      ],
    };
    expect(decodeGroupStatus(encodeJsonBody(status))).toEqual(status);
    // `term` undefined is dropped by JSON: it decodes absent.
    const noTerm = decodeGroupStatus(encodeJsonBody({ ...status, term: undefined }));
    expect(noTerm.term).toBeUndefined();
  });

  it('a text', () => {
    expect(decodeText(encoder.encode('id-ñ'), 'target')).toBe('id-ñ');
  });
});

describe('queue-rpc codec: malformed input throws QueueLinkFrameError', () => {
  const reply: QueueReply = { type: 'got', id: 1, redelivered: false, deliveryCount: 0, messageCount: 0 };

  // A stored message's body is its last field, without a length (the frame bounds it): a cut
  // inside the body leaves a shorter body, which no decoder can tell. Every cut before it throws.
  it('command answer: truncated at every length before the body', () => {
    const message = richMessage();
    const bytes = encodeCommandAnswer(reply, message);
    const json = encoder.encode(JSON.stringify(reply));
    const bodyStart = bytes.byteLength - message.body.byteLength;
    for (let n = 0; n < bodyStart; n++) {
      // Cut exactly after the JSON the answer is a valid answer without a message.
      if (n === 4 + json.byteLength) {
        expect(decodeCommandAnswer(bytes.subarray(0, n)).message).toBeUndefined();
        continue;
      }
      expectFrameError(() => decodeCommandAnswer(bytes.subarray(0, n)));
    }
    expect(decodeCommandAnswer(bytes.subarray(0, bodyStart)).message?.body.byteLength).toBe(0);
  });

  it('command answer: bad JSON, bad UTF-8, no reply type, a length past the frame, a bad message', () => {
    expectFrameError(() => decodeCommandAnswer(answerBytes(encoder.encode('{"type":'))));
    expectFrameError(() => decodeCommandAnswer(answerBytes(new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]))));
    for (const json of ['null', '5', '"ok"', '{}', '{"type":3}', '[]']) {
      expectFrameError(() => decodeCommandAnswer(answerBytes(encoder.encode(json))));
    }
    const past = answerBytes(encoder.encode('{"type":"ok"}'));
    new DataView(past.buffer).setUint32(0, 0xffffffff);
    expectFrameError(() => decodeCommandAnswer(past));
    expectFrameError(() =>
      decodeCommandAnswer(answerBytes(encoder.encode('{"type":"ok"}'), new Uint8Array([250, 1, 2]))),
    );
  });

  it('counts: bad JSON, bad UTF-8, no ready count', () => {
    expectFrameError(() => decodeCounts(new Uint8Array(0)));
    expectFrameError(() => decodeCounts(encoder.encode('{"ready":')));
    expectFrameError(() => decodeCounts(new Uint8Array([0xc3, 0x28])));
    for (const json of ['null', '{}', '{"ready":"3"}', '7']) {
      expectFrameError(() => decodeCounts(encoder.encode(json)));
    }
  });

  it('delivery: truncated at every length before the body', () => {
    const message = richMessage();
    const bytes = encodeDelivery('owner:1.1/1', 'tag', 9, false, 1, message);
    const bodyStart = bytes.byteLength - message.body.byteLength;
    for (let n = 0; n < bodyStart; n++) {
      expectFrameError(() => decodeDelivery(bytes.subarray(0, n)));
    }
    expect(decodeDelivery(bytes.subarray(0, bodyStart)).message.body.byteLength).toBe(0);
  });

  it('delivery: bad id (negative, fractional, past 2^53, NaN, infinite)', () => {
    const message = sampleMessage(2);
    for (const id of [-1, 1.5, 2 ** 53, Number.NaN, Number.POSITIVE_INFINITY]) {
      const bytes = encodeDelivery('o', 't', 0, false, 0, message);
      // owner 'o' and tag 't': the id sits after 2 + 1 + 2 + 1 bytes.
      new DataView(bytes.buffer).setFloat64(6, id);
      expectFrameError(() => decodeDelivery(bytes));
    }
  });

  it('delivery and cancellation: owner or tag not UTF-8, or running past the frame', () => {
    const message = encodeStoredMessage(sampleMessage(1));
    const badOwner = new Uint8Array([0, 2, 0xff, 0xfe, 0, 1, 0x74, ...new Uint8Array(13), ...message]);
    expectFrameError(() => decodeDelivery(badOwner));
    const badTag = new Uint8Array([0, 1, 0x6f, 0, 1, 0x80, ...new Uint8Array(13), ...message]);
    expectFrameError(() => decodeDelivery(badTag));
    expectFrameError(() => decodeCancelled(new Uint8Array([0, 1, 0x6f, 0, 2, 0xed, 0xa0])));
    expectFrameError(() => decodeCancelled(new Uint8Array([0, 2, 0xc0, 0xaf, 0, 0])));
    expectFrameError(() => decodeCancelled(new Uint8Array([0, 9, 0x6f])));
  });

  it('cancellation: truncated at every length', () => {
    const bytes = encodeCancelled('ówner', 'tág');
    for (let n = 0; n < bytes.byteLength; n++) {
      expectFrameError(() => decodeCancelled(bytes.subarray(0, n)));
    }
  });

  it('group status and text', () => {
    expectFrameError(() => decodeGroupStatus(encoder.encode('{"leader":"x"}')));
    expectFrameError(() => decodeGroupStatus(encoder.encode('null')));
    expectFrameError(() => decodeGroupStatus(encoder.encode('{"replicas":')));
    expectFrameError(() => decodeText(new Uint8Array([0x61, 0xff]), 'target'));
  });

  it('random bytes: every decoder answers or throws QueueLinkFrameError, never anything else', () => {
    const random = seededRandom(0x51c0dec);
    const decoders: ((bytes: Uint8Array) => unknown)[] = [
      decodeBinaryAnswer,
      decodeCommandAnswer,
      decodeCounts,
      decodeDelivery,
      decodeCancelled,
      decodeGroupStatus,
    ];
    const valid = [
      encodeCommandAnswer(reply, richMessage()),
      encodeDelivery('o', 't', 1, true, 2, richMessage()),
    ];
    for (let i = 0; i < 400; i++) {
      let bytes: Uint8Array;
      if (i % 2 === 0) {
        bytes = new Uint8Array(Math.floor(random() * 64));
        for (let j = 0; j < bytes.length; j++) bytes[j] = Math.floor(random() * 256);
      } else {
        // A valid encoding with a few bytes flipped.
        bytes = (valid[i % 4 === 1 ? 0 : 1] as Uint8Array).slice();
        for (let k = 0; k < 3; k++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
      }
      for (const decode of decoders) {
        try {
          decode(bytes);
        } catch (error) {
          expect(error, `decoder ${decode.name}, case ${i}`).toBeInstanceOf(QueueLinkFrameError);
        }
      }
    }
  });
});

describe('queue-rpc codec: binary command answers (op 8)', () => {
  const replies: QueueReply[] = [
    { type: 'ok' },
    { type: 'rejected', reason: 'maxlen' },
    { type: 'rejected', reason: 'dead-letter-backlog' },
    { type: 'duplicate' },
    { type: 'outOfOrder' },
    { type: 'empty' },
    { type: 'purged', count: 0 },
    { type: 'purged', count: 2 ** 40 },
    { type: 'removed', ids: [] },
    { type: 'removed', ids: [0, 7, 2 ** 53 - 1] },
    { type: 'locked', text: 'queue locked by an exclusive consumer ✓' },
    { type: 'locked', text: '' },
  ];

  it.each(replies)('round-trips %o', (reply) => {
    const decoded = decodeBinaryAnswer(encodeBinaryAnswer(reply, undefined));
    expect(decoded.reply).toStrictEqual(reply);
    expect(decoded.message).toBeUndefined();
  });

  it('an ok answer is one byte, where JSON took 17', () => {
    expect(encodeBinaryAnswer({ type: 'ok' }, undefined).byteLength).toBe(1);
    expect(encodeCommandAnswer({ type: 'ok' }, undefined).byteLength).toBe(17);
  });

  it('a got answer with its message, read from a view inside a larger buffer', () => {
    const message = richMessage();
    const reply: QueueReply = {
      type: 'got',
      id: 2 ** 41,
      redelivered: true,
      deliveryCount: 3,
      messageCount: 9,
    };
    const bytes = encodeBinaryAnswer(reply, message);
    const framed = new Uint8Array(bytes.byteLength + 11);
    framed.set(bytes, 7);
    const decoded = decodeBinaryAnswer(framed.subarray(7, 7 + bytes.byteLength));
    expect(decoded.reply).toStrictEqual(reply);
    expectSameMessage(decoded.message as StoredMessage, message);
    const bare = decodeBinaryAnswer(encodeBinaryAnswer({ ...reply, redelivered: false }, undefined));
    expect(bare.reply).toStrictEqual({ ...reply, redelivered: false });
    expect(bare.message).toBeUndefined();
  });

  it('malformed: no tag, unknown tags, trailing bytes, bad reason, short or long fields, bad numbers, bad UTF-8', () => {
    const f64 = (value: number): number[] => {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setFloat64(0, value);
      return [...out];
    };
    const bad = [
      [],
      [0],
      [10],
      [255],
      [1, 0],
      [2],
      [2, 0],
      [2, 3],
      [2, 1, 1],
      [5, ...f64(1)],
      [5, ...f64(-1), 0, 0, 0, 0, 0, ...f64(1)],
      [5, ...f64(1.5), 0, 0, 0, 0, 0, ...f64(1)],
      [5, ...f64(1), 0, 0, 0, 0, 0, ...f64(Number.NaN)],
      [5, ...f64(1), 0, 0, 0, 0, 0, ...f64(1), 77],
      [7, ...f64(1), 0],
      [7, ...f64(2 ** 53)],
      [8, 0, 0, 0, 2, ...f64(1)],
      [8, 0, 0, 0, 1, ...f64(1), 0],
      [8, 0, 0, 0],
      [9, 0x61, 0xff],
    ];
    for (const bytes of bad) expectFrameError(() => decodeBinaryAnswer(new Uint8Array(bytes)));
  });
});
