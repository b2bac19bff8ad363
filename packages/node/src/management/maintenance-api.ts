/**
 * The management API's maintenance endpoints: maintenance mode (RabbitMQ's `rabbitmq-upgrade drain`
 * and `revive`) and the checks an operator runs before stopping a node in a rolling restart
 * (`rabbitmq-queues check_if_node_is_quorum_critical`, `rabbitmq-upgrade await_online_quorum_plus_one`),
 * which `styx ctl drain | revive | check_if_node_is_quorum_critical | await_online_quorum_plus_one` call.
 *
 *   POST /api/nodes/{node}/drain[?timeout=S]   put the node into maintenance mode; answers once its
 *        leaderships moved (or after S seconds, default 30): {node, being_drained, leaders_remaining,
 *        leaders_kept} (the groups it still leads that could move, and those with no other voter online)
 *   POST /api/nodes/{node}/revive               take it out: {node, being_drained: false}
 *   GET  /api/nodes/{node}/maintenance          {node, being_drained}
 *   GET  /api/health/checks/node-is-quorum-critical[?node=N]   (N: default the node answering)
 *        200 {status: "ok", node} or 503 {status: "failed", node, reason, queues: [group...],
 *        metadata_group: group | null}, a group being {type, vhost?, name?, virtual_host?,
 *        readable_name?, members, online, online_count, needed}; on a node alone 200 {status: "ok",
 *        reason: "single node cluster", node}, as RabbitMQ
 *   GET  /api/health/checks/quorum-plus-one-online
 *        200 {status: "ok", groups: []} or 503 {status: "failed", reason, groups}: the groups with
 *        fewer online members than a quorum plus one
 *
 * The state is in the metadata group (broker/node-maintenance.ts says why), so any node may drain or
 * revive any member, a stopped one included. Who is online and who leads what is the answering
 * node's view (its failure detector and leader hints): ask the node concerned for the freshest one.
 *
 * Changes need the tag `administrator`; the checks and the state also `monitoring`. A node
 * without clustering answers 400, as the queue replica endpoints do: there is nothing to move to
 * (but node-is-quorum-critical, which passes there, as RabbitMQ's).
 */
import type { Broker } from '../broker/broker.ts';
import type { QueueReplicaOperations } from '../broker/queue-replica-ops.ts';
import { isReplicatedQueue } from '../broker/replicated-queue.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { flagNotEnabledText, MAINTENANCE_MODE_FLAG } from '../cluster/feature-flags.ts';
import type { GroupMembers } from '../cluster/quorum-critical.ts';
import {
  belowQuorumPlusOne,
  groupLabel,
  onlineMembers,
  quorumCriticalGroups,
  quorumPlusOne,
} from '../cluster/quorum-critical.ts';
import type { MetadataReply } from '../metadata/metadata-machine.ts';
import type { ClusterNodeRecord } from '../metadata/types.ts';
import { badRequest, fromBrokerError, fromMetadataError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import { isClustered, nodeNames } from './queue-replicas-api.ts';
import type { Json } from './views.ts';

/** How long a drain waits for the node's leaderships to move by default, and at most, seconds. */
const DEFAULT_DRAIN_WAIT_S = 30;
const MAX_DRAIN_WAIT_S = 600;
/** How often a drain looks whether the leaderships moved, ms. */
const DRAIN_POLL_MS = 200;

export interface MaintenanceRouteDeps {
  /** The metadata (members, queues, who is drained) and how to change it. */
  readonly broker: Pick<Broker, 'metadataView' | 'manage'>;
  /** Members, their metadata role and who is online; the metadata leader. */
  readonly cluster: ClusterView;
  /** Where each queue's replicas are and who leads it (`queueReplicas`). */
  readonly replicas: Pick<QueueReplicaOperations, 'queueReplicas'>;
}

/** A group still led by a drained node: its label, and whether another voter could take it. */
interface LedGroup {
  readonly label: string;
  readonly movable: boolean;
}

/** Every Raft group as the answering node sees it: each replicated queue's, then the metadata group. */
export function clusterGroups(deps: MaintenanceRouteDeps): GroupMembers[] {
  const members = deps.cluster.members();
  const groups: GroupMembers[] = [];
  const records = deps.broker.metadataView
    .queues()
    .filter(isReplicatedQueue)
    .sort((a, b) => (a.vhost === b.vhost ? cmp(a.name, b.name) : cmp(a.vhost, b.vhost)));
  for (const record of records) {
    const replicas = deps.replicas.queueReplicas(record);
    if (replicas === undefined) continue;
    groups.push({
      group: { kind: 'queue', vhost: record.vhost, name: record.name },
      members: replicas.members,
      online: replicas.online,
    });
  }
  groups.push({
    group: { kind: 'metadata' },
    members: members.filter((m) => m.voter === 'voter').map((m) => m.id),
    online: members.filter((m) => m.online).map((m) => m.id),
  });
  return groups;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `?timeout=S`: whole seconds, 1..MAX_DRAIN_WAIT_S; 400 otherwise. */
function drainWaitMs(request: ApiRequest): number {
  const text = request.query.get('timeout');
  if (text === null) return DEFAULT_DRAIN_WAIT_S * 1000;
  const seconds = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(seconds >= 1 && seconds <= MAX_DRAIN_WAIT_S)) {
    throw badRequest(
      `'timeout' must be a whole number of seconds from 1 to ${MAX_DRAIN_WAIT_S}, got '${text}'`,
    );
  }
  return seconds * 1000;
}

export function maintenanceRoutes(deps: MaintenanceRouteDeps): Route[] {
  const { cluster } = deps;
  const metadata = deps.broker.metadataView;

  const guard = (): void => {
    if (!isClustered(cluster)) {
      throw badRequest(
        'this node is not in a cluster: there is no other node to hand its queues and clients to (start ' +
          'it with --cluster-listen HOST:PORT to form or join one)',
      );
    }
  };
  const member = (idOrName: string): ClusterNodeRecord => {
    const record = metadata.clusterNode(idOrName);
    if (record === undefined) throw notFound(`no cluster member '${idOrName}'`);
    return record;
  };

  const setDrained = async (node: ClusterNodeRecord, drained: boolean): Promise<void> => {
    if (!metadata.enabledFeatureFlags().has(MAINTENANCE_MODE_FLAG))
      throw badRequest(flagNotEnabledText(MAINTENANCE_MODE_FLAG, 'maintenance mode'));
    let reply: MetadataReply;
    try {
      reply = await deps.broker.manage({ type: 'setNodeMaintenance', node: node.id, drained });
    } catch (err) {
      throw fromBrokerError(err);
    }
    if (reply.type === 'error') throw fromMetadataError(reply);
  };

  /** The groups `id` leads as this node sees them; movable when a voter online and not drained could lead. */
  const ledBy = (id: string): LedGroup[] => {
    const online = new Set(
      cluster
        .members()
        .filter((m) => m.online)
        .map((m) => m.id),
    );
    const canLead = (other: string): boolean =>
      other !== id && online.has(other) && !metadata.isNodeDrained(other);
    const led: LedGroup[] = [];
    for (const record of metadata.queues().filter(isReplicatedQueue)) {
      const replicas = deps.replicas.queueReplicas(record);
      if (replicas?.leader !== id) continue;
      led.push({
        label: groupLabel({ kind: 'queue', vhost: record.vhost, name: record.name }),
        movable: replicas.members.some(canLead),
      });
    }
    if (cluster.metadataLeader() === id) {
      const voters = cluster.members().filter((m) => m.voter === 'voter');
      led.push({ label: groupLabel({ kind: 'metadata' }), movable: voters.some((m) => canLead(m.id)) });
    }
    return led;
  };

  const drain = async (request: ApiRequest): Promise<ApiResponse> => {
    guard();
    const waitMs = drainWaitMs(request);
    const node = member(request.params[0] as string);
    await setDrained(node, true);
    // The drained node hands its leaderships over as it applies the change; wait until this
    // node sees them moved (those with nowhere to go are not waited for). A node that is down
    // leads nothing (it finds itself drained when it comes back): nothing to wait for.
    const deadline = performance.now() + waitMs;
    const up = cluster.members().some((m) => m.id === node.id && m.online);
    let led = up ? ledBy(node.id) : [];
    while (led.some((g) => g.movable) && performance.now() < deadline) {
      await sleep(DRAIN_POLL_MS);
      led = ledBy(node.id);
    }
    return {
      status: 200,
      body: {
        node: node.name,
        being_drained: true,
        leaders_remaining: led.filter((g) => g.movable).map((g) => g.label),
        leaders_kept: led.filter((g) => !g.movable).map((g) => g.label),
      },
    };
  };

  const revive = async (request: ApiRequest): Promise<ApiResponse> => {
    guard();
    const node = member(request.params[0] as string);
    await setDrained(node, false);
    return { status: 200, body: { node: node.name, being_drained: false } };
  };

  const state = (request: ApiRequest): ApiResponse => {
    guard();
    const node = member(request.params[0] as string);
    return { status: 200, body: { node: node.name, being_drained: metadata.isNodeDrained(node.id) } };
  };

  const groupJson = (g: GroupMembers, nameOf: (id: string) => string): Json => {
    const online = new Set(g.online);
    const base = {
      members: g.members.map(nameOf),
      online: g.members.filter((id) => online.has(id)).map(nameOf),
      online_count: onlineMembers(g),
      needed: quorumPlusOne(new Set(g.members).size),
    };
    return g.group.kind === 'metadata'
      ? { type: 'metadata', ...base }
      : {
          type: 'queue',
          vhost: g.group.vhost,
          name: g.group.name,
          // RabbitMQ's names for the queue in this check's answer.
          virtual_host: g.group.vhost,
          readable_name: `queue '${g.group.name}' in vhost '${g.group.vhost}'`,
          ...base,
        };
  };

  const quorumCritical = (request: ApiRequest): ApiResponse => {
    // RabbitMQ's answer on a node alone: nothing else could lose a quorum by its stop. A probe or a
    // rolling-restart script written for a cluster then passes there too (no 400).
    if (!isClustered(cluster)) {
      return {
        status: 200,
        body: { status: 'ok', reason: 'single node cluster', node: cluster.self().name },
      };
    }
    const asked = request.query.get('node');
    const node = member(asked ?? cluster.self().id);
    const nameOf = nodeNames(metadata);
    const critical = quorumCriticalGroups(node.id, clusterGroups(deps));
    if (critical.length === 0) return { status: 200, body: { status: 'ok', node: node.name } };
    const queues = critical.filter((g) => g.group.kind === 'queue');
    const metadataGroup = critical.find((g) => g.group.kind === 'metadata');
    const what = [
      ...(queues.length > 0 ? [`${queues.length} queue(s)`] : []),
      ...(metadataGroup !== undefined ? ['the metadata group'] : []),
    ].join(' and ');
    return {
      status: 503,
      body: {
        status: 'failed',
        node: node.name,
        reason: `stopping node '${node.name}' would leave ${what} without a quorum of online members`,
        queues: queues.map((g) => groupJson(g, nameOf)),
        metadata_group: metadataGroup === undefined ? null : groupJson(metadataGroup, nameOf),
      },
    };
  };

  const quorumPlusOneOnline = (): ApiResponse => {
    guard();
    const nameOf = nodeNames(metadata);
    const below = belowQuorumPlusOne(clusterGroups(deps));
    if (below.length === 0) return { status: 200, body: { status: 'ok', groups: [] } };
    return {
      status: 503,
      body: {
        status: 'failed',
        reason: `${below.length} group(s) have fewer online members than a quorum plus one`,
        groups: below.map((g) => groupJson(g, nameOf)),
      },
    };
  };

  return [
    { path: ['nodes', ':node', 'drain'], methods: { POST: drain } },
    { path: ['nodes', ':node', 'revive'], methods: { POST: revive } },
    { path: ['nodes', ':node', 'maintenance'], methods: { GET: state } },
    { path: ['health', 'checks', 'node-is-quorum-critical'], methods: { GET: quorumCritical } },
    { path: ['health', 'checks', 'quorum-plus-one-online'], methods: { GET: quorumPlusOneOnline } },
  ];
}
