import type { FeatureFlagGate } from '../cluster/feature-flags.ts';
import type { MetadataGroup } from '../metadata/metadata-group.ts';
import type { MetadataCommand, MetadataReply } from '../metadata/metadata-machine.ts';
import type { QueueClusterPort } from './cluster-queues.ts';
import type { PeerStatus } from './owner-suspicion.ts';

/**
 * What the broker needs from the cluster it belongs to (see cluster/cluster.ts). Without one the
 * node is alone: its metadata group has one voter, itself.
 */
export interface BrokerCluster {
  /** This node's id (its Raft node id and libp2p peer id). */
  readonly nodeId: string;
  /**
   * This process's incarnation: a fresh id per start, sent in ping answers so that peers tell a
   * restart from a pause. The broker uses it as its run id, in every connection and owner id.
   */
  readonly incarnation: string;
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
  /** Whether a member is down as far as this node can tell (suspected, or not connected). */
  isDown(nodeId: string): boolean;
  /** What the failure detector knows of a member now. */
  peerStatus(nodeId: string): PeerStatus;
  /** Called each time a member is suspected (missed pings, lost connection). */
  onNodeDown(listener: (nodeId: string) => void): () => void;
  /** Called each time a member is reachable again. */
  onNodeUp(listener: (nodeId: string) => void): () => void;
  /** Which cluster protocol features this node may use now (cluster/feature-flags.ts). */
  readonly featureFlags: FeatureFlagGate;
  /** Answer cluster RPCs of `kind` from members (one handler per kind). */
  handleRpc(kind: string, handler: (payload: Uint8Array, from: string) => Promise<Uint8Array>): void;
  /** Call `kind` on member `nodeId`: its handler's answer, or a rejection (unreachable, timeout, remote error). */
  callRpc(nodeId: string, kind: string, payload: Uint8Array, timeoutMs?: number): Promise<Uint8Array>;
}
