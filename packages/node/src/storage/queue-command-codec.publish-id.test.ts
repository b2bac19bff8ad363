import { describe, expect, it } from 'vitest';
import type { QueueCommand } from '../queue/types.ts';
import { StoredBytesCorruptedError } from './errors.ts';
import { QUEUE_COMMAND_TAGS, queueCommandCodec } from './queue-command-codec.ts';
import { expectSameMessage, richProperties, sampleMessage } from './test-support/storage-fixtures.ts';

type Enqueue = Extract<QueueCommand, { type: 'enqueue' }>;

function roundTrip(command: Enqueue): Enqueue {
  const decoded = queueCommandCodec.decode(queueCommandCodec.encode(command));
  if (decoded.type !== 'enqueue') throw new Error(`decoded a ${decoded.type}`);
  return decoded;
}

describe('queueCommandCodec: enqueue with a publish id', () => {
  it.each([
    { source: 'p.AbC-_9xyz012', messageId: 1, horizon: 1 },
    { source: 'p.ëñ', messageId: 2 ** 40, horizon: 2 ** 40 - 5 },
    { source: '', messageId: 0, horizon: 0 },
    { source: 'p.x', messageId: Number.MAX_SAFE_INTEGER, horizon: 3 },
  ])('round-trips %o with its message, size and ttl, as a publish id (not a hand-off)', (publishId) => {
    for (const ttl of [undefined, 0, 60_000, 1.5]) {
      const message = sampleMessage(12, { properties: richProperties(), bcc: ['b'] });
      const command: Enqueue = { type: 'enqueue', size: 12, ttl, message, publishId };
      const decoded = roundTrip(command);
      expect(decoded.publishId).toStrictEqual(publishId);
      expect(decoded.handOff).toBeUndefined();
      expect(Object.keys(decoded).sort()).toStrictEqual(['message', 'publishId', 'size', 'ttl', 'type']);
      expect(decoded.size).toBe(12);
      expect(decoded.ttl).toBe(ttl);
      expectSameMessage(decoded.message, message);
    }
  });

  it('encodes with headroom the same bytes, and decodes them to the same publish id', () => {
    const command: Enqueue = {
      type: 'enqueue',
      size: 3,
      ttl: undefined,
      message: sampleMessage(3),
      publishId: { source: 'p.s', messageId: 77, horizon: 70 },
    };
    const plain = Buffer.from(queueCommandCodec.encode(command));
    const encodeWithHeadroom = queueCommandCodec.encodeWithHeadroom;
    if (encodeWithHeadroom === undefined) throw new Error('the queue codec offers headroom');
    const roomy = encodeWithHeadroom(command, 5);
    expect(Buffer.from(roomy.subarray(5)).equals(plain)).toBe(true);
    const decoded = queueCommandCodec.decode(roomy.subarray(5));
    expect(decoded.type === 'enqueue' ? decoded.publishId : undefined).toStrictEqual(command.publishId);
  });

  it('uses its own tag, distinct from the plain and hand-off enqueues and every other command', () => {
    const message = sampleMessage(1);
    const id = { source: 's', messageId: 1, horizon: 0 };
    const plain = queueCommandCodec.encode({ type: 'enqueue', size: 1, ttl: undefined, message });
    const handOff = queueCommandCodec.encode({
      type: 'enqueue',
      size: 1,
      ttl: undefined,
      message,
      handOff: id,
    });
    const publish = queueCommandCodec.encode({
      type: 'enqueue',
      size: 1,
      ttl: undefined,
      message,
      publishId: id,
    });
    const tags = new Set([plain[0], handOff[0], publish[0]]);
    expect(tags.size).toBe(3);
    expect(Object.values(QUEUE_COMMAND_TAGS)).not.toContain(publish[0]);
    // Same bytes after the tag: only the tag tells a hand-off from a publish.
    expect(Buffer.from(publish.subarray(1)).equals(Buffer.from(handOff.subarray(1)))).toBe(true);
  });

  it('keeps the hand-off id when a command carries both (a dead-lettered copy is never a publish)', () => {
    const handOff = { source: 'q#inc', messageId: 4, horizon: 2 };
    const decoded = roundTrip({
      type: 'enqueue',
      size: 1,
      ttl: undefined,
      message: sampleMessage(1),
      handOff,
      publishId: { source: 'p.x', messageId: 9, horizon: 9 },
    });
    expect(decoded.handOff).toStrictEqual(handOff);
    expect(decoded.publishId).toBeUndefined();
  });

  it('rejects a publish-id enqueue cut short with StoredBytesCorruptedError', () => {
    const bytes = queueCommandCodec.encode({
      type: 'enqueue',
      size: 2,
      ttl: 5,
      message: sampleMessage(2),
      publishId: { source: 'p.source', messageId: 300, horizon: 200 },
    });
    // Cut inside the id, the size or the ttl (the message's own prefix checks are its codec's).
    for (let n = 1; n < 1 + 1 + 8 + 2 + 2 + 1 + 1; n++) {
      expect(() => queueCommandCodec.decode(bytes.subarray(0, n)), `cut at ${n}`).toThrow(
        StoredBytesCorruptedError,
      );
    }
  });
});
