/**
 * The management API's endpoints for the replicas of queues: `rabbitmq-queues`' verbs over HTTP,
 * which `styx ctl add_member | delete_member | grow | shrink | rebalance | quorum_status` call.
 *
 *   GET    /api/queues/{vhost}/{name}/quorum_status     the queue group as its leader reports it
 *   POST   /api/queues/{vhost}/{name}/members           {node}: add a replica on that member
 *   DELETE /api/queues/{vhost}/{name}/members/{node}    remove the replica on that member
 *   POST   /api/queues/grow      {node, strategy: "all"|"even", vhost_pattern?, queue_pattern?}
 *   POST   /api/queues/shrink    {node}: remove that member's replicas, except last ones
 *   POST   /api/rebalance/queues                        even out queue leaders over the online members
 *
 * Administrators only, quorum_status included: it asks the queue's leader, possibly on another node.
 * A node is named by member name or id in a request and by name in a reply (the metadata's cluster
 * nodes map ids to names). A node without clustering answers every verb 400, "this node is not in
 * a cluster": its queues have one replica each and nothing to move. Refusals map to HTTP statuses
 * in `fromQueueReplicaError`.
 */
import type { QueueReplicaOperations } from '../broker/queue-replica-ops.ts';
import { isReplicatedQueue, notReplicatedError } from '../broker/replicated-queue.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import type { QueueSelector } from '../cluster/placement.ts';
import { parseQueueKey } from '../cluster/placement.ts';
import { isUnderReplicated } from '../cluster/quorum-critical.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { NamePattern, NamePatternError } from '../metadata/name-pattern.ts';
import type { ClusterNodeRecord, QueueRecord, UserRecord } from '../metadata/types.ts';
import { badRequest, fromQueueReplicaError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import type { BodyObject } from './request-body.ts';
import { objectBody, optionalString, requiredString } from './request-body.ts';
import type { Json, QueueReplicaNames } from './views.ts';
import { quorumStatusJson } from './views.ts';

/** The broker's operations on queue replicas (a test gives a fake: they need a real cluster). */
export type QueueReplicaOps = Pick<
  QueueReplicaOperations,
  | 'queueReplicas'
  | 'quorumStatus'
  | 'addQueueMember'
  | 'deleteQueueMember'
  | 'growQueues'
  | 'shrinkQueues'
  | 'rebalanceQueues'
>;

export interface QueueReplicaRouteDeps {
  readonly ops: QueueReplicaOps;
  /** Cluster members (id → name) and queues. */
  readonly metadata: MetadataMachine;
  /** Whether this node is clustered at all (`isClustered`). */
  readonly cluster: ClusterView;
  /** The queue `user` asks for, or the API's 404 for its vhost or itself. */
  readonly requireQueue: (user: UserRecord, vhost: string, name: string) => QueueRecord;
}

/**
 * Whether the node answering is clustered: a node started without --cluster-listen is viewed by
 * `singleNodeClusterView`, whose only member has no libp2p peer id.
 */
export function isClustered(cluster: ClusterView): boolean {
  return cluster.members().some((m) => m.isSelf && m.peerId !== '');
}

/** Node id → name, from the metadata's cluster nodes; an id no member has (forgotten) stays itself. */
export function nodeNames(metadata: MetadataMachine): (id: string) => string {
  const names = new Map(metadata.clusterNodes().map((n) => [n.id, n.name]));
  return (id) => names.get(id) ?? id;
}

/** `QueueReplicaOperations.queueReplicas` by node name, for the queue JSON; undefined on a node alone. */
export function replicaNames(
  ops: QueueReplicaOps,
  queue: QueueRecord,
  nameOf: (id: string) => string,
): QueueReplicaNames | undefined {
  const replicas = ops.queueReplicas(queue);
  if (replicas === undefined) return undefined;
  return {
    leader: replicas.leader === undefined ? undefined : nameOf(replicas.leader),
    members: replicas.members.map(nameOf),
    online: replicas.online.map(nameOf),
    underReplicated: isUnderReplicated(replicas, replicas.target ?? replicas.members.length),
  };
}

/**
 * A name pattern from an optional body field, on the linear-time engine (it runs on every queue's
 * name); 400 naming the field when it does not compile.
 */
function optionalPattern(body: BodyObject, key: string): NamePattern | undefined {
  const source = optionalString(body, key);
  if (source === undefined) return undefined;
  try {
    return NamePattern.compile(source);
  } catch (err) {
    if (err instanceof NamePatternError)
      throw badRequest(`'${key}' is not a valid regular expression: ${err.reason}`);
    throw err;
  }
}

/** `grow`'s selector: every queue, or those whose vhost and name match the patterns given. */
function growSelector(body: BodyObject): QueueSelector {
  const vhost = optionalPattern(body, 'vhost_pattern');
  const name = optionalPattern(body, 'queue_pattern');
  return vhost === undefined && name === undefined ? 'all' : { vhost, name };
}

function ok(body: Json): ApiResponse {
  return { status: 200, body };
}

export function queueReplicaRoutes(deps: QueueReplicaRouteDeps): Route[] {
  const { ops, metadata, cluster } = deps;

  /** Whether there is a cluster to act on (the router checked who may call): before any lookup. */
  const guard = (): void => {
    if (!isClustered(cluster)) {
      throw badRequest(
        'this node is not in a cluster: its queues have one replica each, on this node (start it with ' +
          '--cluster-listen HOST:PORT to form or join one)',
      );
    }
  };
  /**
   * The member a request names by name or id (404 otherwise). The broker is given its name, which it
   * takes as well as the id, so its refusals name the node as operators know it.
   */
  const member = (idOrName: string): ClusterNodeRecord => {
    const found = metadata.clusterNode(idOrName);
    if (found === undefined) throw notFound(`no node '${idOrName}' in the cluster`);
    return found;
  };
  /** Run a broker operation, its refusals as ApiErrors. */
  const call = async <T>(operation: () => Promise<T>): Promise<T> => {
    try {
      return await operation();
    } catch (err) {
      throw fromQueueReplicaError(err);
    }
  };
  const queueOf = (request: ApiRequest): QueueRecord =>
    deps.requireQueue(request.user, request.params[0] as string, request.params[1] as string);
  const membersReply = (queue: QueueRecord, members: readonly string[]): ApiResponse => {
    const nameOf = nodeNames(metadata);
    return ok({ name: queue.name, vhost: queue.vhost, members: members.map(nameOf) });
  };

  return [
    {
      path: ['queues', ':vhost', ':name', 'quorum_status'],
      methods: {
        GET: async (request) => {
          guard();
          const queue = queueOf(request);
          // Refused here too, before the leader is asked over the network.
          if (!isReplicatedQueue(queue)) throw fromQueueReplicaError(notReplicatedError(queue));
          const status = await call(() => ops.quorumStatus(queue.vhost, queue.name));
          return ok(quorumStatusJson(queue, status, nodeNames(metadata)));
        },
      },
    },
    {
      path: ['queues', ':vhost', ':name', 'members'],
      methods: {
        POST: async (request) => {
          guard();
          const queue = queueOf(request);
          const node = member(requiredString(objectBody(await request.body()), 'node'));
          return membersReply(
            queue,
            await call(() => ops.addQueueMember(queue.vhost, queue.name, node.name)),
          );
        },
      },
    },
    {
      path: ['queues', ':vhost', ':name', 'members', ':node'],
      methods: {
        DELETE: async (request) => {
          guard();
          const queue = queueOf(request);
          const node = member(request.params[2] as string);
          return membersReply(
            queue,
            await call(() => ops.deleteQueueMember(queue.vhost, queue.name, node.name)),
          );
        },
      },
    },
    {
      path: ['queues', 'grow'],
      methods: {
        POST: async (request) => {
          guard();
          const body = objectBody(await request.body());
          const node = member(requiredString(body, 'node'));
          const strategy = requiredString(body, 'strategy');
          if (strategy !== 'all' && strategy !== 'even') {
            throw badRequest(`'strategy' must be 'all' or 'even', got '${strategy}'`);
          }
          const selector = growSelector(body);
          const added = await call(() => ops.growQueues(node.name, strategy, selector));
          return ok({ node: node.name, strategy, added });
        },
      },
    },
    {
      path: ['queues', 'shrink'],
      methods: {
        POST: async (request) => {
          guard();
          const node = member(requiredString(objectBody(await request.body()), 'node'));
          const { removed, skipped } = await call(() => ops.shrinkQueues(node.name));
          return ok({
            node: node.name,
            removed,
            // Their last replica is on that node: removing it would lose the queue.
            skipped: skipped.map((key) => ({ ...parseQueueKey(key) })),
          });
        },
      },
    },
    {
      path: ['rebalance', 'queues'],
      methods: {
        POST: async () => {
          guard();
          const transfers = await call(() => ops.rebalanceQueues());
          const nameOf = nodeNames(metadata);
          return ok({
            transfers: transfers.map((t) => ({
              ...parseQueueKey(t.queueKey),
              from: nameOf(t.from),
              to: nameOf(t.to),
            })),
          });
        },
      },
    },
  ];
}
