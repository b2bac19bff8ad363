import { invariant, RaftInvariantError } from '../raft/errors.ts';
import type { ConfState, Entry, RaftStorage, Ready, Snapshot } from '../raft/types.ts';
import type { HardState } from '../storage/log-storage.ts';
import type { LogStore } from '../storage/log-store.ts';
import { fromStoredEntry, fromStoredSnapshot, toStoredEntry, toStoredSnapshot } from './group-codec.ts';

const NO_HARD_STATE: HardState = Object.freeze({ term: 0, vote: undefined, commit: 0 });

/**
 * `RaftStorage` of one group over the node's shared `LogStore`: the STABLE part of the group's log
 * (what earlier Readys persisted); the core keeps the unstable tail itself, as etcd's raftLog does.
 *
 * What it holds in memory, so that the hot paths never read LMDB:
 * - the snapshot's meta (index, term, conf state) and the last stored index and term;
 * - a cache of the stable entries after the applied index (the entries the host is about to apply
 *   and the leader is about to send). Older entries — a lagging follower's catch-up, a rejected
 *   append's probe — are read from the store.
 *
 * Invariants:
 * - the view only moves on `persisted()` (after the Ready's batch is durable, so the store's reads
 *   reflect it) — except a compaction, which moves `firstIndex` up at once, before the truncation is
 *   queued, so the core never asks for entries the store may be deleting; until that batch is
 *   durable the new snapshot's data is served from memory;
 * - cache[k].index === cacheFirst + k, and the cache always ends at `lastIndex` when non-empty.
 */
export class LogStoreRaftStorage implements RaftStorage {
  readonly groupId: string;
  readonly #store: LogStore;
  #hardState: HardState;
  #snapIndex: number;
  #snapTerm: number;
  #confState: ConfState;
  /** The snapshot a compaction queued, served from memory until its batch is durable. */
  #pendingSnapshot: Snapshot | undefined;
  #lastIndex: number;
  #lastTerm: number;
  /**
   * The last index handed to the store, durable or not: with Readys pipelined, the store may hold
   * (or be about to hold) entries past `#lastIndex` that a later Ready replaces.
   */
  #writtenLastIndex: number;
  #cache: Entry[] = [];
  #cacheFirst = 0;
  /** Makes the snapshot sent to a follower from the stored one (see `sendSnapshotsAs`). */
  #outgoing: ((stored: Snapshot) => Snapshot) | undefined;

  /**
   * A view of what the store holds for the group. The group must have its hard state and snapshot
   * stored (see `bootstrapWrites`) and no write in flight.
   */
  constructor(groupId: string, store: LogStore) {
    this.groupId = groupId;
    this.#store = store;
    const stored = store.snapshot(groupId);
    invariant(stored !== undefined, () => `group ${groupId}: no stored snapshot`);
    const snapshot = fromStoredSnapshot(stored);
    this.#hardState = store.hardState(groupId) ?? NO_HARD_STATE;
    this.#snapIndex = snapshot.meta.index;
    this.#snapTerm = snapshot.meta.term;
    this.#confState = snapshot.meta.confState;
    this.#lastIndex = this.#snapIndex;
    this.#lastTerm = this.#snapTerm;
    const last = store.lastIndex(groupId);
    this.#writtenLastIndex = this.#snapIndex;
    if (last > this.#snapIndex) {
      for (const entry of store.entries(groupId, last, last + 1)) {
        this.#lastIndex = entry.index;
        this.#lastTerm = entry.term;
      }
    }
    this.#writtenLastIndex = this.#lastIndex;
  }

  // ------------------------------------------------------------------------------ RaftStorage

  initialState(): { readonly hardState: HardState; readonly confState: ConfState } {
    return { hardState: this.#hardState, confState: this.#confState };
  }

  firstIndex(): number {
    return this.#snapIndex + 1;
  }

  lastIndex(): number {
    return this.#lastIndex;
  }

  term(index: number): number {
    if (index === this.#lastIndex) return this.#lastTerm;
    if (index === this.#snapIndex) return this.#snapTerm;
    invariant(
      index > this.#snapIndex && index < this.#lastIndex,
      () => `group ${this.groupId}: term(${index}) outside [${this.#snapIndex}, ${this.#lastIndex}]`,
    );
    const cached = this.#cache[index - this.#cacheFirst];
    if (cached !== undefined && index >= this.#cacheFirst) return cached.term;
    for (const entry of this.#store.entries(this.groupId, index, index + 1)) return entry.term;
    throw new RaftInvariantError(`group ${this.groupId}: entry ${index} missing from the store`);
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    invariant(
      lo > this.#snapIndex && hi <= this.#lastIndex + 1,
      () => `group ${this.groupId}: entries(${lo}, ${hi}) outside (${this.#snapIndex}, ${this.#lastIndex}]`,
    );
    const result: Entry[] = [];
    let bytes = 0;
    let index = lo;
    if (lo < this.#cacheFirst || this.#cache.length === 0) {
      const end = this.#cache.length === 0 ? hi : Math.min(hi, this.#cacheFirst);
      for (const stored of this.#store.entries(this.groupId, lo, end)) {
        invariant(stored.index === index, () => `group ${this.groupId}: stored log has a gap at ${index}`);
        bytes += stored.payload.byteLength;
        if (result.length > 0 && bytes > maxBytes) return result;
        result.push(fromStoredEntry(stored));
        index++;
      }
      invariant(
        index === end,
        () => `group ${this.groupId}: stored log ends at ${index - 1}, not ${end - 1}`,
      );
    }
    for (; index < hi; index++) {
      const entry = this.#cache[index - this.#cacheFirst] as Entry;
      bytes += entry.data.byteLength;
      if (result.length > 0 && bytes > maxBytes) break;
      result.push(entry);
    }
    return result;
  }

  /**
   * The snapshot the core sends to a follower (it asks for it only to send it): the stored one,
   * or what `sendSnapshotsAs` makes of it.
   */
  snapshot(): Snapshot {
    const stored = this.storedSnapshot();
    return this.#outgoing === undefined ? stored : this.#outgoing(stored);
  }

  // ------------------------------------------------------------------------------ writes

  /** The latest snapshot as stored (a compaction's, served from memory until it is durable). */
  storedSnapshot(): Snapshot {
    if (this.#pendingSnapshot !== undefined) return this.#pendingSnapshot;
    const stored = this.#store.snapshot(this.groupId);
    invariant(stored !== undefined, () => `group ${this.groupId}: snapshot missing from the store`);
    return fromStoredSnapshot(stored);
  }

  /**
   * Send followers `extend(stored)` instead of the stored snapshot (same meta). Called each time
   * the core starts a snapshot transfer; the core holds the result until the transfer ends.
   */
  sendSnapshotsAs(extend: (stored: Snapshot) => Snapshot): void {
    this.#outgoing = extend;
  }

  /** The membership as of the latest snapshot. */
  get confState(): ConfState {
    return this.#confState;
  }

  get snapshotIndex(): number {
    return this.#snapIndex;
  }

  /**
   * Queue what the Ready asks to persist (snapshot, then entries, then hard state) in the store's
   * current batch. Returns the batch's promise, or undefined when there was nothing to write.
   */
  write(rd: Ready): Promise<void> | undefined {
    const store = this.#store;
    const groupId = this.groupId;
    let written: Promise<void> | undefined;
    if (rd.snapshot !== undefined) {
      // Replaces the whole stored log.
      handled(store.truncateAfter(groupId, 0));
      written = handled(store.putSnapshot(groupId, ...snapshotArgs(rd.snapshot)));
      this.#writtenLastIndex = rd.snapshot.meta.index;
    }
    const first = rd.entries[0];
    if (first !== undefined) {
      // A follower overwriting a conflicting suffix — stored, or still being written by an earlier
      // Ready: drop everything from the first new entry on (the append alone would too; explicit,
      // since a stale suffix surviving a crash would break log matching).
      if (first.index <= this.#writtenLastIndex && rd.snapshot === undefined) {
        handled(store.truncateAfter(groupId, first.index - 1));
      }
      this.#writtenLastIndex = (rd.entries[rd.entries.length - 1] as Entry).index;
      // One call for the Ready's entries: one promise to handle, not one per entry.
      written = handled(store.appendEntries(groupId, rd.entries.map(toStoredEntry)));
    }
    if (rd.hardState !== undefined) written = handled(store.setHardState(groupId, rd.hardState));
    return written;
  }

  /** The Ready's writes are durable: move the view (cache the new entries). */
  persisted(rd: Ready): void {
    if (rd.snapshot !== undefined) {
      const meta = rd.snapshot.meta;
      this.#snapIndex = meta.index;
      this.#snapTerm = meta.term;
      this.#confState = meta.confState;
      this.#pendingSnapshot = undefined;
      this.#lastIndex = meta.index;
      this.#lastTerm = meta.term;
      this.#cache = [];
      this.#cacheFirst = meta.index + 1;
    }
    const entries = rd.entries;
    const first = entries[0];
    if (first !== undefined) {
      const last = entries[entries.length - 1] as Entry;
      if (this.#cache.length === 0) {
        this.#cacheFirst = first.index;
      } else if (first.index < this.#cacheFirst) {
        this.#cache = [];
        this.#cacheFirst = first.index;
      } else {
        this.#cache.length = first.index - this.#cacheFirst;
      }
      // The store may hold entries before the cache that the cache does not: only a contiguous
      // cache ending at lastIndex is kept, which holds since first.index <= lastIndex + 1.
      for (const entry of entries) this.#cache.push(entry);
      this.#lastIndex = last.index;
      this.#lastTerm = last.term;
    }
    if (rd.hardState !== undefined) this.#hardState = rd.hardState;
  }

  /** Drop cached entries at or below `applied`: they are applied and, if needed again, in the store. */
  trimCache(applied: number): void {
    const drop = applied + 1 - this.#cacheFirst;
    if (drop <= 0) return;
    if (drop >= this.#cache.length) {
      this.#cache = [];
      this.#cacheFirst = applied + 1;
    } else {
      this.#cache.splice(0, drop);
      this.#cacheFirst = applied + 1;
    }
  }

  /**
   * Cut the log at `index` (applied, with term `term`): store `snapshot` and delete the entries it
   * covers, in one batch. Returns the batch's promise. Entries after `index` stay.
   */
  compact(snapshot: Snapshot): Promise<void> {
    const { index, term, confState } = snapshot.meta;
    invariant(
      index > this.#snapIndex && index <= this.#lastIndex,
      () => `group ${this.groupId}: compact(${index}) outside (${this.#snapIndex}, ${this.#lastIndex}]`,
    );
    // Move the view first: from now on the core never asks for the entries being deleted.
    this.#snapIndex = index;
    this.#snapTerm = term;
    this.#confState = confState;
    this.#pendingSnapshot = snapshot;
    this.trimCache(index);
    const stored = handled(this.#store.putSnapshot(this.groupId, ...snapshotArgs(snapshot)));
    handled(this.#store.truncateBefore(this.groupId, index + 1));
    stored.then(
      () => {
        if (this.#pendingSnapshot === snapshot) this.#pendingSnapshot = undefined;
      },
      () => {},
    );
    return stored;
  }
}

function snapshotArgs(snapshot: Snapshot): [{ index: number; term: number; ts: number }, Uint8Array] {
  const stored = toStoredSnapshot(snapshot);
  return [stored.meta, stored.data];
}

/**
 * Mark a store promise as handled and return it. Every write of one batch shares the batch's
 * promise, which the store already guards; but once the store has failed each call returns a fresh
 * rejected promise, and those the caller does not keep must not become unhandled rejections (the
 * failure reaches the group through the promise it does keep).
 */
function handled(written: Promise<void>): Promise<void> {
  written.catch(() => {});
  return written;
}
