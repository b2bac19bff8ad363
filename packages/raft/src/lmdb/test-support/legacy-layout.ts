import type { Database, RootDatabase } from 'lmdb';
import type { StoredEntry } from '../../storage/log-storage.ts';
import { groupPrefix, indexKey } from '../group-keys.ts';
import { LEGACY_ENTRIES_DB } from '../legacy-entry-migration.ts';

/** The `raft-entries` sub-database of the old per-entry layout (created if missing). */
export function legacyEntriesDb(root: RootDatabase): Database<Uint8Array, Uint8Array> {
  return root.openDB({ name: LEGACY_ENTRIES_DB, keyEncoding: 'binary', encoding: 'binary' });
}

/**
 * Write `entries` of `groupId` as the storage did before runs existed: one record per entry,
 * [u16 len][groupId][u64 BE index] → [f64 term][f64 ts][payload]. For migration tests.
 */
export async function writeLegacyEntries(
  root: RootDatabase,
  groupId: string,
  entries: readonly StoredEntry[],
): Promise<void> {
  const db = legacyEntriesDb(root);
  const prefix = groupPrefix(groupId);
  await root.childTransaction(() => {
    for (const entry of entries) {
      const value = Buffer.allocUnsafe(16 + entry.payload.length);
      value.writeDoubleBE(entry.term, 0);
      value.writeDoubleBE(entry.ts, 8);
      value.set(entry.payload, 16);
      db.put(indexKey(prefix, entry.index), value);
    }
  });
}

/** Whether the environment still has a `raft-entries` sub-database. */
export function hasLegacyEntriesDb(root: RootDatabase): boolean {
  const openExisting = {
    name: LEGACY_ENTRIES_DB,
    create: false,
    keyEncoding: 'binary',
    encoding: 'binary',
  } as const;
  return root.openDB(openExisting) !== undefined;
}
