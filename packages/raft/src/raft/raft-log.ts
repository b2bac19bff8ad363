import { invariant } from './errors.ts';
import type { Entry, RaftStorage, Snapshot } from './types.ts';

/** `term()` of an index outside [firstIndex - 1, lastIndex]: compacted away or not yet written. */
export const NO_TERM = -1;

/**
 * The part of the log not yet persisted: an optional incoming snapshot and the entries after it
 * (or after the stable log). Entries here shadow whatever storage still holds at the same indexes.
 *
 * Invariants: `entries[k].index === offset + k`; with a snapshot, `offset === snapshot.index + 1`.
 */
export class UnstableLog {
  snapshot: Snapshot | undefined;
  entries: Entry[] = [];
  /** Index of entries[0] (or of the next entry to come when empty). */
  offset: number;
  /**
   * Index of the first entry not yet handed to the host in a Ready (entries before it are being
   * written by an outstanding Ready): offset <= inProgress <= offset + entries.length.
   */
  inProgress: number;
  /** The snapshot was handed to the host in a Ready that is not advanced yet. */
  snapshotInProgress = false;
  /**
   * Called when entries this part held (or storage held) at `first` and after are replaced — a
   * conflicting append — or all of them by a snapshot (`first` = -1): Readys still writing them
   * may no longer vouch for them.
   */
  onOverwrite: ((first: number) => void) | undefined;

  constructor(offset: number) {
    this.offset = offset;
    this.inProgress = offset;
  }

  /** Whether there is something no Ready has handed out yet. */
  hasNotInProgress(): boolean {
    return (
      this.inProgress < this.offset + this.entries.length ||
      (this.snapshot !== undefined && !this.snapshotInProgress)
    );
  }

  /** The entries no Ready has handed out yet; marks them (and the snapshot) handed out. */
  takeNotInProgress(): Entry[] {
    const end = this.offset + this.entries.length;
    const taken = this.inProgress < end ? this.entries.slice(this.inProgress - this.offset) : [];
    this.inProgress = end;
    if (this.snapshot !== undefined) this.snapshotInProgress = true;
    return taken;
  }

  /** Last index held here, or NO_TERM when there is neither an entry nor a snapshot. */
  maybeLastIndex(): number {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    if (this.snapshot !== undefined) return this.snapshot.meta.index;
    return NO_TERM;
  }

  /** Term at `index` when this part knows it, else NO_TERM. */
  maybeTerm(index: number): number {
    if (index < this.offset) {
      const snapshot = this.snapshot;
      return snapshot !== undefined && snapshot.meta.index === index ? snapshot.meta.term : NO_TERM;
    }
    const at = index - this.offset;
    const entry = this.entries[at];
    return entry === undefined ? NO_TERM : entry.term;
  }

  /**
   * The host persisted entries up to `index` (written with term `term`). Drop them from here unless
   * the entry at `index` was replaced since (by a conflicting append between `ready()` and
   * `advance()`): then storage holds the old entry and the new one must still be written.
   */
  stableTo(index: number, term: number, ignoreTerm: boolean): void {
    if (index < this.offset) return;
    const found = this.maybeTerm(index);
    if (found === NO_TERM) return;
    if (found !== term && !ignoreTerm) return;
    this.entries.splice(0, index + 1 - this.offset);
    this.offset = index + 1;
    if (this.inProgress < this.offset) this.inProgress = this.offset;
  }

  /** The host persisted the snapshot at `index`. */
  stableSnapTo(index: number): void {
    if (this.snapshot !== undefined && this.snapshot.meta.index === index) {
      this.snapshot = undefined;
      this.snapshotInProgress = false;
    }
  }

  restore(snapshot: Snapshot): void {
    this.offset = snapshot.meta.index + 1;
    this.inProgress = this.offset;
    this.entries = [];
    this.snapshot = snapshot;
    this.snapshotInProgress = false;
    this.onOverwrite?.(-1);
  }

  /** Append `entries` (contiguous), replacing whatever this part held at and after entries[0].index. */
  truncateAndAppend(entries: readonly Entry[]): void {
    const first = (entries[0] as Entry).index;
    const end = this.offset + this.entries.length;
    if (first < this.inProgress) this.inProgress = Math.max(first, this.offset);
    if (first < end) this.onOverwrite?.(first);
    if (first === end) {
      for (const entry of entries) this.entries.push(entry);
    } else if (first <= this.offset) {
      // Replaces the whole unstable part, and shadows storage from `first` on: the next Ready
      // writes from `first`, and the host deletes every stored entry at or after it.
      this.offset = first;
      this.inProgress = first;
      this.entries = entries.slice();
    } else {
      this.entries.length = first - this.offset;
      for (const entry of entries) this.entries.push(entry);
    }
  }

  /** Entries [lo, hi), all held here. */
  slice(lo: number, hi: number): Entry[] {
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}

/**
 * A replica's log: the stable part (what storage holds, read through `RaftStorage`) followed by the
 * unstable tail, with the commit and apply positions.
 *
 * Invariants, asserted (a violation throws `RaftInvariantError`):
 * - applied <= applying <= committed <= lastIndex;
 * - committed never decreases, and no committed entry is ever truncated or replaced;
 * - a conflicting append truncates only after the first entry whose term differs.
 */
export class RaftLog {
  readonly storage: RaftStorage;
  readonly unstable: UnstableLog;
  /** Highest index known to be committed. */
  committed: number;
  /** Highest index handed to the host to apply (in a Ready not yet advanced). */
  applying: number;
  /** Highest index the host has applied (advanced). */
  applied: number;
  readonly #maxCommittedBytes: number;

  constructor(storage: RaftStorage, maxCommittedBytes: number) {
    this.storage = storage;
    this.#maxCommittedBytes = maxCommittedBytes;
    const first = storage.firstIndex();
    const last = storage.lastIndex();
    this.unstable = new UnstableLog(last + 1);
    this.committed = first - 1;
    this.applying = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    const snapshot = this.unstable.snapshot;
    return snapshot !== undefined ? snapshot.meta.index + 1 : this.storage.firstIndex();
  }

  lastIndex(): number {
    const last = this.unstable.maybeLastIndex();
    return last !== NO_TERM ? last : this.storage.lastIndex();
  }

  /** Term of the entry at `index`, or NO_TERM when it was compacted away or does not exist. */
  term(index: number): number {
    const dummy = this.firstIndex() - 1;
    if (index < dummy || index > this.lastIndex()) return NO_TERM;
    const term = this.unstable.maybeTerm(index);
    if (term !== NO_TERM) return term;
    return this.storage.term(index);
  }

  lastTerm(): number {
    const term = this.term(this.lastIndex());
    invariant(term !== NO_TERM, 'the last entry has no term');
    return term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Whether a log ending at (lastTerm, lastIndex) is at least as up to date as this one (§5.4.1). */
  isUpToDate(lastTerm: number, lastIndex: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * The index of the first of `entries` whose term differs from ours at that index (or that we lack),
   * or 0 when all match. Entries that match are kept: a delayed or duplicated append must never
   * truncate what a later append added.
   */
  findConflict(entries: readonly Entry[]): number {
    for (const entry of entries) {
      if (!this.matchTerm(entry.index, entry.term)) return entry.index;
    }
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `term` (or a compacted index, where we cannot
   * tell). Used for fast backtracking in both directions: a follower rejecting (index, term) hints
   * the leader past every entry of a term the leader does not have; the leader, given the
   * follower's (hintIndex, hintTerm), skips its own entries of later terms.
   *
   * Example: leader log terms [1 1 1 4 4 5 5 5], follower [1 1 1 2 2 2 3 3]. The leader probes
   * (8, 5); the follower answers hint (8, 3) — its largest entry with term <= 5. The leader looks
   * up (8, 3) in its log: the largest index with term <= 3 is 3, so it probes (3, 1) next and
   * matches at once instead of walking back one index per round trip.
   */
  findConflictByTerm(index: number, term: number): number {
    for (; index > 0; index--) {
      const found = this.term(index);
      if (found === NO_TERM || found <= term) return index;
    }
    return 0;
  }

  /**
   * Follower side of an append: if our log has (prevIndex, prevTerm), add `entries` after it,
   * truncating at the first conflict only, and commit up to min(committed, last new index): never
   * past what this message proved to match the leader. Returns the last new index, or -1 on a
   * mismatch at prevIndex.
   */
  maybeAppend(
    prevIndex: number,
    prevTerm: number,
    committed: number,
    entries: readonly Entry[],
    mutations: { readonly truncateOnEveryAppend: boolean; readonly commitPastProven: boolean },
  ): number {
    if (!this.matchTerm(prevIndex, prevTerm)) return -1;
    const lastNew = prevIndex + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      invariant(
        conflict > this.committed,
        () => `entry ${conflict} conflicts with the committed prefix (committed ${this.committed})`,
      );
      this.append(entries.slice(conflict - (prevIndex + 1)));
    }
    if (mutations.truncateOnEveryAppend && entries.length > 0 && lastNew > this.committed) {
      // Classic bug #3: the log ends where this append ends, dropping later (matching) entries.
      if (lastNew < this.lastIndex()) this.append([entries[entries.length - 1] as Entry]);
    }
    const proven = mutations.commitPastProven ? this.lastIndex() : lastNew;
    this.commitTo(Math.min(committed, proven));
    return lastNew;
  }

  /** Append at the end of the log (after truncating at entries[0].index). Returns the new last index. */
  append(entries: readonly Entry[]): number {
    const first = entries[0];
    if (first === undefined) return this.lastIndex();
    invariant(
      first.index - 1 >= this.committed,
      () => `append at ${first.index} would overwrite committed entries (committed ${this.committed})`,
    );
    invariant(first.index <= this.lastIndex() + 1, () => `append at ${first.index} leaves a gap`);
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  /** Entries [lo, hi), at most `maxBytes` of data (at least one entry). Requires lo >= firstIndex. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    if (lo >= hi) return [];
    invariant(lo >= this.firstIndex(), () => `slice from ${lo} below first index ${this.firstIndex()}`);
    invariant(hi <= this.lastIndex() + 1, () => `slice to ${hi} beyond last index ${this.lastIndex()}`);
    const offset = this.unstable.offset;
    let result: Entry[];
    if (lo < offset) {
      const stableHi = Math.min(hi, offset);
      result = this.storage.entries(lo, stableHi, maxBytes);
      if (result.length < stableHi - lo || hi <= offset) return result;
    } else {
      result = [];
    }
    let bytes = 0;
    for (const entry of result) bytes += entry.data.byteLength;
    const start = Math.max(lo, offset);
    const entries = this.unstable.entries;
    for (let index = start; index < hi; index++) {
      const entry = entries[index - offset] as Entry;
      bytes += entry.data.byteLength;
      if (result.length > 0 && bytes > maxBytes) break;
      result.push(entry);
    }
    return result;
  }

  /** Entries from `index` to the end, at most `maxBytes` (at least one). Empty when index > last. */
  entriesFrom(index: number, maxBytes: number): Entry[] {
    const last = this.lastIndex();
    if (index > last) return [];
    return this.slice(index, last + 1, maxBytes);
  }

  /** Whether committed entries wait to be handed to the host (none while a snapshot is unpersisted). */
  hasNextCommittedEntries(): boolean {
    if (this.unstable.snapshot !== undefined) return false;
    return this.committed > Math.max(this.applying, this.firstIndex() - 1);
  }

  /** The next committed entries to apply, bounded by `maxCommittedBytesPerReady`. */
  nextCommittedEntries(): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const lo = Math.max(this.applying, this.firstIndex() - 1) + 1;
    return this.slice(lo, this.committed + 1, this.#maxCommittedBytes);
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    invariant(
      index <= this.lastIndex(),
      () => `commit ${index} is past the last index ${this.lastIndex()}: was the log truncated or lost?`,
    );
    this.committed = index;
  }

  /** Commit `index` if it is past the commit and holds an entry of `term` (the leader's current term). */
  maybeCommit(index: number, term: number, anyTerm: boolean): boolean {
    if (index > this.committed && (anyTerm ? this.term(index) !== NO_TERM : this.matchTerm(index, term))) {
      this.commitTo(index);
      return true;
    }
    return false;
  }

  acceptApplying(index: number): void {
    invariant(index <= this.committed, () => `applying ${index} past commit ${this.committed}`);
    this.applying = index;
  }

  appliedTo(index: number): void {
    invariant(
      index >= this.applied && index <= this.committed,
      () => `applied ${index} outside [${this.applied}, ${this.committed}]`,
    );
    this.applied = index;
    if (this.applying < index) this.applying = index;
  }

  /** Replace the log with a snapshot (the host persists it from the next Ready). */
  restore(snapshot: Snapshot): void {
    this.committed = snapshot.meta.index;
    this.unstable.restore(snapshot);
  }

  /** The snapshot to send to a follower that needs compacted entries. */
  snapshot(): Snapshot {
    return this.unstable.snapshot ?? this.storage.snapshot();
  }
}
