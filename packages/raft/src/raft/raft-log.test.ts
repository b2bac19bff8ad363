import { describe, expect, it } from 'vitest';
import { RaftInvariantError } from './errors.ts';
import { MemoryRaftStorage } from './memory-raft-storage.ts';
import { NO_MUTATIONS } from './mutations.ts';
import { NO_TERM, RaftLog, UnstableLog } from './raft-log.ts';
import type { Entry } from './types.ts';
import { EMPTY_CONF_STATE, EntryType } from './types.ts';

function entry(index: number, term: number, bytes = 0): Entry {
  return { index, term, type: EntryType.Normal, data: new Uint8Array(bytes) };
}

/** Entries from `first` with the given terms. */
function run(first: number, terms: readonly number[]): Entry[] {
  return terms.map((term, i) => entry(first + i, term));
}

/** A log whose storage holds `stable` terms from index 1, and `unstable` after them. */
function logWith(stable: readonly number[], unstable: readonly number[] = []): RaftLog {
  const storage = new MemoryRaftStorage();
  storage.append(run(1, stable));
  const log = new RaftLog(storage, Number.POSITIVE_INFINITY);
  if (unstable.length > 0) log.append(run(stable.length + 1, unstable));
  return log;
}

describe('UnstableLog', () => {
  it('keeps entries not yet marked stable, and drops them once stable with a matching term', () => {
    const u = new UnstableLog(5);
    u.truncateAndAppend(run(5, [1, 1, 2]));
    expect(u.maybeLastIndex()).toBe(7);
    u.stableTo(6, 1, false);
    expect(u.offset).toBe(7);
    expect(u.entries.map((e) => e.index)).toEqual([7]);
  });

  it('does not mark stable an entry replaced since the Ready was taken (ABA guard)', () => {
    const u = new UnstableLog(5);
    u.truncateAndAppend(run(5, [1, 1]));
    // The Ready carried (6, term 1); before advance() a new leader replaced index 6.
    u.truncateAndAppend(run(6, [2]));
    u.stableTo(6, 1, false);
    expect(u.entries.map((e) => [e.index, e.term])).toEqual([
      [5, 1],
      [6, 2],
    ]);
  });

  it('replaces everything from the first new index, including indexes below its offset', () => {
    const u = new UnstableLog(5);
    u.truncateAndAppend(run(5, [1, 1, 1]));
    u.truncateAndAppend(run(3, [2, 2]));
    expect(u.offset).toBe(3);
    expect(u.entries.map((e) => [e.index, e.term])).toEqual([
      [3, 2],
      [4, 2],
    ]);
  });
});

describe('RaftLog', () => {
  it('reads terms across the stable and unstable parts, NO_TERM outside the log', () => {
    const log = logWith([1, 1, 2], [3, 3]);
    expect([0, 1, 3, 4, 5].map((i) => log.term(i))).toEqual([0, 1, 2, 3, 3]);
    expect(log.term(6)).toBe(NO_TERM);
    expect(log.lastIndex()).toBe(5);
    expect(log.lastTerm()).toBe(3);
  });

  it('finds the first conflicting entry and ignores entries that already match', () => {
    const log = logWith([1, 1, 2, 2]);
    expect(log.findConflict(run(2, [1, 2, 2]))).toBe(0);
    expect(log.findConflict(run(3, [2, 3]))).toBe(4);
    expect(log.findConflict(run(4, [2, 2, 2]))).toBe(5);
  });

  it('findConflictByTerm skips whole terms (the etcd rejection-hint example)', () => {
    // Leader terms [1 1 1 4 4 5 5 5]; follower [1 1 1 2 2 2 3 3].
    const leader = logWith([1, 1, 1, 4, 4, 5, 5, 5]);
    const follower = logWith([1, 1, 1, 2, 2, 2, 3, 3]);
    const hint = follower.findConflictByTerm(8, 5);
    expect([hint, follower.term(hint)]).toEqual([8, 3]);
    expect(leader.findConflictByTerm(hint, follower.term(hint))).toBe(3);
  });

  it('a duplicated append whose entries all match keeps the later entries', () => {
    const log = logWith([1, 1, 1, 1, 1]);
    expect(log.maybeAppend(1, 1, 0, run(2, [1]), NO_MUTATIONS)).toBe(2);
    expect(log.lastIndex()).toBe(5);
  });

  it('truncates at the first conflict and appends the rest', () => {
    const log = logWith([1, 1, 1, 1]);
    expect(log.maybeAppend(2, 1, 0, run(3, [2, 2, 2]), NO_MUTATIONS)).toBe(5);
    expect([3, 4, 5].map((i) => log.term(i))).toEqual([2, 2, 2]);
  });

  it('rejects an append whose previous entry does not match', () => {
    const log = logWith([1, 1, 2]);
    expect(log.maybeAppend(3, 1, 0, run(4, [3]), NO_MUTATIONS)).toBe(-1);
    expect(log.maybeAppend(7, 2, 0, [], NO_MUTATIONS)).toBe(-1);
  });

  it('commits only up to the last entry the append proved, never past it', () => {
    const log = logWith([1, 1, 1, 1, 1]);
    log.maybeAppend(2, 1, 5, run(3, [1]), NO_MUTATIONS);
    expect(log.committed).toBe(3);
    log.maybeAppend(3, 1, 2, [], NO_MUTATIONS);
    expect(log.committed).toBe(3); // commit never goes back
  });

  it('refuses to truncate a committed entry', () => {
    const log = logWith([1, 1, 1]);
    log.commitTo(3);
    expect(() => log.maybeAppend(1, 1, 3, run(2, [2, 2]), NO_MUTATIONS)).toThrow(RaftInvariantError);
  });

  it('refuses to commit past the last index', () => {
    const log = logWith([1, 1]);
    expect(() => log.commitTo(3)).toThrow(RaftInvariantError);
  });

  it('commits by counting only entries of the given term', () => {
    const log = logWith([1, 1, 2]);
    expect(log.maybeCommit(2, 2, false)).toBe(false);
    expect(log.maybeCommit(3, 2, false)).toBe(true);
    expect(log.committed).toBe(3);
  });

  it('hands out committed entries once each, bounded in bytes, and tracks applying/applied', () => {
    const storage = new MemoryRaftStorage();
    storage.append([entry(1, 1, 10), entry(2, 1, 10), entry(3, 1, 10)]);
    const log = new RaftLog(storage, 15);
    log.commitTo(3);
    const first = log.nextCommittedEntries();
    expect(first.map((e) => e.index)).toEqual([1]);
    log.acceptApplying(1);
    expect(log.nextCommittedEntries().map((e) => e.index)).toEqual([2]);
    log.appliedTo(1);
    expect(log.applied).toBe(1);
    expect(() => log.appliedTo(0)).toThrow(RaftInvariantError);
  });

  it('slices across the storage/unstable boundary within a byte bound (at least one entry)', () => {
    const storage = new MemoryRaftStorage();
    storage.append([entry(1, 1, 4), entry(2, 1, 4)]);
    const log = new RaftLog(storage, Number.POSITIVE_INFINITY);
    log.append([entry(3, 1, 4), entry(4, 1, 4)]);
    expect(log.slice(1, 5, 100).map((e) => e.index)).toEqual([1, 2, 3, 4]);
    expect(log.slice(2, 5, 8).map((e) => e.index)).toEqual([2, 3]);
    expect(log.slice(3, 5, 1).map((e) => e.index)).toEqual([3]);
  });

  it('restores from a snapshot: commit and first index move to it, nothing committed before', () => {
    const log = logWith([1, 1]);
    log.restore({ meta: { index: 10, term: 3, confState: EMPTY_CONF_STATE }, data: new Uint8Array() });
    expect(log.firstIndex()).toBe(11);
    expect(log.lastIndex()).toBe(10);
    expect(log.term(10)).toBe(3);
    expect(log.committed).toBe(10);
    expect(log.hasNextCommittedEntries()).toBe(false);
  });
});
