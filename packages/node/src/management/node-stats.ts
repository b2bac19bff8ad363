/**
 * The figures RabbitMQ's `GET /api/nodes` gives about a node that only the node itself knows: its
 * uptime, memory use against its budget (RabbitMQ's high watermark) and alarm, processors, OS pid,
 * client connections, the exchange types it implements. Styx measures these for the node
 * answering; other members' figures are null in its answer (asking each member is the metrics
 * endpoint's job: every node serves its own).
 */
import { availableParallelism } from 'node:os';
import { tableGet } from '@styx/client/wire';
import type { Broker } from '../broker/broker.ts';
import type { ClusterMemberStatus } from '../cluster/cluster-view.ts';
import type { EXCHANGE_TYPES } from '../metadata/types.ts';
import type { Json } from './views.ts';

const EXCHANGE_DESCRIPTIONS: Record<(typeof EXCHANGE_TYPES)[number], string> = {
  direct: 'AMQP direct exchange, as per the AMQP specification',
  fanout: 'AMQP fanout exchange, as per the AMQP specification',
  topic: 'AMQP topic exchange, as per the AMQP specification',
  headers: 'AMQP headers exchange, as per the AMQP specification',
};

/** The keys `localNodeStats` fills, each null for a member other than the node answering. */
export const NODE_STAT_KEYS = [
  'uptime',
  'mem_used',
  'mem_limit',
  'mem_alarm',
  'disk_free_alarm',
  'processors',
  'os_pid',
  'sockets_used',
  'rates_mode',
  'partitions',
  'exchange_types',
  'applications',
] as const;

export type NodeStats = { readonly [key in (typeof NODE_STAT_KEYS)[number] | 'being_drained']: Json };

/**
 * RabbitMQ's figures of `member` as the node answering knows them: its own, measured; another
 * member's null, but for `being_drained` (maintenance mode), which the metadata holds for all.
 */
export function nodeStats(broker: Broker, member: ClusterMemberStatus): NodeStats {
  const drained = broker.metadataView.isNodeDrained(member.id);
  if (!member.isSelf) {
    const unknown = Object.fromEntries(NODE_STAT_KEYS.map((key) => [key, null]));
    return { ...unknown, being_drained: drained } as unknown as NodeStats;
  }
  return { ...localNodeStats(broker), being_drained: drained };
}

/** The answering node's own figures, as RabbitMQ names them. */
function localNodeStats(broker: Broker): Omit<NodeStats, 'being_drained'> {
  const version = tableGet(broker.serverProperties, 'version')?.longStr ?? null;
  return {
    uptime: Math.round(process.uptime() * 1000),
    mem_used: process.memoryUsage.rss(),
    // 0 when the node has no memory budget: nothing blocks publishers.
    mem_limit: broker.memoryBudgetBytes,
    mem_alarm: broker.isMemoryBlocked,
    // Styx has no disk alarm.
    disk_free_alarm: false,
    processors: availableParallelism(),
    os_pid: String(process.pid),
    sockets_used: broker.connectionCount(),
    // Message rates are not kept per node (the metrics endpoint has the counters).
    rates_mode: 'none',
    // Members this node cannot reach show as `running: false`; there is no partition handling mode.
    partitions: [],
    exchange_types: Object.entries(EXCHANGE_DESCRIPTIONS).map(([name, description]) => ({
      name,
      description,
      enabled: true,
    })),
    applications: [{ name: 'styx', description: 'Styx message broker', version }],
  };
}
