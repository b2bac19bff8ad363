import type { RootDatabase } from 'lmdb';
import { RunCursor } from '../entry-run.ts';
import { END_OF_GROUP, groupPrefix, indexKey, readIndex } from '../group-keys.ts';
import { ENTRY_RUNS_DB } from '../lmdb-log-storage.ts';

/** One stored run as the database holds it: its key's first index and its entry count. */
export interface RunRecord {
  readonly first: number;
  readonly count: number;
}

/** The runs records of `groupId`, in key order, read straight from the database (for tests). */
export function runRecords(root: RootDatabase, groupId: string): RunRecord[] {
  const db = root.openDB<Uint8Array, Uint8Array>({
    name: ENTRY_RUNS_DB,
    keyEncoding: 'binary',
    encoding: 'binary',
  });
  const prefix = groupPrefix(groupId);
  const records: RunRecord[] = [];
  for (const { key, value } of db.getRange({ start: prefix, end: indexKey(prefix, END_OF_GROUP) })) {
    const first = readIndex(key, prefix.length);
    records.push({ first, count: new RunCursor(value, groupId, first).count });
  }
  return records;
}
