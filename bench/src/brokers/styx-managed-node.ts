/**
 * One `styx server` for the scripts that measure the management API: a fresh temp data dir, clients
 * on a free port, the management API on a free loopback port. `stop()` stops it and removes the dir.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freeLoopbackPort } from './free-port.ts';
import type { StyxNode } from './styx-node.ts';
import { startStyxNode } from './styx-node.ts';

export interface ManagedStyxNode {
  readonly node: StyxNode;
  /** `http://127.0.0.1:PORT`, without a trailing slash. */
  readonly managementUrl: string;
  stop(): Promise<void>;
}

export async function startManagedStyxNode(name: string): Promise<ManagedStyxNode> {
  const dataDir = await mkdtemp(join(tmpdir(), `${name}-`));
  const managementPort = await freeLoopbackPort();
  let node: StyxNode;
  try {
    node = await startStyxNode(name, [
      '--data-dir',
      dataDir,
      '--port',
      '0',
      '--management-port',
      String(managementPort),
    ]);
  } catch (error) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  return {
    node,
    managementUrl: `http://127.0.0.1:${managementPort}`,
    async stop() {
      await node.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
