/**
 * A consistent copy of a node's data dir, taken while the node runs or after it stopped: the LMDB
 * environment (every queue, message, Raft log and the metadata) is copied with LMDB's own copy
 * (`mdb_env_copy2`, lmdb-js's `backup`), which reads one snapshot in a read transaction, so writes
 * the node makes meanwhile are either wholly in the copy or not at all; a plain `cp` of a running
 * node's `data.mdb` can tear. The node's small files that never change after the first start (its
 * identity key, its name, the cluster secret it created) are copied beside it. The lock and the
 * running-node file are not: the copy is a stopped node's data dir, ready for `styx server
 * --data-dir`.
 */
import { copyFile, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { open } from 'lmdb';

/** The LMDB environment's folder in a data dir (see openNodeStorage). */
const LMDB_DIR = 'lmdb';

/** The data dir's other files that a restored node needs (identity key, name, created secret). */
export const BACKED_UP_FILES = ['node-key', 'node-name', 'cluster-secret'] as const;

/** A backup that cannot be made: no data dir there, or a target that is not empty. */
export class BackupError extends Error {
  readonly code: 'BACKUP_NO_DATA_DIR' | 'BACKUP_TARGET_NOT_EMPTY';
  constructor(code: BackupError['code'], message: string) {
    super(message);
    this.name = 'BackupError';
    this.code = code;
  }
}

/** What a backup copied. */
export interface BackupResult {
  /** The files copied beside the LMDB environment. */
  readonly files: readonly string[];
  /** Size of the copied `data.mdb`, bytes. */
  readonly bytes: number;
}

/**
 * Copy the data dir `dataDir` into `target` (created; must be empty or missing). `compact`: LMDB
 * leaves out free pages (slower, smaller). Throws BackupError, or LMDB's error.
 */
export async function backupDataDir(dataDir: string, target: string, compact = false): Promise<BackupResult> {
  const source = join(dataDir, LMDB_DIR);
  const found = await stat(join(source, 'data.mdb')).catch(() => undefined);
  if (found === undefined) {
    throw new BackupError(
      'BACKUP_NO_DATA_DIR',
      `${dataDir} is not a Styx data dir (no ${LMDB_DIR}/data.mdb)`,
    );
  }
  const present = await readdir(target).catch(() => undefined);
  if (present !== undefined && present.length > 0) {
    throw new BackupError(
      'BACKUP_TARGET_NOT_EMPTY',
      `${target} is not empty: back up into a new or empty directory`,
    );
  }
  await mkdir(join(target, LMDB_DIR), { recursive: true });
  const files: string[] = [];
  for (const file of BACKED_UP_FILES) {
    try {
      await copyFile(join(dataDir, file), join(target, file));
      files.push(file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  // Read-only: this process never writes the running node's environment, it only holds a reader
  // slot (in lock.mdb) for the copy's snapshot.
  const env = open({ path: source, readOnly: true });
  try {
    await env.backup(join(target, LMDB_DIR), compact);
  } finally {
    await env.close();
  }
  const { size } = await stat(join(target, LMDB_DIR, 'data.mdb'));
  return { files, bytes: size };
}
