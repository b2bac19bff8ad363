import { describe, expect, it } from 'vitest';
import type { QueueCommand } from '../queue/types.ts';
import { DEFAULT_QUEUE_CONFIG } from '../queue/types.ts';
import { StoredBytesCorruptedError } from './errors.ts';
import { decodeForwarded, QUEUE_COMMAND_TAGS, queueCommandCodec } from './queue-command-codec.ts';
import { DeferredMessage, encodeStoredMessage, plainStoredMessage } from './stored-message-codec.ts';
import { expectSameMessage, richProperties, sampleMessage } from './test-support/storage-fixtures.ts';

type Variant<K extends QueueCommand['type']> = Extract<QueueCommand, { type: K }>;

const MIB = 1024 * 1024;

/**
 * Samples of every variant. Typed as a complete record: adding a QueueCommand variant fails the
 * build here until it has samples, and then the tests below fail until the codec has a row for it.
 */
const SAMPLES: { readonly [K in QueueCommand['type']]: readonly Variant<K>[] } = {
  enqueue: [
    { type: 'enqueue', size: 0, ttl: undefined, message: sampleMessage(0) },
    { type: 'enqueue', size: 10, ttl: 0, message: sampleMessage(10, { properties: richProperties() }) },
    {
      type: 'enqueue',
      size: MIB,
      ttl: 60_000,
      message: sampleMessage(MIB, { bcc: ['x', 'ÿ.z', ''], properties: { deliveryMode: 2 } }),
    },
    {
      type: 'enqueue',
      size: 3,
      ttl: 1.5,
      message: sampleMessage(3, { exchange: '', routingKey: '', bcc: [] }),
    },
    {
      type: 'enqueue',
      size: 1,
      ttl: Number.MAX_SAFE_INTEGER,
      message: sampleMessage(1, { exchange: 'ëx', routingKey: 'ŕk'.repeat(200) }),
    },
    {
      type: 'enqueue',
      size: 4,
      ttl: undefined,
      message: sampleMessage(4, { properties: richProperties() }),
      handOff: { source: '/ëq/7f3a', messageId: 2 ** 40, horizon: 17 },
    },
    {
      type: 'enqueue',
      size: 0,
      ttl: 250,
      message: sampleMessage(0),
      handOff: { source: '', messageId: 0, horizon: 0 },
    },
  ],
  consume: [
    { type: 'consume', owner: 'c1/1', tag: 'amq.ctag-1', prefetch: 0, noAck: false, exclusive: true },
    { type: 'consume', owner: '', tag: 'ü', prefetch: 65535, noAck: true, exclusive: false },
  ],
  cancel: [{ type: 'cancel', owner: 'c1/1', tag: 't' }],
  settle: [
    { type: 'settle', owner: 'c1/1', ids: [] },
    { type: 'settle', owner: 'c1/1', ids: [1, 127, 128, 2 ** 31, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER] },
  ],
  return: [{ type: 'return', owner: 'c2/7', ids: [5, 3, 9] }],
  discard: [{ type: 'discard', owner: 'c2/7', ids: [42] }],
  get: [
    { type: 'get', owner: 'c1/2', noAck: true },
    { type: 'get', owner: 'c1/2', noAck: false },
  ],
  expire: [{ type: 'expire' }],
  purge: [{ type: 'purge' }],
  ownerDown: [{ type: 'ownerDown', owner: 'c9/1' }],
  suspendOwner: [{ type: 'suspendOwner', owner: 'n2:r1.4/1' }],
  resumeOwner: [{ type: 'resumeOwner', owner: 'n2:r1.4/1' }],
  touch: [{ type: 'touch' }],
  remove: [
    { type: 'remove', ids: [] },
    { type: 'remove', ids: [7, 2, 2 ** 40] },
  ],
  setDedupeWindow: [
    { type: 'setDedupeWindow', maxIdsPerSource: 4096 },
    { type: 'setDedupeWindow', maxIdsPerSource: 1 },
  ],
  deadLetterSettled: [
    { type: 'deadLetterSettled', ids: [] },
    { type: 'deadLetterSettled', ids: [3, 1, 2 ** 33] },
  ],
  setConfig: [
    { type: 'setConfig', config: DEFAULT_QUEUE_CONFIG },
    {
      type: 'setConfig',
      config: {
        messageTtl: 0,
        expires: 1800000,
        maxLength: 10,
        maxLengthBytes: 2.5,
        overflow: 'reject-publish-dlx',
        deliveryLimit: 3,
        deadLetterExchange: '',
        deadLetterRoutingKey: 'dlk',
        deadLetterStrategy: 'at-least-once',
      },
    },
  ],
};

const allSamples = Object.values(SAMPLES).flat() as QueueCommand[];

function roundTrip(command: QueueCommand): QueueCommand {
  return queueCommandCodec.decode(queueCommandCodec.encode(command));
}

describe('queueCommandCodec', () => {
  it('has a persisted tag for every command type, each tag distinct', () => {
    expect(Object.keys(QUEUE_COMMAND_TAGS).sort()).toStrictEqual(Object.keys(SAMPLES).sort());
    const tags = Object.values(QUEUE_COMMAND_TAGS);
    expect(new Set(tags).size).toBe(tags.length);
    expect(tags).not.toContain(0);
  });

  it('round-trips every non-enqueue variant exactly', () => {
    for (const command of allSamples) {
      if (command.type === 'enqueue') continue;
      expect(roundTrip(command)).toStrictEqual(command);
    }
  });

  it('round-trips enqueue: ttl forms, empty and 1 MiB bodies, bcc absent/empty/present, field tables', () => {
    for (const command of SAMPLES.enqueue) {
      const decoded = roundTrip(command);
      if (decoded.type !== 'enqueue') throw new Error(`decoded a ${decoded.type}`);
      expect(Object.keys(decoded).sort()).toStrictEqual(['handOff', 'message', 'size', 'ttl', 'type']);
      expect(decoded.size).toBe(command.size);
      expect(decoded.ttl).toBe(command.ttl);
      expect(decoded.handOff).toStrictEqual(command.handOff);
      expectSameMessage(decoded.message, command.message);
    }
  });

  it('round-trips a publish id, with and without the ordered flag (tags 15 and 19)', () => {
    const publishId = { source: 'n1.run.3', messageId: 42, horizon: 40 };
    for (const ordered of [false, true]) {
      const command: QueueCommand = {
        type: 'enqueue',
        size: 3,
        ttl: undefined,
        message: sampleMessage(3),
        publishId,
        ...(ordered ? { ordered: true as const } : {}),
      };
      const bytes = queueCommandCodec.encode(command);
      expect(bytes[0]).toBe(ordered ? 19 : 15);
      const decoded = queueCommandCodec.decode(bytes);
      if (decoded.type !== 'enqueue') throw new Error(`decoded a ${decoded.type}`);
      expect(decoded.publishId).toStrictEqual(publishId);
      expect(decoded.ordered).toBe(ordered ? true : undefined);
      expect(decoded.handOff).toBeUndefined();
    }
  });

  it('encodes with headroom the same bytes after the headroom, leaving the headroom to the log', () => {
    const encodeWithHeadroom = queueCommandCodec.encodeWithHeadroom;
    if (encodeWithHeadroom === undefined) throw new Error('the queue codec offers headroom');
    for (const command of allSamples) {
      const plain = Buffer.from(queueCommandCodec.encode(command));
      for (const headroom of [0, 1, 9]) {
        const roomy = encodeWithHeadroom(command, headroom);
        expect(roomy.byteLength).toBe(headroom + plain.length);
        expect(Buffer.from(roomy.subarray(headroom)).equals(plain)).toBe(true);
        const decoded = queueCommandCodec.decode(roomy.subarray(headroom));
        if (command.type !== 'enqueue') expect(decoded).toStrictEqual(command);
        else if (decoded.type === 'enqueue') expectSameMessage(decoded.message, command.message);
        else throw new Error(`decoded a ${decoded.type}`);
      }
    }
  });

  it('writes an enqueue compactly: a 1 KiB body without properties takes under 1 KiB + 32 bytes', () => {
    const bytes = queueCommandCodec.encode({
      type: 'enqueue',
      size: 1024,
      ttl: undefined,
      message: sampleMessage(1024),
    });
    expect(bytes.length).toBeLessThan(1024 + 32);
  });

  it('hands the body store the bytes the log entry carries, live and after a replay', () => {
    const message = sampleMessage(100, { properties: richProperties() });
    const payload = queueCommandCodec.encode({ type: 'enqueue', size: 100, ttl: undefined, message });
    const live = encodeStoredMessage(message);
    expect(live.buffer).toBe(payload.buffer);
    expect(live.byteOffset + live.length).toBe(payload.byteOffset + payload.length);

    const replayed = queueCommandCodec.decode(payload);
    if (replayed.type !== 'enqueue') throw new Error('not an enqueue');
    const stored = encodeStoredMessage(replayed.message);
    expect(stored.buffer).toBe(payload.buffer);
    expect(Buffer.from(stored).equals(Buffer.from(live))).toBe(true);
    // The decoded body is a view of the entry, not a copy.
    expect(replayed.message.body.buffer).toBe(payload.buffer);
  });

  it('refuses to encode ids and sizes that are not non-negative safe integers', () => {
    expect(() => queueCommandCodec.encode({ type: 'settle', owner: 'o', ids: [1.5] })).toThrow(RangeError);
    expect(() => queueCommandCodec.encode({ type: 'settle', owner: 'o', ids: [-1] })).toThrow(RangeError);
    expect(() => queueCommandCodec.encode({ type: 'return', owner: 'o', ids: [2 ** 53] })).toThrow(
      RangeError,
    );
    expect(() =>
      queueCommandCodec.encode({ type: 'enqueue', size: -1, ttl: undefined, message: sampleMessage(0) }),
    ).toThrow(RangeError);
  });

  it('rejects corrupted entries with StoredBytesCorruptedError', () => {
    const corrupt = [
      new Uint8Array([]),
      new Uint8Array([0]),
      new Uint8Array([200]),
      // settle with a truncated owner
      queueCommandCodec
        .encode({ type: 'settle', owner: 'owner', ids: [1] })
        .subarray(0, 4),
      // trailing bytes
      new Uint8Array([...queueCommandCodec.encode({ type: 'purge' }), 1]),
      // settle claiming 2^40 ids
      new Uint8Array([QUEUE_COMMAND_TAGS.settle, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20]),
      // enqueue with a bad ttl kind
      new Uint8Array([QUEUE_COMMAND_TAGS.enqueue, 0, 9]),
      // enqueue whose message has an unknown format
      new Uint8Array([QUEUE_COMMAND_TAGS.enqueue, 0, 0, 77]),
    ];
    for (const bytes of corrupt) {
      expect(() => queueCommandCodec.decode(bytes)).toThrow(StoredBytesCorruptedError);
    }
  });
});

describe('queueCommandCodec.decodeEntry (what a follower applies)', () => {
  it("gives every command decode gives; an enqueue's message decoded only when a field is read", () => {
    for (const command of allSamples) {
      const bytes = queueCommandCodec.encode(command);
      const entry = queueCommandCodec.decodeEntry?.(bytes) as QueueCommand;
      const eager = queueCommandCodec.decode(bytes);
      if (entry.type !== 'enqueue' || eager.type !== 'enqueue') {
        expect(entry).toEqual(eager);
        continue;
      }
      const { message, ...rest } = entry;
      const { message: eagerMessage, ...eagerRest } = eager;
      expect(rest).toEqual(eagerRest);
      expect(message).toBeInstanceOf(DeferredMessage);
      const deferred = message as DeferredMessage;
      // Its bytes are the entry's, undecoded: the body store stores them as they are.
      expect(encodeStoredMessage(deferred)).toBe(deferred.encoding);
      expect(deferred.encoding.buffer).toBe(bytes.buffer);
      expect(deferred.bodyLength).toBe(eagerMessage.body.byteLength);
      // Read, it is what decode gives (a plain object, decoded once).
      expect(plainStoredMessage(deferred)).toBe(deferred.decoded);
      expectSameMessage(plainStoredMessage(deferred), eagerMessage);
      expect(deferred.exchange).toBe(eagerMessage.exchange);
      expect(deferred.routingKey).toBe(eagerMessage.routingKey);
      expect(deferred.properties).toEqual(eagerMessage.properties);
      expect(deferred.bcc).toEqual(eagerMessage.bcc);
      expect(Buffer.from(deferred.body).equals(Buffer.from(eagerMessage.body))).toBe(true);
    }
  });

  it('names the same source as decode for consecutive publishes from one source and from others', () => {
    const sources = ['n1:run-a', 'n1:run-a', 'n2:ëx', 'n1:run-a', ''];
    for (const [i, source] of sources.entries()) {
      const bytes = queueCommandCodec.encode({
        type: 'enqueue',
        size: 1,
        ttl: undefined,
        message: sampleMessage(1),
        publishId: { source, messageId: i, horizon: 0 },
      });
      const entry = queueCommandCodec.decodeEntry?.(bytes);
      expect(entry?.type === 'enqueue' ? entry.publishId : undefined).toEqual({
        source,
        messageId: i,
        horizon: 0,
      });
    }
  });

  it('rejects a message whose lengths run past its bytes at once, not when it is read', () => {
    const message = sampleMessage(0, { exchange: 'ex', routingKey: 'rk', bcc: ['a', 'b'] });
    const bytes = queueCommandCodec.encode({ type: 'enqueue', size: 0, ttl: undefined, message });
    // Cut inside the bcc keys (the body is empty: every byte after the ttl is layout).
    for (let cut = 4; cut < bytes.length; cut++) {
      expect(() => queueCommandCodec.decodeEntry?.(bytes.subarray(0, cut))).toThrow(
        StoredBytesCorruptedError,
      );
    }
    // An unknown message format, and a bcc count beyond the bytes.
    expect(() =>
      queueCommandCodec.decodeEntry?.(new Uint8Array([QUEUE_COMMAND_TAGS.enqueue, 0, 0, 77])),
    ).toThrow(StoredBytesCorruptedError);
    expect(() =>
      queueCommandCodec.decodeEntry?.(new Uint8Array([QUEUE_COMMAND_TAGS.enqueue, 0, 0, 1, 0, 0, 0, 0x7f])),
    ).toThrow(StoredBytesCorruptedError);
  });
});

describe('decodeForwarded', () => {
  const encodeWithHeadroom = (command: QueueCommand, headroom: number): Uint8Array => {
    const encode = queueCommandCodec.encodeWithHeadroom;
    if (encode === undefined) throw new Error('the queue codec offers headroom');
    return encode(command, headroom);
  };
  /** `command`'s bytes after `room` bytes of a frame header, as the queue link hands them over. */
  const arrived = (command: QueueCommand, room: number): Uint8Array => {
    const plain = queueCommandCodec.encode(command);
    const frame = new Uint8Array(room + plain.byteLength).fill(0xee, 0, room);
    frame.set(plain, room);
    return frame.subarray(room);
  };

  it('proposes a forwarded enqueue in the bytes it came in, the entry header written in the room before', () => {
    for (const command of SAMPLES.enqueue) {
      const body = arrived(command, 20);
      const decoded = decodeForwarded(body, 20);
      const entry = encodeWithHeadroom(decoded, 9);
      // The same memory, starting 9 bytes before the command: no second encoding, no copy.
      expect(entry.buffer).toBe(body.buffer);
      expect(entry.byteOffset).toBe(body.byteOffset - 9);
      expect(entry.byteLength).toBe(body.byteLength + 9);
      expect(Buffer.from(entry.subarray(9)).equals(Buffer.from(queueCommandCodec.encode(command)))).toBe(
        true,
      );
      // Taken once: a second encoding of the same command is a fresh one.
      const again = encodeWithHeadroom(decoded, 9);
      expect(again.buffer).not.toBe(body.buffer);
      expect(Buffer.from(again.subarray(9)).equals(Buffer.from(entry.subarray(9)))).toBe(true);
    }
  });

  it('encodes again when the room is too small, or for commands other than enqueue', () => {
    const enqueue = SAMPLES.enqueue[0] as QueueCommand;
    const small = arrived(enqueue, 4);
    const entry = encodeWithHeadroom(decodeForwarded(small, 4), 9);
    expect(entry.buffer).not.toBe(small.buffer);
    expect(Buffer.from(entry.subarray(9)).equals(Buffer.from(small))).toBe(true);
    // No room claimed at all.
    const none = arrived(enqueue, 20);
    expect(encodeWithHeadroom(decodeForwarded(none, 0), 9).buffer).not.toBe(none.buffer);
    const settle: QueueCommand = { type: 'settle', owner: 'o', ids: [1, 2] };
    const body = arrived(settle, 20);
    const decoded = decodeForwarded(body, 20);
    expect(decoded).toStrictEqual(settle);
    expect(encodeWithHeadroom(decoded, 9).buffer).not.toBe(body.buffer);
  });

  it('refuses bytes that do not decode, as decode does', () => {
    const frame = new Uint8Array([
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      0xee,
      QUEUE_COMMAND_TAGS.enqueue,
      0,
      9,
    ]);
    expect(() => decodeForwarded(frame.subarray(10), 10)).toThrow(StoredBytesCorruptedError);
  });
});
