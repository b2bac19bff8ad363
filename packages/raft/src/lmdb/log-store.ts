import type { RootDatabase } from 'lmdb';
import { LogStore } from '../storage/log-store.ts';
import { LmdbLogStorage } from './lmdb-log-storage.ts';

// Which lmdb-js promise a batch waits for before its confirms leave (the transaction's, then
// `flushed`), and why: see the header of lmdb-log-storage.ts.

/**
 * Open the node's log store in `dataDir` (an LMDB environment of its own). When the node already
 * has an environment for its data dir, use `logStoreOnEnvironment` instead so that the log store,
 * the body store and snapshots share it.
 */
export function openLogStore(dataDir: string): LogStore {
  return new LogStore(LmdbLogStorage.open({ path: dataDir }));
}

/**
 * A log store in an environment the caller opened and will close. It must be opened with syncs on
 * (no `noSync`, no `noMetaSync`) and without `useWritemap`; see lmdb-log-storage.ts.
 */
export function logStoreOnEnvironment(root: RootDatabase): LogStore {
  return new LogStore(new LmdbLogStorage(root, false));
}
