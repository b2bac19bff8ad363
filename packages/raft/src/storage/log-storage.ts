import type { EntryMeta } from '../replicated-log.ts';

/**
 * The durable part of a node's log store, kept small so that tests and simulations can substitute
 * it (a double that withholds the sync, an in-memory store that "crashes"). `LogStore` does the
 * group commit on top; implementations only have to make one batch durable at a time.
 */

/** One log entry as stored: where it sits, the leader's stamp, and the command's encoded bytes. */
export interface StoredEntry extends EntryMeta {
  readonly payload: Uint8Array;
}

/** What a Raft replica must persist beside its entries before it answers a vote or an append. */
export interface HardState {
  readonly term: number;
  /** The node voted for in `term`, if any. */
  readonly vote: string | undefined;
  readonly commit: number;
}

/** The machine's state as of `meta.index` (the latest one kept per group; older ones are replaced). */
export interface StoredSnapshot {
  readonly meta: EntryMeta;
  readonly data: Uint8Array;
}

/**
 * One change in a batch. A batch applies its writes in order, all or none. (A storage may apply a
 * group's appends together, ahead of writes that do not touch that group's entries — other groups',
 * hard states, snapshots, attached writes: the outcome is the same.)
 */
export type LogWrite =
  /**
   * Append an entry at `entry.index` as Raft appends (etcd's `MemoryStorage.Append`): every stored
   * entry of the group with index >= `entry.index` is discarded first, then the entry is stored —
   * so an append at an index already stored replaces that entry AND drops every later one (a Raft
   * log never keeps entries after one it replaced: they followed the replaced entry, not this one).
   * Entries below `entry.index` stay, also when that leaves a gap (`entry.index` > last + 1).
   */
  | { readonly kind: 'append'; readonly groupId: string; readonly entry: StoredEntry }
  /** Delete every entry with index < `index` (behind a snapshot). */
  | { readonly kind: 'truncateBefore'; readonly groupId: string; readonly index: number }
  /** Delete every entry with index > `index` (a Raft follower dropping a conflicting suffix). */
  | { readonly kind: 'truncateAfter'; readonly groupId: string; readonly index: number }
  | { readonly kind: 'hardState'; readonly groupId: string; readonly state: HardState }
  /** Replace the group's snapshot. Entries are not touched: truncate separately, in the same batch. */
  | { readonly kind: 'snapshot'; readonly groupId: string; readonly snapshot: StoredSnapshot }
  /** Delete the group's entries, hard state and snapshot. */
  | { readonly kind: 'deleteGroup'; readonly groupId: string }
  /** Writes of another store sharing the storage's transaction; see `AttachedWrite`. */
  | { readonly kind: 'attached'; readonly write: AttachedWrite };

/**
 * Writes of another store that must become durable in the same transaction (so with the same sync)
 * as a batch of the log store — the node's body store on the same LMDB environment. The storage
 * calls `apply` once while it applies the batch: inside the batch's transaction for
 * `LmdbLogStorage`, when the batch lands for the in-memory doubles. `apply` may only write to what
 * the storage's transaction covers, and must not read this storage's entries (the batch's appends
 * may be applied before or after it; see `LogWrite`); if it throws, the batch fails.
 */
export interface AttachedWrite {
  apply(): void;
}

export interface LogStorage {
  /**
   * Apply `writes` in order, atomically, and make them durable. Resolves ONLY once the sync covering
   * them has completed: a confirm, a vote or an append-ack may be released on that resolution, so
   * resolving earlier loses acknowledged data on a crash. Rejects if the batch may not be durable.
   * The caller may hand over the next batch before this one resolved (`LogStore` pipelines a few):
   * batches must be applied in call order, and once a batch failed no later batch may be applied
   * (a later batch durable behind a lost one would leave a hole in a group's log).
   */
  write(writes: readonly LogWrite[]): Promise<void>;

  /**
   * The group's entries with `fromIndex <= index < toIndex` (to the end when `toIndex` is omitted),
   * in index order. Reflects every write whose promise has resolved. Iterate it synchronously: a
   * write completing in between may or may not be seen.
   */
  entries(groupId: string, fromIndex: number, toIndex?: number): Iterable<StoredEntry>;

  /** The highest stored entry index of the group, or 0 when it has none. */
  lastIndex(groupId: string): number;

  hardState(groupId: string): HardState | undefined;

  snapshot(groupId: string): StoredSnapshot | undefined;

  /** Release the underlying resources. Called once, with no batch in flight. */
  close(): Promise<void>;
}
