/**
 * The node's `RaftHost`: every durable log of this node (its queues and the metadata store) is a
 * Raft group on it, over the node's one log store. On a single node each group has one voter (this
 * node), so the broker has one code path; the cluster adds voters and a transport.
 *
 * One host per log store, created on first use. It holds no resource to release: its tick timer
 * runs only while a group is active, is unref'd, and stops once every group is quiesced or closed —
 * which closing the logs (actors) before the storage guarantees.
 */
import type { LogStore, Transport } from '@styx/raft';
import { RaftHost } from '@styx/raft';
import type { NodeStorage } from './node-storage.ts';

const hosts = new WeakMap<LogStore, RaftHost>();

/**
 * The Raft host of the node whose storage this is. A clustered node gives its transport on the
 * first call (before the broker opens any group); later calls return the same host.
 */
export function raftHostOf(
  storage: Pick<NodeStorage, 'logStore' | 'nodeId'>,
  transport?: Transport,
): RaftHost {
  let host = hosts.get(storage.logStore);
  if (host === undefined) {
    host = new RaftHost({
      nodeId: storage.nodeId,
      logStore: storage.logStore,
      ...(transport !== undefined ? { transport } : {}),
    });
    hosts.set(storage.logStore, host);
  } else if (transport !== undefined) {
    throw new RangeError(
      'the Raft host of this storage already exists: give its transport on the first call',
    );
  }
  return host;
}
