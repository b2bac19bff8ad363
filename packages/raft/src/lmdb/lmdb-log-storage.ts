import type { Database, RootDatabase } from 'lmdb';
import { open } from 'lmdb';
import type { EntryMeta } from '../replicated-log.ts';
import type {
  AttachedWrite,
  HardState,
  LogStorage,
  LogWrite,
  StoredEntry,
  StoredSnapshot,
} from '../storage/log-storage.ts';
import { RUN_HEADER_BYTES, runCanTake, runEntryBytes } from './entry-run.ts';
import { EntryRuns } from './entry-runs.ts';
import { END_OF_GROUP, groupIdKey, viewOf } from './group-keys.ts';
import { migrateLegacyEntries } from './legacy-entry-migration.ts';

export { MAX_GROUP_ID_BYTES } from './group-keys.ts';

/*
 * What lmdb-js (v3.5) promises, read from its write.js, open.js and src/writer.cpp, and checked
 * with strace (fdatasync vs. promise resolution):
 *
 * - The promise returned by `put`/`remove`/`transaction`/`childTransaction` ("committed") is
 *   DOCUMENTED to resolve when the transaction is committed and visible to readers, not when it is
 *   on disk. (In 3.5.6 the writer thread happens to set TXN_COMMITTED only after mdb_txn_commit
 *   returned, which includes the fdatasync in both sync modes — but that is an implementation
 *   detail.) It REJECTS when the transaction failed or a transaction callback threw.
 * - `db.flushed` resolves when every earlier write is committed AND flushed (fdatasync'd). It is
 *   built from promises that never reject, so it says nothing about failure.
 * - `overlappingSync` (default on except on Windows): the commit releases LMDB's write lock before
 *   it fsyncs, so the next transaction can write while the previous one syncs; the meta page of an
 *   unsynced commit is flagged and, after an OS crash (new boot id), LMDB falls back to the last
 *   flushed one. With `separateFlushed` each write promise also carries its own `.flushed`.
 * - `noSync`: never fsync — nothing is durable; `noMetaSync`: the meta page is not synced, so the
 *   last commits may be lost after an OS crash. Neither may be set on an environment used here.
 * - `commitDelay` (ms, default 0 = setImmediate) and `eventTurnBatching` (default on) decide how
 *   implicit async `put`s are grouped into transactions. We do not rely on them: `LogStore` forms
 *   the batch, and each batch is one explicit (child) transaction.
 *
 * So a batch is durable only after BOTH: the transaction promise resolved (it committed, it did not
 * fail) and then `flushed` resolved (it is on disk, by the documented guarantee). `write` waits for
 * both before resolving; that is what lets a confirm leave the node. The second wait costs one
 * microtask hop when the commit promise already implied the sync.
 *
 * Pipelining: `LogStore` hands over the next batch while the previous one still syncs. lmdb-js runs
 * transaction callbacks in call order, and with overlapping sync the next commit proceeds while the
 * previous commit's fsync runs; `flushed` read after a later commit covers it and every earlier one.
 * A batch whose callback threw marks this storage failed, and every later callback throws before
 * writing anything: no batch commits behind a lost one.
 *
 * Atomicity: the batch runs in `childTransaction`, which lmdb-js aborts as a whole if the callback
 * throws (a plain `transaction` would commit the writes made before the throw). Child transactions
 * do not work with `useWritemap`, so the environment must not use it either.
 *
 * Entries are stored in RUNS (entry-run.ts, entry-runs.ts): a batch's consecutive appends of one
 * group become one LMDB record (split at `MAX_RUN_ENTRIES` / `MAX_RUN_BYTES`), because LMDB's cost
 * (and lmdb-js's, on the main thread inside the transaction callback) is mostly per operation. To
 * form them, a group's appends are gathered into the run of its first one, so they are applied at
 * that one's place in the batch: ahead of other groups' writes, of attached writes and of the
 * group's own hard state and snapshot, none of which touch its entries; a truncation or deletion of
 * the group ends the run, so everything that reads or cuts its entries still sees batch order.
 *
 * Attached writes (`kind: 'attached'`, the body store's puts and deletes on the same environment)
 * run inside the batch's child transaction: they commit and sync with the batch, so one I/O turn
 * costs one sync, not one for the log and another for the bodies.
 *
 * This storage must be the only writer of its sub-databases (`EntryRuns` keeps each group's last
 * index for the write path); one `LmdbLogStorage` per environment.
 *
 * Key layout (binary keys, so one group's records are one contiguous, ordered range):
 *   runs         [u16 BE byte length of groupId][groupId UTF-8][u64 BE first index]  →  run (entry-run.ts)
 *   hard state   [groupId UTF-8]  →  [f64 term][f64 commit][vote UTF-8, absent when no vote]
 *   snapshots    [groupId UTF-8]  →  [f64 index][f64 term][f64 ts][data]
 * Environments written before runs existed hold one record per entry in `raft-entries`; opening
 * the storage moves them into runs first (legacy-entry-migration.ts).
 */

const SNAPSHOT_HEADER_BYTES = 24;
const HARD_STATE_HEADER_BYTES = 16;

/** The sub-database of the entry runs (`raft-entries` held one record per entry before). */
export const ENTRY_RUNS_DB = 'raft-runs';
const HARD_STATE_DB = 'raft-hard-state';
const SNAPSHOTS_DB = 'raft-snapshots';

export interface LmdbLogStorageOptions {
  /** A directory for the node's LMDB environment; created if missing. */
  readonly path: string;
}

/** `LogStorage` on LMDB: one environment (the node's), three sub-databases. */
export class LmdbLogStorage implements LogStorage {
  readonly #root: RootDatabase;
  readonly #ownsRoot: boolean;
  readonly #runs: EntryRuns;
  readonly #hardStates: Database<Uint8Array, Uint8Array>;
  readonly #snapshots: Database<Uint8Array, Uint8Array>;
  /** The run each group's appends join while a batch is prepared (see `#prepare`); empty between. */
  readonly #openRuns = new Map<string, RunWrite>();
  /** Why an earlier batch failed: later batches refuse to write (see "Pipelining"). */
  #failure: unknown = undefined;
  #failed = false;

  /**
   * Use the sub-databases of an environment someone else opened (the node shares one environment
   * between the log store and its body store). `ownsRoot` decides whether `close()` closes it.
   * Moves entries of the old per-entry layout into runs first, synchronously (see
   * legacy-entry-migration.ts); throws if that fails.
   */
  constructor(root: RootDatabase, ownsRoot = false) {
    this.#root = root;
    this.#ownsRoot = ownsRoot;
    const binary = { keyEncoding: 'binary', encoding: 'binary' } as const;
    this.#runs = new EntryRuns(root.openDB({ name: ENTRY_RUNS_DB, ...binary }));
    this.#hardStates = root.openDB({ name: HARD_STATE_DB, ...binary });
    this.#snapshots = root.openDB({ name: SNAPSHOTS_DB, ...binary });
    migrateLegacyEntries(root, this.#runs);
  }

  /** Open (or create) an environment of its own at `options.path`, with full syncs. */
  static open(options: LmdbLogStorageOptions): LmdbLogStorage {
    // Explicitly durable settings (see the header comment): sync data and meta on every commit.
    const root = open({ path: options.path, noSync: false, noMetaSync: false, useWritemap: false });
    try {
      return new LmdbLogStorage(root, true);
    } catch (error) {
      root.close().catch(() => {});
      throw error;
    }
  }

  async write(writes: readonly LogWrite[]): Promise<void> {
    // Encode keys and small values and form the runs first, outside the transaction: a bad group
    // id fails the batch before any of it is written. Run values are assembled inside.
    const ops = this.#prepare(writes);
    if (this.#failed) throw this.#failure;
    const committed = this.#root.childTransaction(() => {
      if (this.#failed) throw this.#failure;
      try {
        for (const op of ops) this.#apply(op);
      } catch (error) {
        this.#fail(error);
        throw error;
      }
    });
    try {
      await committed;
    } catch (error) {
      // The transaction failed after its callback ran (the commit itself): fail later batches too.
      if (!this.#failed) this.#fail(error);
      throw error;
    }
    await this.#root.flushed;
  }

  entries(groupId: string, fromIndex: number, toIndex = END_OF_GROUP): Iterable<StoredEntry> {
    return this.#runs.entries(groupId, fromIndex, toIndex);
  }

  lastIndex(groupId: string): number {
    return this.#runs.lastIndex(groupId);
  }

  hardState(groupId: string): HardState | undefined {
    const value = this.#hardStates.get(groupIdKey(groupId));
    if (value === undefined) return undefined;
    const view = viewOf(value);
    const vote =
      value.length > HARD_STATE_HEADER_BYTES
        ? Buffer.from(value.buffer, value.byteOffset + HARD_STATE_HEADER_BYTES).toString('utf8')
        : undefined;
    return { term: view.getFloat64(0), commit: view.getFloat64(8), vote };
  }

  snapshot(groupId: string): StoredSnapshot | undefined {
    const value = this.#snapshots.get(groupIdKey(groupId));
    if (value === undefined) return undefined;
    const view = viewOf(value);
    const meta: EntryMeta = { index: view.getFloat64(0), term: view.getFloat64(8), ts: view.getFloat64(16) };
    return { meta, data: value.subarray(SNAPSHOT_HEADER_BYTES) };
  }

  async close(): Promise<void> {
    if (this.#ownsRoot) await this.#root.close();
  }

  /**
   * The batch as operations to apply in order. A group's appends with consecutive indexes join the
   * run of the first of them (`#openRuns`) until the run is full, an index breaks the sequence, or
   * a truncation or deletion of the group ends it; see "Entries are stored in RUNS" above.
   */
  #prepare(writes: readonly LogWrite[]): PreparedWrite[] {
    const ops: PreparedWrite[] = [];
    const openRuns = this.#openRuns;
    const runs = this.#runs;
    try {
      for (const write of writes) {
        switch (write.kind) {
          case 'append': {
            const { groupId, entry } = write;
            const length = entry.payload.length;
            const run = openRuns.get(groupId);
            if (
              run !== undefined &&
              entry.index === run.last + 1 &&
              runCanTake(run.entries.length, run.bytes, length)
            ) {
              run.entries.push(entry);
              run.bytes += runEntryBytes(length);
              run.last = entry.index;
            } else {
              const started: RunWrite = {
                kind: 'run',
                groupId,
                prefix: runs.prefix(groupId),
                entries: [entry],
                bytes: RUN_HEADER_BYTES + runEntryBytes(length),
                last: entry.index,
              };
              ops.push(started);
              openRuns.set(groupId, started);
            }
            break;
          }
          case 'truncateBefore':
          case 'truncateAfter': {
            const { kind, groupId, index } = write;
            openRuns.delete(groupId);
            ops.push({ kind, groupId, prefix: runs.prefix(groupId), index });
            break;
          }
          case 'hardState': {
            const { term, commit, vote } = write.state;
            const voteBytes = vote === undefined ? undefined : Buffer.from(vote, 'utf8');
            const value = Buffer.allocUnsafe(HARD_STATE_HEADER_BYTES + (voteBytes?.length ?? 0));
            value.writeDoubleBE(term, 0);
            value.writeDoubleBE(commit, 8);
            voteBytes?.copy(value, HARD_STATE_HEADER_BYTES);
            ops.push({ kind: 'put', db: this.#hardStates, key: groupIdKey(write.groupId), value });
            break;
          }
          case 'snapshot': {
            const { meta, data } = write.snapshot;
            const value = Buffer.allocUnsafe(SNAPSHOT_HEADER_BYTES + data.length);
            value.writeDoubleBE(meta.index, 0);
            value.writeDoubleBE(meta.term, 8);
            value.writeDoubleBE(meta.ts, 16);
            value.set(data, SNAPSHOT_HEADER_BYTES);
            ops.push({ kind: 'put', db: this.#snapshots, key: groupIdKey(write.groupId), value });
            break;
          }
          case 'attached':
            ops.push(write);
            break;
          case 'deleteGroup': {
            const { groupId } = write;
            openRuns.delete(groupId);
            const prefix = runs.prefix(groupId);
            runs.forgetPrefix(groupId);
            ops.push({ kind: 'deleteGroup', groupId, prefix, groupKey: groupIdKey(groupId) });
            break;
          }
        }
      }
    } finally {
      openRuns.clear();
    }
    return ops;
  }

  /** Runs inside the batch's write transaction; reads here see the batch's earlier writes. */
  #apply(op: PreparedWrite): void {
    const runs = this.#runs;
    switch (op.kind) {
      case 'run':
        runs.append(op.groupId, op.prefix, op.entries);
        return;
      case 'truncateBefore':
        runs.truncateBefore(op.groupId, op.prefix, op.index);
        return;
      case 'truncateAfter':
        runs.truncateAfter(op.groupId, op.prefix, op.index);
        return;
      case 'put':
        op.db.put(op.key, op.value);
        return;
      case 'deleteGroup':
        runs.deleteAll(op.groupId, op.prefix);
        this.#hardStates.remove(op.groupKey);
        this.#snapshots.remove(op.groupKey);
        return;
      case 'attached':
        op.write.apply();
        return;
    }
  }

  #fail(error: unknown): void {
    this.#failed = true;
    this.#failure = error;
    // The failed transaction's writes were rolled back: what the runs recorded of them is wrong.
    this.#runs.forgetTails();
  }
}

/** Consecutive entries of one group that become one run (one record). */
interface RunWrite {
  readonly kind: 'run';
  readonly groupId: string;
  readonly prefix: Buffer;
  readonly entries: StoredEntry[];
  /** Value bytes of the run so far. */
  bytes: number;
  /** Index of the run's last entry so far. */
  last: number;
}

type PreparedWrite =
  | RunWrite
  | {
      readonly kind: 'truncateBefore' | 'truncateAfter';
      readonly groupId: string;
      readonly prefix: Buffer;
      readonly index: number;
    }
  | {
      readonly kind: 'put';
      readonly db: Database<Uint8Array, Uint8Array>;
      readonly key: Buffer;
      readonly value: Buffer;
    }
  | {
      readonly kind: 'deleteGroup';
      readonly groupId: string;
      readonly prefix: Buffer;
      readonly groupKey: Buffer;
    }
  | { readonly kind: 'attached'; readonly write: AttachedWrite };
