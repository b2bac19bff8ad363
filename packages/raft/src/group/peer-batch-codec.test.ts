import { describe, expect, it } from 'vitest';
import { RaftDecodeError } from '../raft/errors.ts';
import { encodeMessage } from '../raft/message-codec.ts';
import { EntryType, MessageType, message } from '../raft/types.ts';
import { WireWriter } from '../raft/wire-buffer.ts';
import { decodePeerBatch, encodePeerBatch } from './peer-batch-codec.ts';
import type { PeerBatch } from './transport.ts';

const sample: PeerBatch = {
  from: 'n1',
  messages: [
    {
      groupId: 'queue/orders',
      message: message(MessageType.App, 'n1', 'n2', 4, {
        logTerm: 4,
        index: 10,
        commit: 9,
        entries: [{ term: 4, index: 11, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) }],
      }),
    },
    { groupId: 'metadata', message: message(MessageType.Heartbeat, 'n1', 'n2', 2, { commit: 5 }) },
  ],
  quiesce: [{ groupId: 'queue/idle-ü', term: 3, commit: 2 ** 40 }],
};

describe('peer batch codec', () => {
  it('round-trips messages of several groups and quiesce notices', () => {
    expect(decodePeerBatch(encodePeerBatch(sample))).toEqual(sample);
  });

  it('round-trips an empty batch', () => {
    const empty: PeerBatch = { from: 'n3', messages: [], quiesce: [] };
    expect(decodePeerBatch(encodePeerBatch(empty))).toEqual(empty);
  });

  it('decodes into fresh memory: the input bytes can be reused afterwards', () => {
    const bytes = encodePeerBatch(sample);
    const decoded = decodePeerBatch(bytes);
    bytes.fill(0);
    expect(decoded).toEqual(sample);
  });

  it('reads both layouts of a message length: padded (written in place) and minimal (a node before it)', () => {
    // The layout of a node that encoded each message on its own first: minimal varint lengths.
    const w = new WireWriter();
    w.u8(1);
    w.string(sample.from);
    w.varint(sample.messages.length);
    for (const m of sample.messages) {
      w.string(m.groupId);
      w.bytes(encodeMessage(m.message));
    }
    w.varint(sample.quiesce.length);
    for (const q of sample.quiesce) {
      w.string(q.groupId);
      w.varint(q.term);
      w.varint(q.commit);
    }
    const minimal = w.finish();
    const padded = encodePeerBatch(sample);
    expect(padded).not.toEqual(minimal);
    expect(decodePeerBatch(minimal)).toEqual(sample);
    expect(decodePeerBatch(padded)).toEqual(sample);
  });

  it('encodes a batch of large appends in one buffer, each entry intact', () => {
    const entries = Array.from({ length: 120 }, (_, k) => ({
      term: 7,
      index: 1_000 + k,
      type: EntryType.Normal,
      data: new Uint8Array(1_200 + k).fill(k % 251),
    }));
    const big: PeerBatch = {
      from: 'n1',
      messages: [
        {
          groupId: 'q1',
          message: message(MessageType.App, 'n1', 'n2', 7, { index: 999, logTerm: 7, entries }),
        },
        {
          groupId: 'q2',
          message: message(MessageType.App, 'n1', 'n2', 7, { index: 5, logTerm: 7, entries: [] }),
        },
      ],
      quiesce: [],
    };
    expect(decodePeerBatch(encodePeerBatch(big))).toEqual(big);
    // Its buffer is large, so not zero-filled (wire-buffer.ts): every byte handed out was written.
    // Garbage memory first, so that a byte left unwritten would show as a difference.
    for (let i = 0; i < 50; i++) Buffer.allocUnsafeSlow(1 << 18).fill(0xa5);
    const first = encodePeerBatch(big, 4);
    for (let i = 0; i < 50; i++) Buffer.allocUnsafeSlow(1 << 18).fill(0x5a);
    const second = encodePeerBatch(big, 4);
    expect([...first.subarray(0, 4)]).toEqual([0, 0, 0, 0]);
    expect(first).toEqual(second);
    expect(decodePeerBatch(first.subarray(4))).toEqual(big);
  });

  it('encodes after headroom left zero, the same bytes as without', () => {
    const plain = encodePeerBatch(sample);
    const roomy = encodePeerBatch(sample, 4);
    expect(roomy.byteLength).toBe(plain.byteLength + 4);
    expect([...roomy.subarray(0, 4)]).toEqual([0, 0, 0, 0]);
    expect(roomy.subarray(4)).toEqual(plain);
  });

  it('hands entry data over as plain Uint8Arrays of their own, small (pooled) and large alike', () => {
    const small = new Uint8Array(1024).fill(7);
    const large = new Uint8Array(64 * 1024).fill(9);
    const batch: PeerBatch = {
      from: 'n1',
      messages: [
        {
          groupId: 'g',
          message: message(MessageType.App, 'n1', 'n2', 1, {
            entries: [
              { term: 1, index: 1, type: EntryType.Normal, data: small },
              { term: 1, index: 2, type: EntryType.Normal, data: large },
            ],
          }),
        },
      ],
      quiesce: [],
    };
    const bytes = encodePeerBatch(batch);
    const [first, second] = (decodePeerBatch(bytes).messages[0]?.message.entries ?? []).map((e) => e.data);
    bytes.fill(0);
    for (const [data, want] of [
      [first, small],
      [second, large],
    ] as const) {
      expect(Object.getPrototypeOf(data)).toBe(Uint8Array.prototype);
      expect(data).toEqual(want);
      expect(data?.buffer).not.toBe(bytes.buffer);
    }
  });

  it('throws RaftDecodeError on every truncation of a valid batch', () => {
    const bytes = encodePeerBatch(sample);
    for (let length = 0; length < bytes.length; length++) {
      expect(() => decodePeerBatch(bytes.subarray(0, length)), `length ${length}`).toThrow(RaftDecodeError);
    }
  });

  it('throws RaftDecodeError on trailing bytes, an unknown version and absurd counts', () => {
    const bytes = encodePeerBatch(sample);
    const trailing = new Uint8Array(bytes.length + 1);
    trailing.set(bytes);
    expect(() => decodePeerBatch(trailing)).toThrow(RaftDecodeError);

    const badVersion = bytes.slice();
    badVersion[0] = 9;
    expect(() => decodePeerBatch(badVersion)).toThrow(/version 9/);

    // version 1, from "", then a message count of 2^21 (varint 0x80 0x80 0x80 0x01).
    const hugeCount = new Uint8Array([1, 0, 0x80, 0x80, 0x80, 0x01]);
    expect(() => decodePeerBatch(hugeCount)).toThrow(/too many messages/);
  });

  it('throws RaftDecodeError when an embedded message is corrupt', () => {
    const single: PeerBatch = {
      from: 'a',
      messages: [{ groupId: 'g', message: message(MessageType.Vote, 'a', 'b', 1) }],
      quiesce: [],
    };
    const bytes = encodePeerBatch(single);
    // from "a" (2 bytes) after the version, count, groupId "g" (2 bytes), message length: then the
    // message's own version byte.
    const corrupt = bytes.slice();
    corrupt[7] = 77;
    expect(() => decodePeerBatch(corrupt)).toThrow(RaftDecodeError);
  });

  it('never throws anything but RaftDecodeError on random garbage', () => {
    let seed = 12345;
    const next = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed;
    };
    for (let i = 0; i < 500; i++) {
      const garbage = Uint8Array.from({ length: next() % 64 }, () => next() % 256);
      garbage[0] = 1; // get past the version byte most of the time
      try {
        decodePeerBatch(garbage);
      } catch (error) {
        expect(error).toBeInstanceOf(RaftDecodeError);
      }
    }
  });
});
