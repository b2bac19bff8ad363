/** Test support for ClusterQueues: the node's side of it, faked. */
import { silentLogger } from '../logging/logger.ts';
import type { ClusterQueuesHost } from './cluster-queues.ts';

/**
 * A node for ClusterQueues with no replica and no channel, every upkeep a no-op, its logger silent;
 * `parts` replace any of it, and give the metadata (only what the test's path reads).
 */
export function quietQueuesHost(
  parts: Omit<Partial<ClusterQueuesHost>, 'metadata'> & { readonly metadata: unknown },
): ClusterQueuesHost {
  return {
    logger: silentLogger(),
    replica: () => undefined,
    replicas: () => [],
    localChannel: () => undefined,
    reassertConsumers: () => {},
    startReplica: async () => {},
    dropReplica: async () => {},
    ...parts,
  } as unknown as ClusterQueuesHost;
}
