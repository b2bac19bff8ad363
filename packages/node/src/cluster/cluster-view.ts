/**
 * The cluster as operators see and change it: what the management API (`/api/nodes`,
 * `/api/cluster`) and `styx ctl cluster_status | join_cluster | forget_cluster_node` work on. A
 * clustered node gives its `Cluster`'s view; a node on its own gives `singleNodeClusterView`, a
 * cluster of one that refuses to join or forget.
 *
 * Expected refusals reject with the errors below (one class per failure mode, each with a stable
 * `code`), which the management API turns into HTTP statuses; anything else is an internal error.
 */
import { ReplyCode } from '@styx/client/wire';
import type { MetadataError } from '../metadata/types.ts';
import { ClusterError } from './errors.ts';
import type { FeatureFlagsView } from './feature-flags.ts';

/** A member's place in the metadata Raft group: voting, catching up as a learner, or not (yet) in it. */
export type MetadataVoterRole = 'voter' | 'learner' | 'none';

/** One member of the cluster as this node sees it now. */
export interface ClusterMemberStatus {
  /** Its Raft node id. */
  readonly id: string;
  /** Its libp2p peer id ('' on a node without clustering). */
  readonly peerId: string;
  /** Its readable name (`styx server --node-name`). */
  readonly name: string;
  /** Its cluster listen address, `HOST:PORT` ('' on a node without clustering). */
  readonly address: string;
  /** Reachable from this node now (this node itself always is). */
  readonly online: boolean;
  /** It is the node answering. */
  readonly isSelf: boolean;
  /** Its role in the metadata group. */
  readonly voter: MetadataVoterRole;
}

export interface ClusterView {
  /** Every member, oldest first. */
  members(): ClusterMemberStatus[];
  /** The node id of the metadata group's leader, if one is known. */
  metadataLeader(): string | undefined;
  /** The node answering. */
  self(): { readonly id: string; readonly name: string };
  /**
   * Make this node join the cluster that the node at `address` (`HOST:PORT`, its cluster listen
   * address) belongs to. Rejects with `ClusteringDisabledError`, `ClusterChangeRefusedError` or
   * `ClusterUnavailableError`.
   */
  join(address: string): Promise<void>;
  /**
   * Remove a member, named by id or name, for good (rabbitmqctl's forget_cluster_node). Rejects
   * with `ClusteringDisabledError`, `ClusterNodeNotFoundError`, `ClusterChangeRefusedError` or
   * `ClusterUnavailableError`.
   */
  forget(idOrName: string): Promise<void>;
  /** The feature flags (`styx ctl list_feature_flags`); absent on a node without clustering. */
  readonly featureFlags?: FeatureFlagsView;
}

/** The node was started without `--cluster-listen`: it can neither join a cluster nor forget members. */
export class ClusteringDisabledError extends ClusterError {
  constructor(operation: string) {
    super(
      'CLUSTERING_DISABLED',
      `cannot ${operation}: clustering is not enabled on this node (start it with --cluster-listen HOST:PORT)`,
    );
  }
}

/** No member has that id or name. */
export class ClusterNodeNotFoundError extends ClusterError {
  constructor(reason: string) {
    super('CLUSTER_NODE_NOT_FOUND', reason);
  }
}

/** The cluster refused the change (a forgotten node, a name taken, the last member, a running node joining). */
export class ClusterChangeRefusedError extends ClusterError {
  constructor(reason: string, options?: ErrorOptions) {
    super('CLUSTER_CHANGE_REFUSED', reason, options);
  }
}

/** The change could not be made now: no metadata leader reachable, or the peer did not answer. */
export class ClusterUnavailableError extends ClusterError {
  constructor(reason: string, options?: ErrorOptions) {
    super('CLUSTER_UNAVAILABLE', reason, options);
  }
}

/** A refused membership command (addClusterNode / forgetClusterNode) as the view's error. */
export function clusterErrorFromReply(
  reply: MetadataError,
): ClusterNodeNotFoundError | ClusterChangeRefusedError {
  return reply.code === ReplyCode.NOT_FOUND
    ? new ClusterNodeNotFoundError(reply.text)
    : new ClusterChangeRefusedError(reply.text);
}

/**
 * What is wrong with a cluster address, or undefined when it is a `HOST:PORT` (`10.0.0.5:25680`,
 * `[fd00::5]:25680`, `node-b.internal:25680`). Port 0 (any free port) only when `allowAnyPort`, for
 * a listen address.
 */
export function clusterAddressProblem(address: string, allowAnyPort = false): string | undefined {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):(\d{1,5})$/.exec(address);
  if (match === null) return `'${address}' is not HOST:PORT (an IPv6 address goes in brackets: [::1]:25680)`;
  const port = Number(match[3]);
  const min = allowAnyPort ? 0 : 1;
  if (port < min || port > 65_535) return `the port of '${address}' must be between ${min} and 65535`;
  return undefined;
}

/** What a node on its own tells about itself. */
export interface SingleNodeDeps {
  /** The node's name (`Broker.nodeName`). */
  readonly nodeName: string;
  /** Its node id (the data dir's `NodeStorage.nodeId`); the name when the node has no storage. */
  readonly nodeId?: string | undefined;
}

/**
 * The view of a node without clustering: a cluster of one, itself, online, the only voter and the
 * metadata leader. `join` and `forget` reject with `ClusteringDisabledError`.
 */
export function singleNodeClusterView(deps: SingleNodeDeps): ClusterView {
  const id = deps.nodeId ?? deps.nodeName;
  const self: ClusterMemberStatus = Object.freeze({
    id,
    peerId: '',
    name: deps.nodeName,
    address: '',
    online: true,
    isSelf: true,
    voter: 'voter',
  });
  return {
    members: () => [self],
    metadataLeader: () => id,
    self: () => ({ id, name: deps.nodeName }),
    join: async () => {
      throw new ClusteringDisabledError('join a cluster');
    },
    forget: async () => {
      throw new ClusteringDisabledError('forget a cluster node');
    },
  };
}
