import { describe, expect, it } from 'vitest';
import { entryBytes, foldInto } from './append-merge.ts';
import type { Entry, Message } from './types.ts';
import { EntryType, MessageType, message } from './types.ts';

function entries(first: number, count: number, term = 3, size = 10): Entry[] {
  return Array.from({ length: count }, (_, k) => ({
    term,
    index: first + k,
    type: EntryType.Normal,
    data: new Uint8Array(size).fill(first + k),
  }));
}

function app(index: number, logTerm: number, es: Entry[], commit: number, term = 3): Message {
  return message(MessageType.App, 'n1', 'n2', term, { index, logTerm, entries: es, commit });
}

function fold(prev: Message, next: Message, maxBytes?: number): Message | undefined {
  return foldInto(prev, next, entryBytes(prev), entryBytes(next), maxBytes);
}

describe('folding a follower’s appends of one turn', () => {
  it('joins an append that continues the previous one: both runs, the later commit', () => {
    const a = app(10, 3, entries(11, 2), 9);
    const b = app(12, 3, entries(13, 3), 11);
    const folded = fold(a, b) as Message;
    expect(folded.index).toBe(10);
    expect(folded.logTerm).toBe(3);
    expect(folded.entries.map((e) => e.index)).toEqual([11, 12, 13, 14, 15]);
    expect(folded.commit).toBe(11);
    // The inputs are left as they were (their entry arrays may be the log's own).
    expect(a.entries).toHaveLength(2);
    expect(b.entries).toHaveLength(3);
  });

  it('takes an empty append that only moves the commit, and an append behind an empty one', () => {
    const a = app(10, 3, entries(11, 2), 9);
    expect(fold(a, app(12, 3, [], 12))).toEqual({ ...a, commit: 12 });
    const empty = app(12, 3, [], 10);
    const next = app(12, 3, entries(13, 1), 12);
    expect(fold(empty, next)).toEqual({ ...empty, entries: next.entries, commit: 12 });
  });

  it('drops a heartbeat behind an append with entries, unless it carries a read request or a higher commit', () => {
    const a = app(10, 3, entries(11, 2), 12);
    const beat = message(MessageType.Heartbeat, 'n1', 'n2', 3, { commit: 12 });
    expect(fold(a, beat)).toBe(a);
    expect(fold(a, { ...beat, context: 'read-1' })).toBeUndefined();
    expect(fold(a, { ...beat, commit: 13 })).toBeUndefined();
    expect(fold(app(12, 3, [], 12), beat)).toBeUndefined();
  });

  it('keeps apart what would not arrive the same way one after the other', () => {
    const a = app(10, 3, entries(11, 2), 9);
    // A gap, a walk back after a rejection, another term, a mismatched previous term.
    expect(fold(a, app(13, 3, entries(14, 1), 9))).toBeUndefined();
    expect(fold(a, app(5, 3, entries(6, 1), 9))).toBeUndefined();
    expect(fold(a, app(12, 3, entries(13, 1, 4), 9, 4))).toBeUndefined();
    expect(fold(a, app(12, 2, entries(13, 1), 9))).toBeUndefined();
    // Other kinds, other peers, and nothing folds into what is not an append.
    expect(fold(a, message(MessageType.TimeoutNow, 'n1', 'n2', 3))).toBeUndefined();
    expect(fold(a, { ...app(12, 3, entries(13, 1), 9), to: 'n3' })).toBeUndefined();
    const beat = message(MessageType.Heartbeat, 'n1', 'n2', 3, { commit: 9 });
    expect(fold(beat, app(12, 3, entries(13, 1), 9))).toBeUndefined();
    const chunk = {
      ...a,
      snapshot: {
        meta: { index: 1, term: 1, confState: emptyConf },
        chunk: 0,
        count: 1,
        totalBytes: 0,
        data: new Uint8Array(),
      },
    };
    expect(fold(chunk, app(12, 3, entries(13, 1), 9))).toBeUndefined();
  });

  it('stays within the byte bound: a run that would pass it is sent on its own', () => {
    const a = app(10, 3, entries(11, 2, 3, 100), 9);
    const b = app(12, 3, entries(13, 2, 3, 100), 9);
    expect(fold(a, b, 399)).toBeUndefined();
    expect(fold(a, b, 400)?.entries).toHaveLength(4);
    // An empty append adds no bytes: it always folds.
    expect(fold(a, app(12, 3, [], 11), 1)?.commit).toBe(11);
  });
});

const emptyConf = { voters: [], votersOutgoing: [], learners: [], learnersNext: [], autoLeave: false };
