import type { Database, RootDatabase } from 'lmdb';
import { LogCorruptedError } from '../errors.ts';
import type { StoredEntry } from '../storage/log-storage.ts';
import { RUN_HEADER_BYTES, runCanTake, runEntryBytes } from './entry-run.ts';
import type { EntryRuns } from './entry-runs.ts';
import { INDEX_BYTES, readIndex, viewOf } from './group-keys.ts';

/*
 * Moves the log entries of an environment written before runs existed (the node's storage format
 * 2) into runs. The old layout, one record per entry in the `raft-entries` sub-database:
 *
 *   [u16 BE byte length of groupId][groupId UTF-8][u64 BE index]  →  [f64 term][f64 ts][payload]
 *
 * Runs when the log storage opens, before anything reads or writes the log. In chunks of at most
 * `MIGRATION_CHUNK_ENTRIES` records (and about `MIGRATION_CHUNK_BYTES`), taken in key order — one
 * group after the other, each from its lowest index — each chunk ONE transaction that writes the
 * chunk's entries as runs and deletes their old records. So every entry is, in every committed
 * state, in exactly one of the two databases, and whatever is left in `raft-entries` lies above
 * what its group has in runs: a migration interrupted at any point (a crash, a failed
 * transaction) loses nothing and the next open carries on where it stopped. Once `raft-entries`
 * is empty it is dropped, so later opens find nothing to do.
 */

/** The sub-database of the per-entry records of the old layout. */
export const LEGACY_ENTRIES_DB = 'raft-entries';
/** Old records moved per transaction, at most. */
export const MIGRATION_CHUNK_ENTRIES = 8_192;
/** Value bytes of old records moved per transaction, about (a chunk stops at the first record reaching it). */
export const MIGRATION_CHUNK_BYTES = 32 * 1024 * 1024;
/** Bytes before the payload in an old record's value: term, ts. */
const LEGACY_ENTRY_HEADER_BYTES = 16;

export interface LegacyEntryMigrationOptions {
  /** Old records moved per transaction, at most (default `MIGRATION_CHUNK_ENTRIES`). */
  readonly chunkEntries?: number;
  /** Called after each committed chunk with the records moved so far (tests interrupt here). */
  readonly afterChunk?: (moved: number) => void;
}

/**
 * Move every old per-entry record of `root` into `runs`; returns how many were moved (0 when the
 * environment has no `raft-entries`). Throws `LogCorruptedError` on a record it cannot read; the
 * chunks committed before stay committed.
 */
export function migrateLegacyEntries(
  root: RootDatabase,
  runs: EntryRuns,
  options: LegacyEntryMigrationOptions = {},
): number {
  // `create: false` (lmdb-js reads it, its types do not list it): undefined when it is absent.
  const openExisting = {
    name: LEGACY_ENTRIES_DB,
    create: false,
    keyEncoding: 'binary',
    encoding: 'binary',
  } as const;
  const legacy = root.openDB(openExisting) as Database<Uint8Array, Uint8Array> | undefined;
  if (legacy === undefined) return 0;
  const chunkEntries = Math.max(1, options.chunkEntries ?? MIGRATION_CHUNK_ENTRIES);
  let moved = 0;
  for (;;) {
    let chunk: number;
    try {
      chunk = root.transactionSync(() => moveChunk(legacy, runs, chunkEntries));
    } catch (error) {
      runs.forgetTails(); // the chunk's transaction was rolled back
      throw error;
    }
    if (chunk === 0) break;
    moved += chunk;
    options.afterChunk?.(moved);
  }
  legacy.dropSync();
  return moved;
}

/** One chunk, inside its transaction: the first old records, as runs; returns how many. */
function moveChunk(legacy: Database<Uint8Array, Uint8Array>, runs: EntryRuns, maxEntries: number): number {
  const keys: Uint8Array[] = [];
  let bytes = 0;
  let run: StoredEntry[] = [];
  let runBytes = RUN_HEADER_BYTES;
  let runGroup = '';
  let runPrefix: Buffer = Buffer.alloc(0);
  const flush = (): void => {
    if (run.length > 0) runs.append(runGroup, runPrefix, run);
    run = [];
    runBytes = RUN_HEADER_BYTES;
  };
  for (const { key, value } of legacy.getRange({ limit: maxEntries })) {
    keys.push(key);
    const { groupId, prefix, entry } = decodeLegacyRecord(key, value);
    const last = run[run.length - 1];
    const continuesRun =
      last !== undefined &&
      groupId === runGroup &&
      entry.index === last.index + 1 &&
      runCanTake(run.length, runBytes, entry.payload.length);
    if (!continuesRun) {
      flush();
      runGroup = groupId;
      runPrefix = prefix;
    }
    run.push(entry);
    runBytes += runEntryBytes(entry.payload.length);
    bytes += value.length;
    if (bytes >= MIGRATION_CHUNK_BYTES) break;
  }
  flush();
  for (const key of keys) legacy.remove(key);
  return keys.length;
}

function decodeLegacyRecord(
  key: Uint8Array,
  value: Uint8Array,
): { groupId: string; prefix: Buffer; entry: StoredEntry } {
  const idLength = key.length >= 2 ? viewOf(key).getUint16(0) : 0;
  const prefixLength = 2 + idLength;
  if (idLength === 0 || key.length !== prefixLength + INDEX_BYTES) {
    throw new LogCorruptedError('(unreadable id)', `old entry key of ${key.length} bytes`);
  }
  const groupId = Buffer.from(key.buffer, key.byteOffset + 2, idLength).toString('utf8');
  const index = readIndex(key, prefixLength);
  if (value.length < LEGACY_ENTRY_HEADER_BYTES) {
    throw new LogCorruptedError(groupId, `old entry ${index}: value of ${value.length} bytes`);
  }
  const valueView = viewOf(value);
  return {
    groupId,
    // The stored prefix bytes themselves: the runs keep exactly the keys' group.
    prefix: Buffer.from(key.subarray(0, prefixLength)),
    entry: {
      index,
      term: valueView.getFloat64(0),
      ts: valueView.getFloat64(8),
      payload: value.subarray(LEGACY_ENTRY_HEADER_BYTES),
    },
  };
}
