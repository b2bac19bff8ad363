/**
 * The JSON shapes of the management API: records as RabbitMQ's management API shows them, with
 * its field names (`auto_delete`, `messages_ready`, `apply-to`, ...) where it covers the same
 * ground, plus Styx's own dead-lettering fields on queues. Pure functions of their inputs.
 *
 * Deliberate differences from RabbitMQ: users never carry `password_hash` or `hashing_algorithm`
 * (a hash is an offline-guessing target and no client needs it); `policy` is null, not absent,
 * when no policy applies.
 */

import type { FieldTable, JsFieldValue } from '@styx/client/wire';
import { fieldTableToJs } from '@styx/client/wire';
import type { ClusterMemberStatus } from '../cluster/cluster-view.ts';
import type { GroupStatus } from '../cluster/queue-rpc-codec.ts';
import type {
  BindingRecord,
  ExchangeRecord,
  PermissionRecord,
  PolicyRecord,
  QueueRecord,
  UserRecord,
} from '../metadata/types.ts';
import type { BodyRepairStatus } from '../queue/body-repair.ts';
import type { QueueFlowTotals } from '../queue/queue-flow-counters.ts';
import type { DeadLetterTotals, QueueConfig, QueueCounts, RemovalTotals } from '../queue/types.ts';
import { bindingPropertiesKey } from './binding-props.ts';

/** A JSON value as the API sends it. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Field-table values as JSON: byte arrays as base64 strings, non-finite numbers as strings. */
function jsonValue(v: JsFieldValue): Json {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
  if (Array.isArray(v)) return v.map(jsonValue);
  if (v !== null && typeof v === 'object') {
    const out: { [key: string]: Json } = {};
    for (const [key, item] of Object.entries(v)) out[key] = jsonValue(item as JsFieldValue);
    return out;
  }
  return v;
}

/** Declare or binding arguments as a JSON object, as amqplib would decode them. */
export function argumentsJson(table: FieldTable): { [key: string]: Json } {
  return jsonValue(fieldTableToJs(table)) as { [key: string]: Json };
}

export function userJson(user: UserRecord): Json {
  return { name: user.name, tags: [...user.tags] };
}

export function permissionJson(p: PermissionRecord): Json {
  return { user: p.user, vhost: p.vhost, configure: p.configure, write: p.write, read: p.read };
}

export function policyJson(p: PolicyRecord): Json {
  return {
    vhost: p.vhost,
    name: p.name,
    pattern: p.pattern,
    'apply-to': p.applyTo,
    definition: { ...p.definition },
    priority: p.priority,
  };
}

export function exchangeJson(x: ExchangeRecord, policy: PolicyRecord | undefined): Json {
  return {
    name: x.name,
    vhost: x.vhost,
    type: x.type,
    durable: x.durable,
    auto_delete: x.autoDelete,
    internal: x.internal,
    arguments: argumentsJson(x.arguments),
    policy: policy?.name ?? null,
  };
}

export function bindingJson(b: BindingRecord): Json {
  return {
    source: b.source,
    vhost: b.vhost,
    destination: b.destination,
    destination_type: b.destinationKind,
    routing_key: b.routingKey,
    arguments: argumentsJson(b.arguments),
    properties_key: bindingPropertiesKey(b.routingKey, b.arguments),
  };
}

/** The default exchange's implicit binding of a queue (RabbitMQ lists these too). */
export function defaultBindingJson(queue: QueueRecord): Json {
  return {
    source: '',
    vhost: queue.vhost,
    destination: queue.name,
    destination_type: 'queue',
    routing_key: queue.name,
    arguments: {},
    properties_key: bindingPropertiesKey(queue.name, { entries: [] }),
  };
}

/** What the node knows of a queue beyond its record. */
export interface QueueLiveState {
  /** Undefined when the queue's actor is not running on this node. */
  readonly counts: QueueCounts | undefined;
  /** The configuration in force: the queue's own when running, else the one it would get. */
  readonly config: QueueConfig;
  readonly policy: PolicyRecord | undefined;
  readonly removalTotals: RemovalTotals | undefined;
  /** Dead-letter outcomes per reason; undefined when the actor is not running here. */
  readonly deadLetterTotals: DeadLetterTotals | undefined;
  /** Where its replicas are, by node name; absent on a node without clustering. */
  readonly replicas?: QueueReplicaNames | undefined;
  /** This node's replica: bodies found missing, repaired from another replica, lost everywhere. */
  readonly bodyRepair?: BodyRepairStatus | undefined;
  /** What this node's replica applied since it started (queue-flow-counters.ts); absent when not running. */
  readonly flow?: QueueFlowTotals | undefined;
  /** At-least-once hand-offs blocked (no DLX, nothing bound, refused): the leader's figure, else 0. */
  readonly handOffsBlocked?: number | undefined;
}

/** A queue's replicas by node name (`QueueReplicaOperations.queueReplicas` with ids mapped to names). */
export interface QueueReplicaNames {
  /** The leader as the answering node knows it; undefined while none is known. */
  readonly leader: string | undefined;
  /** Every replica, the preferred leader first. */
  readonly members: readonly string[];
  /** The members the answering node reaches now. */
  readonly online: readonly string[];
  /** A member is offline, or it has fewer members than it should (`isUnderReplicated`). */
  readonly underReplicated: boolean;
}

function totalsJson(t: RemovalTotals | undefined): Json {
  return {
    rejected: t?.rejected ?? 0,
    expired: t?.expired ?? 0,
    maxlen: t?.maxlen ?? 0,
    delivery_limit: t?.delivery_limit ?? 0,
  };
}

function configJson(c: QueueConfig): Json {
  return {
    message_ttl: c.messageTtl ?? null,
    expires: c.expires ?? null,
    max_length: c.maxLength ?? null,
    max_length_bytes: c.maxLengthBytes ?? null,
    overflow: c.overflow,
    delivery_limit: c.deliveryLimit ?? null,
    dead_letter_exchange: c.deadLetterExchange ?? null,
    dead_letter_routing_key: c.deadLetterRoutingKey ?? null,
    dead_letter_strategy: c.deadLetterStrategy,
  };
}

/**
 * RabbitMQ's fields of a quorum queue's replicas: `leader` (null while unknown), `members`, `online`;
 * and Styx's `under_replicated`.
 */
function replicasJson(replicas: QueueReplicaNames | undefined): { [key: string]: Json } {
  if (replicas === undefined) return {};
  return {
    leader: replicas.leader ?? null,
    members: [...replicas.members],
    online: [...replicas.online],
    under_replicated: replicas.underReplicated,
  };
}

export function queueJson(q: QueueRecord, live: QueueLiveState, node: string): Json {
  const counts = live.counts;
  const dl = live.deadLetterTotals;
  return {
    name: q.name,
    vhost: q.vhost,
    durable: q.durable,
    auto_delete: q.autoDelete,
    exclusive: q.exclusiveOwner !== undefined,
    arguments: argumentsJson(q.arguments),
    node,
    ...replicasJson(live.replicas),
    type: 'quorum',
    state: counts === undefined ? 'stopped' : 'running',
    messages: counts === undefined ? 0 : counts.ready + counts.unacked,
    messages_ready: counts?.ready ?? 0,
    messages_unacknowledged: counts?.unacked ?? 0,
    message_bytes_ready: counts?.readyBytes ?? 0,
    consumers: counts?.consumers ?? 0,
    policy: live.policy?.name ?? null,
    effective_policy_definition: live.policy === undefined ? {} : { ...live.policy.definition },
    effective_config: configJson(live.config),
    dead_letter_exchange: live.config.deadLetterExchange ?? null,
    dead_letter_routing_key: live.config.deadLetterRoutingKey ?? null,
    dead_letter_strategy: live.config.deadLetterStrategy,
    // Waiting for an at-least-once hand-off: not ready, never delivered, not in `messages`.
    messages_dead_letter_pending: counts?.deadLetterPending ?? 0,
    message_bytes_dead_letter_pending: counts?.deadLetterPendingBytes ?? 0,
    messages_dead_letter_blocked: live.handOffsBlocked ?? 0,
    // Counts since this node's replica started (RabbitMQ's message_stats fields, without rates).
    message_stats: {
      publish: live.flow?.published ?? 0,
      deliver_get: live.flow?.delivered ?? 0,
      redeliver: live.flow?.redelivered ?? 0,
      ack: live.flow?.acked ?? 0,
    },
    // Left the queue without an ack, per reason (dead-lettered or dropped).
    removed: totalsJson(live.removalTotals),
    dead_lettered: totalsJson(dl?.deadLettered),
    dead_letter_dropped: {
      no_dlx: totalsJson(dl?.droppedNoDlx),
      cycle: totalsJson(dl?.droppedCycle),
      at_most_once: totalsJson(dl?.droppedAtMostOnce),
    },
    // The alarm of a replica that is not whole (queue/body-repair.ts): all zero when it is.
    replica_bodies: {
      missing: live.bodyRepair?.missing ?? 0,
      repaired: live.bodyRepair?.repaired ?? 0,
      lost: live.bodyRepair?.lost ?? 0,
    },
  };
}

/**
 * A cluster member as `GET /api/nodes` shows it: RabbitMQ's `name`, `type` (always 'disc': every
 * node keeps its data on disk) and `running` (reachable from the node answering), then Styx's own
 * fields: its Raft node id, libp2p peer id, cluster address, role in the metadata group, and
 * whether it leads that group or is the node answering; then `stats`, RabbitMQ's figures of it.
 */
export function nodeJson(
  member: ClusterMemberStatus,
  metadataLeader: string | undefined,
  stats?: { readonly [key: string]: Json },
): Json {
  return {
    name: member.name,
    type: 'disc',
    running: member.online,
    id: member.id,
    peer_id: member.peerId,
    cluster_address: member.address,
    metadata_role: member.voter,
    is_metadata_leader: member.id === metadataLeader,
    is_self: member.isSelf,
    // RabbitMQ's figures of the node (node-stats.ts): measured for the node answering.
    ...stats,
  };
}

/**
 * `GET /api/queues/{vhost}/{name}/quorum_status`: the queue group as its leader reports it, nodes by
 * name (`nameOf`). Per replica: its Raft role, the highest log index known to be on its disk
 * (`match_index`), and `online`: whether the leader heard from it within the last election timeout.
 */
export function quorumStatusJson(
  queue: QueueRecord,
  status: GroupStatus,
  nameOf: (id: string) => string,
): Json {
  return {
    name: queue.name,
    vhost: queue.vhost,
    leader: nameOf(status.leader),
    term: status.term ?? null,
    commit_index: status.commitIndex,
    members: status.replicas.map((r) => ({
      node: nameOf(r.node),
      node_id: r.node,
      role: r.role,
      match_index: r.match,
      online: r.active,
    })),
  };
}
