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
 * Attached writes (`kind: 'attached'`, the body store's puts and deletes on the same environment)
 * run inside the batch's child transaction, in batch order: they commit and sync with the batch,
 * so one I/O turn costs one sync, not one for the log and another for the bodies.
 *
 * Key layout (binary keys, so one group's entries are one contiguous, ordered range):
 *   entries      [u16 BE byte length of groupId][groupId UTF-8][u64 BE index]  →  [f64 term][f64 ts][payload]
 *   hard state   [groupId UTF-8]  →  [f64 term][f64 commit][vote UTF-8, absent when no vote]
 *   snapshots    [groupId UTF-8]  →  [f64 index][f64 term][f64 ts][data]
 */

/** Longest group id, in UTF-8 bytes: keeps every key well under LMDB's 1978-byte key limit. */
export const MAX_GROUP_ID_BYTES = 512;
/** Group id prefixes kept encoded (entries); beyond this the cache is cleared and refilled. */
const PREFIX_CACHE_LIMIT = 10_000;
const ENTRY_HEADER_BYTES = 16;
/** Largest entry value assembled in the reused scratch buffer, bytes; larger ones get their own. */
const SCRATCH_MAX_BYTES = 1024 * 1024;
const SNAPSHOT_HEADER_BYTES = 24;
const HARD_STATE_HEADER_BYTES = 16;
/**
 * Widest index span a truncation deletes by computed key, entries; a wider one (only after a gap in
 * a group's log) is deleted by walking its keys instead, so a gap cannot make it loop for long.
 */
const MAX_COMPUTED_DELETE_SPAN = 1_000_000;
/** Larger than any index (indexes stay below 2^53). */
const END_OF_GROUP = 2 ** 53;

const ENTRIES_DB = 'raft-entries';
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
  readonly #entries: Database<Uint8Array, Uint8Array>;
  readonly #hardStates: Database<Uint8Array, Uint8Array>;
  readonly #snapshots: Database<Uint8Array, Uint8Array>;
  readonly #prefixes = new Map<string, Buffer>();
  /** Where entry values are assembled (see `#entryValue`); grows up to `SCRATCH_MAX_BYTES`. */
  #scratch: Buffer = Buffer.alloc(4096);
  /** Why an earlier batch failed: later batches refuse to write (see "Pipelining"). */
  #failure: unknown = undefined;
  #failed = false;

  /**
   * Use the sub-databases of an environment someone else opened (the node shares one environment
   * between the log store and its body store). `ownsRoot` decides whether `close()` closes it.
   */
  constructor(root: RootDatabase, ownsRoot = false) {
    this.#root = root;
    this.#ownsRoot = ownsRoot;
    const binary = { keyEncoding: 'binary', encoding: 'binary' } as const;
    this.#entries = root.openDB({ name: ENTRIES_DB, ...binary });
    this.#hardStates = root.openDB({ name: HARD_STATE_DB, ...binary });
    this.#snapshots = root.openDB({ name: SNAPSHOTS_DB, ...binary });
  }

  /** Open (or create) an environment of its own at `options.path`, with full syncs. */
  static open(options: LmdbLogStorageOptions): LmdbLogStorage {
    // Explicitly durable settings (see the header comment): sync data and meta on every commit.
    const root = open({ path: options.path, noSync: false, noMetaSync: false, useWritemap: false });
    return new LmdbLogStorage(root, true);
  }

  async write(writes: readonly LogWrite[]): Promise<void> {
    // Encode keys and small values first, outside the transaction: a bad group id fails the batch
    // before any of it is written. Entry values are assembled inside (see `#entryValue`).
    const ops: PreparedWrite[] = new Array(writes.length);
    for (let i = 0; i < writes.length; i++) ops[i] = this.#prepare(writes[i] as LogWrite);
    if (this.#failed) throw this.#failure;
    const committed = this.#root.childTransaction(() => {
      if (this.#failed) throw this.#failure;
      try {
        for (const op of ops) this.#apply(op);
      } catch (error) {
        this.#failed = true;
        this.#failure = error;
        throw error;
      }
    });
    try {
      await committed;
    } catch (error) {
      // The transaction failed after its callback ran (the commit itself): fail later batches too.
      if (!this.#failed) {
        this.#failed = true;
        this.#failure = error;
      }
      throw error;
    }
    await this.#root.flushed;
  }

  *entries(groupId: string, fromIndex: number, toIndex = END_OF_GROUP): Iterable<StoredEntry> {
    const prefix = this.#prefix(groupId);
    const range = this.#entries.getRange({
      start: entryKey(prefix, Math.max(0, fromIndex)),
      end: entryKey(prefix, Math.min(toIndex, END_OF_GROUP)),
    });
    for (const { key, value } of range) yield decodeEntry(key, value, prefix.length);
  }

  lastIndex(groupId: string): number {
    const prefix = this.#prefix(groupId);
    for (const key of this.#entries.getKeys({
      start: entryKey(prefix, END_OF_GROUP),
      end: entryKey(prefix, 0),
      reverse: true,
      limit: 1,
    })) {
      return readIndex(key, prefix.length);
    }
    return 0;
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

  #prepare(write: LogWrite): PreparedWrite {
    switch (write.kind) {
      case 'append':
        // The value ([term][ts][payload]) is assembled inside the transaction, in a reused buffer.
        return {
          kind: 'append',
          key: entryKey(this.#prefix(write.groupId), write.entry.index),
          entry: write.entry,
        };
      case 'truncateBefore': {
        const prefix = this.#prefix(write.groupId);
        return {
          kind: 'removeRange',
          start: entryKey(prefix, 0),
          end: entryKey(prefix, Math.max(0, write.index)),
        };
      }
      case 'truncateAfter': {
        const prefix = this.#prefix(write.groupId);
        return {
          kind: 'removeRange',
          start: entryKey(prefix, Math.max(0, write.index + 1)),
          end: entryKey(prefix, END_OF_GROUP),
        };
      }
      case 'hardState': {
        const { term, commit, vote } = write.state;
        const voteBytes = vote === undefined ? undefined : Buffer.from(vote, 'utf8');
        const value = Buffer.allocUnsafe(HARD_STATE_HEADER_BYTES + (voteBytes?.length ?? 0));
        value.writeDoubleBE(term, 0);
        value.writeDoubleBE(commit, 8);
        voteBytes?.copy(value, HARD_STATE_HEADER_BYTES);
        return { kind: 'put', db: this.#hardStates, key: groupIdKey(write.groupId), value };
      }
      case 'snapshot': {
        const { meta, data } = write.snapshot;
        const value = Buffer.allocUnsafe(SNAPSHOT_HEADER_BYTES + data.length);
        value.writeDoubleBE(meta.index, 0);
        value.writeDoubleBE(meta.term, 8);
        value.writeDoubleBE(meta.ts, 16);
        value.set(data, SNAPSHOT_HEADER_BYTES);
        return { kind: 'put', db: this.#snapshots, key: groupIdKey(write.groupId), value };
      }
      case 'attached':
        return write;
      case 'deleteGroup': {
        const prefix = this.#prefix(write.groupId);
        this.#prefixes.delete(write.groupId);
        return {
          kind: 'deleteGroup',
          start: entryKey(prefix, 0),
          end: entryKey(prefix, END_OF_GROUP),
          groupKey: groupIdKey(write.groupId),
        };
      }
    }
  }

  /** Runs inside the batch's write transaction; reads here see the batch's earlier writes. */
  #apply(op: PreparedWrite): void {
    switch (op.kind) {
      case 'append':
        this.#entries.put(op.key, this.#entryValue(op.entry));
        return;
      case 'put':
        op.db.put(op.key, op.value);
        return;
      case 'removeRange':
        this.#removeEntries(op.start, op.end);
        return;
      case 'deleteGroup':
        this.#removeEntries(op.start, op.end);
        this.#hardStates.remove(op.groupKey);
        this.#snapshots.remove(op.groupKey);
        return;
      case 'attached':
        op.write.apply();
        return;
    }
  }

  /**
   * Delete the entries with keys in [start, end) (one group's range). A group's entries are
   * contiguous in index (appends extend the log, truncations cut a prefix or a suffix), so two
   * cursor reads find the first and last index present and the keys in between are deleted by
   * computed key, reusing one key buffer (inside a transaction lmdb-js copies the key into its
   * instruction before returning): no cursor walk and no key allocated per entry. A span wider than
   * `MAX_COMPUTED_DELETE_SPAN` (possible only if something left a gap) is walked with a cursor.
   */
  #removeEntries(start: Buffer, end: Buffer): void {
    const entries = this.#entries;
    let firstKey: Uint8Array | undefined;
    for (const key of entries.getKeys({ start, end, limit: 1 })) firstKey = key;
    if (firstKey === undefined) return;
    const prefixLength = start.length - 8;
    const first = readIndex(firstKey, prefixLength);
    // The last key below `end`; lmdb-js's reverse range may include its start key (`end` here) and
    // excludes its end key (`start`), so clamp to the range rather than rely on either bound.
    let last = first;
    for (const key of entries.getKeys({ start: end, end: start, reverse: true, limit: 1 })) {
      last = Math.max(first, Math.min(readIndex(key, prefixLength), readIndex(end, prefixLength) - 1));
    }
    if (last - first >= MAX_COMPUTED_DELETE_SPAN) {
      // Collect first: deleting under a live cursor is not something to rely on.
      const keys: Uint8Array[] = [];
      for (const key of entries.getKeys({ start, end })) keys.push(key);
      for (const key of keys) entries.remove(key);
      return;
    }
    const key = Buffer.from(start);
    for (let index = first; index <= last; index++) {
      writeIndex(key, prefixLength, index);
      entries.remove(key);
    }
  }

  /**
   * [f64 term][f64 ts][payload] of `entry`, in the scratch buffer when it fits: inside a write
   * transaction lmdb-js hands the value's address to LMDB, which copies it into its page before
   * `put` returns, so one buffer serves every entry of every batch — no allocation per entry.
   * Valid only until the next call.
   */
  #entryValue(entry: StoredEntry): Buffer {
    const length = ENTRY_HEADER_BYTES + entry.payload.length;
    let value: Buffer;
    if (length <= SCRATCH_MAX_BYTES) {
      if (this.#scratch.length < length) {
        this.#scratch = Buffer.alloc(Math.min(SCRATCH_MAX_BYTES, Math.max(length, 2 * this.#scratch.length)));
      }
      value = this.#scratch.subarray(0, length);
    } else {
      value = Buffer.allocUnsafe(length);
    }
    value.writeDoubleBE(entry.term, 0);
    value.writeDoubleBE(entry.ts, 8);
    value.set(entry.payload, ENTRY_HEADER_BYTES);
    return value;
  }

  /** [u16 BE length][groupId UTF-8], cached: every entry key of a group starts with it. */
  #prefix(groupId: string): Buffer {
    let prefix = this.#prefixes.get(groupId);
    if (prefix === undefined) {
      const id = groupIdKey(groupId);
      prefix = Buffer.allocUnsafe(2 + id.length);
      prefix.writeUInt16BE(id.length, 0);
      id.copy(prefix, 2);
      if (this.#prefixes.size >= PREFIX_CACHE_LIMIT) this.#prefixes.clear();
      this.#prefixes.set(groupId, prefix);
    }
    return prefix;
  }
}

type PreparedWrite =
  | { readonly kind: 'append'; readonly key: Buffer; readonly entry: StoredEntry }
  | {
      readonly kind: 'put';
      readonly db: Database<Uint8Array, Uint8Array>;
      readonly key: Buffer;
      readonly value: Buffer;
    }
  | { readonly kind: 'removeRange'; readonly start: Buffer; readonly end: Buffer }
  | { readonly kind: 'deleteGroup'; readonly start: Buffer; readonly end: Buffer; readonly groupKey: Buffer }
  | { readonly kind: 'attached'; readonly write: AttachedWrite };

function groupIdKey(groupId: string): Buffer {
  const key = Buffer.from(groupId, 'utf8');
  if (key.length === 0 || key.length > MAX_GROUP_ID_BYTES) {
    throw new RangeError(`group id must be 1..${MAX_GROUP_ID_BYTES} UTF-8 bytes, got ${key.length}`);
  }
  return key;
}

function entryKey(prefix: Buffer, index: number): Buffer {
  const key = Buffer.allocUnsafe(prefix.length + 8);
  prefix.copy(key, 0);
  writeIndex(key, prefix.length, index);
  return key;
}

function writeIndex(key: Buffer, prefixLength: number, index: number): void {
  // u64 big-endian from a safe integer: high 32 bits, then low 32 bits, so byte order = index order.
  key.writeUInt32BE(Math.floor(index / 0x1_0000_0000), prefixLength);
  key.writeUInt32BE(index >>> 0, prefixLength + 4);
}

function readIndex(key: Uint8Array, prefixLength: number): number {
  const view = viewOf(key);
  return view.getUint32(prefixLength) * 0x1_0000_0000 + view.getUint32(prefixLength + 4);
}

function decodeEntry(key: Uint8Array, value: Uint8Array, prefixLength: number): StoredEntry {
  const view = viewOf(value);
  return {
    index: readIndex(key, prefixLength),
    term: view.getFloat64(0),
    ts: view.getFloat64(8),
    payload: value.subarray(ENTRY_HEADER_BYTES),
  };
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
