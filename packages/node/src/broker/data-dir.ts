import { randomBytes } from 'node:crypto';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** Another live process holds the data directory. */
export class DataDirLockedError extends Error {
  readonly code = 'DATA_DIR_LOCKED';
  constructor(dir: string, pid: number) {
    super(`data directory ${dir} is in use by process ${pid}; stop it or choose another --data-dir`);
    this.name = 'DataDirLockedError';
  }
}

export interface DataDir {
  readonly path: string;
  /** This node's stable name, kept in the data dir so it survives restarts. */
  readonly nodeName: string;
  release(): Promise<void>;
}

/** Whether process `pid` exists (EPERM: it does, owned by someone else). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Lock the data directory for this process (a `LOCK` file holding the pid; a lock left by a dead
 * process is taken over, so a node killed with SIGKILL restarts without manual clean-up) and read
 * or create the node's name.
 */
export async function acquireDataDir(path: string): Promise<DataDir> {
  const lockPath = join(path, 'LOCK');
  for (;;) {
    try {
      await writeFile(lockPath, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number((await readFile(lockPath, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && isAlive(pid))
        throw new DataDirLockedError(path, pid);
      await rm(lockPath, { force: true });
    }
  }
  const namePath = join(path, 'node-name');
  let nodeName = (await readFile(namePath, 'utf8').catch(() => '')).trim();
  if (nodeName === '') {
    nodeName = `styx@${hostname()}-${randomBytes(3).toString('hex')}`;
    await writeFile(namePath, `${nodeName}\n`);
  }
  return {
    path,
    nodeName,
    release: () => rm(lockPath, { force: true }),
  };
}
