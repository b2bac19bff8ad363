/**
 * The figures RabbitMQ's `GET /api/nodes` gives about a node that only the node itself knows: its
 * uptime, memory use against its budget (RabbitMQ's high watermark) and alarm, free disk space
 * against `disk_free_limit` and alarm, file descriptors and sockets, processors, OS pid, the
 * exchange types it implements. Styx measures these for the node answering; of another member it
 * shows the resource figures and alarms of the member's last resource report (pushed every few
 * seconds, broker/resource-alarms.ts), and null for the rest (and for everything while no report
 * of it stands: it is down, or runs a version without them).
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
  'disk_free',
  'disk_free_limit',
  'disk_free_alarm',
  'fd_used',
  'fd_total',
  'sockets_total',
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
 * member's resource figures and alarms from its last report, the rest null; `being_drained`
 * (maintenance mode) from the metadata, which holds it for all.
 */
export function nodeStats(broker: Broker, member: ClusterMemberStatus): NodeStats {
  const drained = broker.metadataView.isNodeDrained(member.id);
  if (!member.isSelf) {
    const unknown = Object.fromEntries(NODE_STAT_KEYS.map((key) => [key, null]));
    const report = broker.alarms.reportOf(member.id);
    const reported =
      report === undefined
        ? {}
        : {
            ...report.figures,
            mem_alarm: report.alarms.includes('memory'),
            disk_free_alarm: report.alarms.includes('disk'),
          };
    return { ...unknown, ...reported, being_drained: drained } as unknown as NodeStats;
  }
  return { ...localNodeStats(broker), being_drained: drained };
}

/** The answering node's own figures, as RabbitMQ names them. */
function localNodeStats(broker: Broker): Omit<NodeStats, 'being_drained'> {
  const version = tableGet(broker.serverProperties, 'version')?.longStr ?? null;
  return {
    uptime: Math.round(process.uptime() * 1000),
    // mem_limit is 0 when the node has no memory budget: no memory alarm. disk_free and
    // disk_free_limit are null on a node without a data directory: no disk alarm. fd_* are null
    // where the OS does not tell (no /proc); sockets_used counts client connections.
    ...broker.resourceFigures(),
    mem_alarm: broker.resources.memoryAlarm,
    disk_free_alarm: broker.resources.diskAlarm,
    processors: availableParallelism(),
    os_pid: String(process.pid),
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
