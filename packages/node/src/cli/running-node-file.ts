/**
 * The running node's file: `styx server` writes `<data-dir>/running-node.json` once it listens (its
 * pid, name and the URLs it serves) and removes it on a clean stop, so `styx ctl` finds the node of a
 * data dir the way rabbitmqctl finds its local node, whatever ports it was started on. A node killed
 * with SIGKILL leaves the file behind: its pid, no longer alive, tells a reader the file is stale.
 */

import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAlive } from '../broker/data-dir.ts';

/** The file's name in the data dir. */
export const RUNNING_NODE_FILE = 'running-node.json';

/** What the file holds (snake_case, as the management API's JSON). */
export interface RunningNode {
  readonly pid: number;
  readonly node: string;
  /** The clients' WebSocket URL: the plain one, or the wss one when the node serves TLS only. */
  readonly url: string;
  /** The clients' wss URL; null without --tls-port (absent in files of older versions). */
  readonly tls_url?: string | null;
  /**
   * The management API's URL: the http one, or the https one when the node serves https only;
   * null without either.
   */
  readonly management_url: string | null;
  /** The https management URL; null without --management-tls-port (absent in older files). */
  readonly management_tls_url?: string | null;
  /** The cluster listener's HOST:PORT; null for a node without clustering. */
  readonly cluster_address: string | null;
}

/**
 * `url` with a wildcard host (0.0.0.0, ::) replaced by loopback: the address a process on the same
 * machine connects to.
 */
export function reachableUrl(url: string): string {
  return url.replace(/^(\w+:\/\/)(0\.0\.0\.0|\[::\])(?=:)/, (_, scheme: string, host: string) =>
    host === '0.0.0.0' ? `${scheme}127.0.0.1` : `${scheme}[::1]`,
  );
}

/** Write the file (whole or not at all: a reader never sees half of it). */
export async function writeRunningNode(dataDir: string, node: RunningNode): Promise<void> {
  const file = join(dataDir, RUNNING_NODE_FILE);
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, `${JSON.stringify(node, null, 2)}\n`);
  await rename(partial, file);
}

/** Remove the file (a clean stop). */
export async function removeRunningNode(dataDir: string): Promise<void> {
  await rm(join(dataDir, RUNNING_NODE_FILE), { force: true });
}

/** What a data dir says about its node. */
export type RunningNodeLookup =
  | { readonly state: 'running'; readonly node: RunningNode }
  | { readonly state: 'stale'; readonly node: RunningNode }
  | { readonly state: 'none' };

/** Read the file in `dataDir`: running (its pid is alive), stale (it is not), or none (no file). */
export async function readRunningNode(dataDir: string): Promise<RunningNodeLookup> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await readFile(join(dataDir, RUNNING_NODE_FILE), 'utf8'));
  } catch {
    return { state: 'none' };
  }
  const node = parsed as RunningNode;
  if (typeof node?.pid !== 'number' || typeof node.url !== 'string') return { state: 'none' };
  return { state: isAlive(node.pid) ? 'running' : 'stale', node };
}
