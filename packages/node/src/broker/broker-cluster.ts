import type { FeatureFlagGate } from '../cluster/feature-flags.ts';
import type { MetadataGroup } from '../metadata/metadata-group.ts';
import type { MetadataCommand, MetadataReply } from '../metadata/metadata-machine.ts';
import type { QueueClusterPort } from './cluster-queues.ts';

/**
 * What the broker needs from the cluster it belongs to (see cluster/cluster.ts). Without one the
 * node is alone: its metadata group has one voter, itself.
 */
export interface BrokerCluster {
  /** This node's id (its Raft node id and libp2p peer id). */
  readonly nodeId: string;
  /** The metadata replica opens as a joiner: a fresh data dir joining an existing cluster. */
  readonly joining: boolean;
  /**
   * Called once the metadata replica is open, before the broker bootstraps or recovers anything:
   * a joiner asks to join and waits until its replica has caught up; a member announces itself.
   */
  attach(metadata: MetadataGroup): Promise<void>;
  /** Run `command` on the metadata leader (this replica does not lead); its reply once committed. */
  forward(command: MetadataCommand, leaderHint: string | undefined): Promise<MetadataReply>;
  /** Queue commands and deliveries between nodes. */
  readonly queueLink: QueueClusterPort['queueLink'];
  /** Whether a member is down as far as this node can tell. */
  isDown(nodeId: string): boolean;
  /** Called each time a member is counted down. */
  onNodeDown(listener: (nodeId: string) => void): () => void;
  /** Called each time a member is reachable again. */
  onNodeUp(listener: (nodeId: string) => void): () => void;
  /** Answer cluster RPCs of `kind` from members (one handler per kind). */
  handleRpc(kind: string, handler: (payload: Uint8Array, from: string) => Promise<Uint8Array>): void;
  /** Call `kind` on member `nodeId`: its handler's answer, or a rejection (unreachable, timeout, remote error). */
  callRpc(nodeId: string, kind: string, payload: Uint8Array, timeoutMs?: number): Promise<Uint8Array>;
}
  /** Which cluster protocol features this node may use now (cluster/feature-flags.ts). */
  readonly featureFlags: FeatureFlagGate;
