/**
 * The node's operating-system resources for `/metrics`: open file descriptors and their limit,
 * and the free space of the data directory's filesystem (RabbitMQ's `rabbitmq_process_open_fds`,
 * `rabbitmq_process_max_fds`, `rabbitmq_disk_space_available_bytes`). Read once per scrape, off
 * the event loop where the OS lets it (statfs, readdir).
 *
 * On a system without `/proc` (not Linux) the descriptor figures are absent rather than made up.
 */
import { readdir, readFile, statfs } from 'node:fs/promises';

export interface NodeResources {
  /** Descriptors open in this process; undefined where `/proc/self/fd` cannot be read. */
  readonly openFds: number | undefined;
  /** The process' soft limit on open descriptors; undefined where unknown or unlimited. */
  readonly maxFds: number | undefined;
  /** Bytes an unprivileged process may still write on the data directory's filesystem. */
  readonly diskAvailableBytes: number | undefined;
}

/** Read the figures; `dataDir` undefined (a node without durable storage) skips the disk. */
export async function readNodeResources(dataDir: string | undefined): Promise<NodeResources> {
  const [openFds, maxFds, diskAvailableBytes] = await Promise.all([
    countOpenFds(),
    readMaxFds(),
    dataDir === undefined ? undefined : readDiskAvailable(dataDir),
  ]);
  return { openFds, maxFds, diskAvailableBytes };
}

async function countOpenFds(): Promise<number | undefined> {
  try {
    // The listing itself holds one descriptor open while it runs: not the node's, so not counted.
    return Math.max(0, (await readdir('/proc/self/fd')).length - 1);
  } catch {
    return undefined;
  }
}

/** The soft limit from `/proc/self/limits` ("Max open files  <soft>  <hard>  files"). */
export function parseMaxOpenFiles(limits: string): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  if (soft === undefined || !/^\d+$/.test(soft)) return undefined; // "unlimited", or no such line
  return Number(soft);
}

async function readMaxFds(): Promise<number | undefined> {
  try {
    return parseMaxOpenFiles(await readFile('/proc/self/limits', 'utf8'));
  } catch {
    return undefined;
  }
}

/** Bytes an unprivileged process may still write on `dir`'s filesystem; undefined when unreadable. */
export async function readDiskAvailable(dir: string): Promise<number | undefined> {
  try {
    const s = await statfs(dir);
    return s.bavail * s.bsize;
  } catch {
    return undefined;
  }
}
