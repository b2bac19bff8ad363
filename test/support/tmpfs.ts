/**
 * A small tmpfs mounted on a temp dir, for tests that fill a filesystem (the disk alarm). Needs
 * root (mount); `unmount()` unmounts it and removes the dir.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface Tmpfs {
  readonly dir: string;
  /** Bytes an unprivileged process may still write there now. */
  free(): Promise<number>;
  unmount(): Promise<void>;
}

/** Mount a tmpfs of `sizeMb` MiB on a new temp dir. */
export async function mountTmpfs(sizeMb: number): Promise<Tmpfs> {
  const dir = await mkdtemp(join(tmpdir(), 'styx-tmpfs-'));
  await run('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir]);
  return {
    dir,
    free: async () => {
      const s = await statfs(dir);
      return s.bavail * s.bsize;
    },
    unmount: async () => {
      await run('umount', [dir]).catch(() => run('umount', ['-l', dir]));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
