/**
 * Gives a drained data directory's disk space back when the node starts (issue 28 item 7).
 *
 * While a node runs, LMDB reuses the pages that deletes free (its freelist): log runs truncated by
 * a compaction and bodies of settled messages make room for the next ones, so a node publishing
 * and draining in cycles stops growing after the first cycle. But LMDB never shrinks its file: a
 * node drained of 1M messages keeps a 2 GB `data.mdb` for an empty queue. The only way to give the
 * space back is a compacting copy (`mdb_env_copy2` with `MDB_CP_COMPACT`, which writes the live
 * pages only), and the only safe time to swap it in is before the environment is opened for
 * writing: at start, holding the data dir's lock. It runs when free pages are at least half of the
 * file and at least `MIN_FREE_BYTES`; its cost is a read and a write of the live pages (at most
 * half the file), so a start with a deep queue and little free space never pays it.
 *
 * Crash safety: the copy is written and synced beside the environment, then renamed over
 * `data.mdb` (atomic), and the directory synced; a crash before the rename leaves the old file and
 * a leftover copy, which the next start removes.
 */
import { mkdir, open as openFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { open } from 'lmdb';
import type { StorageLogger } from './storage-logger.ts';

/** Free space below which a start does not compact, bytes. */
export const MIN_FREE_BYTES = 64 * 1024 * 1024;
/** Where the compacting copy is written, inside the environment's directory. */
export const COMPACT_DIR = 'compacting';

/** Pages of the environment's file, and those holding data (every database, the freelist too). */
export interface PageUse {
  readonly pageSize: number;
  readonly filePages: number;
  readonly usedPages: number;
}

interface PageStats {
  readonly pageSize: number;
  readonly treeBranchPageCount: number;
  readonly treeLeafPageCount: number;
  readonly overflowPages: number;
}

const pagesOf = (s: PageStats): number => s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages;

/** The page use of `root`'s environment (its named databases are the main database's keys). */
export function pageUse(root: RootDatabase): PageUse {
  const stats = root.getStats() as PageStats & {
    readonly root: PageStats;
    readonly free: PageStats;
    readonly lastPageNumber: number;
  };
  // Pages 0 and 1 are LMDB's meta pages.
  let usedPages = 2 + pagesOf(stats.root) + pagesOf(stats.free);
  for (const name of root.getKeys({ snapshot: false })) {
    if (typeof name !== 'string') continue;
    const db = root.openDB({ name, keyEncoding: 'binary', encoding: 'binary' });
    usedPages += pagesOf(db.getStats() as PageStats);
  }
  return { pageSize: stats.root.pageSize, filePages: stats.lastPageNumber + 1, usedPages };
}

/** Whether a start should compact an environment with this page use. */
export function shouldCompact(use: PageUse, minFreeBytes = MIN_FREE_BYTES): boolean {
  const freeBytes = (use.filePages - use.usedPages) * use.pageSize;
  return freeBytes >= minFreeBytes && use.usedPages * 2 <= use.filePages;
}

/**
 * Compact the environment in `path` (a directory with `data.mdb`) when `shouldCompact` says so.
 * Call before opening it for writing, holding the data dir's lock. Returns whether it compacted.
 */
export async function compactAtOpen(
  path: string,
  logger: StorageLogger,
  minFreeBytes = MIN_FREE_BYTES,
): Promise<boolean> {
  const copyDir = join(path, COMPACT_DIR);
  await rm(copyDir, { recursive: true, force: true });
  const dataFile = join(path, 'data.mdb');
  const before = await stat(dataFile).catch(() => undefined);
  // No environment yet, or one too small to free `minFreeBytes`: not even opened.
  if (before === undefined || before.size < minFreeBytes) return false;
  // Read-only: nothing is written to the environment itself; room for every named database.
  const root = open({ path, readOnly: true, maxDbs: 64 });
  let use: PageUse;
  try {
    use = pageUse(root);
    if (!shouldCompact(use, minFreeBytes)) return false;
    // LMDB writes `data.mdb` into an existing directory.
    await mkdir(copyDir);
    await root.backup(copyDir, true);
  } finally {
    await root.close();
  }
  const copyFile = join(copyDir, 'data.mdb');
  await syncPath(copyFile);
  await rename(copyFile, dataFile);
  await syncPath(path);
  await rm(copyDir, { recursive: true, force: true });
  const after = await stat(dataFile);
  logger.info(
    {
      path,
      bytesBefore: before.size,
      bytesAfter: after.size,
      usedPages: use.usedPages,
      filePages: use.filePages,
    },
    'storage compacted at start: free pages given back to the filesystem',
  );
  return true;
}

async function syncPath(path: string): Promise<void> {
  const handle = await openFile(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
