/**
 * Two cluster hosts in this process for the link benches (cluster-stream.ts, remote-deliveries.ts):
 * built by packages/node's `createClusterNode` (the TCP, connection protection, noise and yamux
 * stack a `styx server` runs) on loopback, each with a node key in a temp dir of its own.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@styx/node';
import type { ClusterLibp2p } from '@styx/node/internal/cluster';
import {
  ClusterGater,
  createClusterNode,
  loadNodeIdentity,
  swarmKeyFromSecret,
} from '@styx/node/internal/cluster';

export interface ClusterHostPair {
  readonly a: ClusterLibp2p;
  readonly b: ClusterLibp2p;
  /** Stops both hosts and removes their keys. */
  stop(): Promise<void>;
}

/** Two hosts sharing `secret`, their keys under a new temp dir named after `what`. */
export async function startClusterHostPair(what: string, secret: string): Promise<ClusterHostPair> {
  const logger = silentLogger();
  const dir = await mkdtemp(join(tmpdir(), `styx-${what}-`));
  const keys = await Promise.all(
    ['a', 'b'].map(async (name) => {
      await mkdir(join(dir, name));
      return (await loadNodeIdentity(join(dir, name))).privateKey;
    }),
  );
  const gater = new ClusterGater(logger, [], { openToJoins: true });
  const swarmKey = swarmKeyFromSecret(secret);
  const [a, b] = await Promise.all(
    keys.map((privateKey) =>
      createClusterNode({ privateKey, listen: '127.0.0.1:0', swarmKey, gater, logger }),
    ),
  );
  if (a === undefined || b === undefined) throw new Error('no nodes');
  return {
    a,
    b,
    async stop() {
      await Promise.all([a.stop(), b.stop()]);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
