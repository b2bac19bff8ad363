import { describe, expect, it } from 'vitest';
import { RaftDecodeError } from './errors.ts';
import { decodeMessage, encodeMessage } from './message-codec.ts';
import type { Message } from './types.ts';
import { EntryType, MessageType, message } from './types.ts';

describe('message codec', () => {
  it('round-trips every field, entries and snapshot chunks included', () => {
    const samples: Message[] = [
      message(MessageType.App, 'n1', 'n2', 7, {
        logTerm: 6,
        index: 2 ** 40,
        commit: 99,
        entries: [
          { term: 7, index: 2 ** 40 + 1, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]) },
          { term: 7, index: 2 ** 40 + 2, type: EntryType.ConfChange, data: new Uint8Array() },
        ],
      }),
      message(MessageType.AppResp, 'n2', 'n1', 7, { reject: true, rejectHint: 12, logTerm: 3, index: 40 }),
      message(MessageType.Heartbeat, 'a', 'b', 1, { context: 'read-ü-1' }),
      message(MessageType.Snap, 'a', 'b', 3, {
        snapshot: {
          meta: {
            index: 50,
            term: 3,
            confState: {
              voters: ['a', 'b'],
              votersOutgoing: ['a'],
              learners: ['c'],
              learnersNext: [],
              autoLeave: true,
            },
          },
          chunk: 2,
          count: 5,
          totalBytes: 1000,
          data: new Uint8Array([9, 9]),
        },
      }),
    ];
    for (const m of samples) expect(decodeMessage(encodeMessage(m))).toEqual(m);
  });

  it('decodes into fresh buffers that do not alias the input', () => {
    const m = message(MessageType.App, 'a', 'b', 1, {
      entries: [{ term: 1, index: 1, type: EntryType.Normal, data: new Uint8Array([5]) }],
    });
    const bytes = encodeMessage(m);
    const decoded = decodeMessage(bytes);
    bytes.fill(0);
    expect(decoded.entries[0]?.data).toEqual(new Uint8Array([5]));
  });

  it('rejects truncated, trailing and unknown input with RaftDecodeError', () => {
    const bytes = encodeMessage(message(MessageType.Vote, 'a', 'b', 2, { index: 5, logTerm: 1 }));
    expect(() => decodeMessage(bytes.subarray(0, bytes.length - 1))).toThrow(RaftDecodeError);
    expect(() => decodeMessage(new Uint8Array([...bytes, 0]))).toThrow(RaftDecodeError);
    expect(() => decodeMessage(new Uint8Array([2, ...bytes.subarray(1)]))).toThrow(RaftDecodeError);
    const badType = bytes.slice();
    badType[1] = 99;
    expect(() => decodeMessage(badType)).toThrow(RaftDecodeError);
  });
});
