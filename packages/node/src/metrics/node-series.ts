/**
 * The node's own series — resources, limits, alarms, connection churn — written by `/metrics`,
 * `/metrics/per-object` and (under their `rabbitmq_detailed_` names, when their family is asked
 * for) `/metrics/detailed`. `rename` gives the name for the endpoint (the identity, or
 * `detailedName`).
 */
import { totalmem } from 'node:os';
import type { ExpositionWriter } from './exposition-writer.ts';
import type { NodeMetricsSource } from './metrics-source.ts';
import type { NodeResources } from './node-resources.ts';

type Rename = (name: string) => string;

const same: Rename = (name) => name;

/** RabbitMQ's `node_coarse_metrics`: what the node uses now. */
export function writeNodeUsage(w: ExpositionWriter, resources: NodeResources, rename: Rename = same): void {
  if (resources.openFds !== undefined) {
    w.single(rename('rabbitmq_process_open_fds'), 'gauge', 'Open file descriptors', resources.openFds);
  }
  w.single(
    rename('rabbitmq_process_resident_memory_bytes'),
    'gauge',
    'Memory used in bytes (resident set)',
    process.memoryUsage.rss(),
  );
  if (resources.diskAvailableBytes !== undefined) {
    w.single(
      rename('rabbitmq_disk_space_available_bytes'),
      'gauge',
      "Free bytes on the data directory's filesystem (for an unprivileged process)",
      resources.diskAvailableBytes,
    );
  }
}

/**
 * RabbitMQ's `node_metrics`: the node's limits and uptime. Without a memory budget (0) the limit
 * is the machine's memory; the disk limit is `disk_free_limit` (absent on a node without a data
 * directory: it watches no disk).
 */
export function writeNodeLimits(
  w: ExpositionWriter,
  source: NodeMetricsSource,
  resources: NodeResources,
  rename: Rename = same,
): void {
  if (resources.maxFds !== undefined) {
    w.single(rename('rabbitmq_process_max_fds'), 'gauge', 'Open file descriptors limit', resources.maxFds);
  }
  w.single(
    rename('rabbitmq_resident_memory_limit_bytes'),
    'gauge',
    'Memory budget in bytes: publishers are blocked above it (the machine memory when no budget is set)',
    source.memoryLimitBytes > 0 ? source.memoryLimitBytes : totalmem(),
  );
  if (source.diskFreeLimitBytes !== undefined) {
    w.single(
      rename('rabbitmq_disk_space_available_limit_bytes'),
      'gauge',
      'Free disk space low watermark in bytes (disk_free_limit): publishers are blocked below it',
      source.diskFreeLimitBytes,
    );
  }
  w.single(
    rename('rabbitmq_erlang_uptime_seconds'),
    'gauge',
    'Node uptime (of the Node.js process)',
    process.uptime(),
  );
}

/** RabbitMQ's alarm gauges: 1 while an alarm blocks publishers. */
export function writeAlarms(w: ExpositionWriter, source: NodeMetricsSource): void {
  w.single(
    'rabbitmq_alarms_memory_used_watermark',
    'gauge',
    'Whether the node is over its memory budget, publishers blocked (1) or not (0)',
    source.memoryAlarm() ? 1 : 0,
  );
  w.single(
    'rabbitmq_alarms_free_disk_space_watermark',
    'gauge',
    'Whether free disk space is below disk_free_limit, publishers blocked (1) or not (0)',
    source.diskAlarm() ? 1 : 0,
  );
  w.single(
    'rabbitmq_alarms_file_descriptor_limit',
    'gauge',
    'Whether a file descriptor alarm blocks publishers (Styx has none: always 0)',
    0,
  );
}

/** RabbitMQ's `connection_churn_metrics`. */
export function writeChurn(w: ExpositionWriter, source: NodeMetricsSource, rename: Rename = same): void {
  const c = source.counters;
  const churn: readonly [string, string, number][] = [
    ['rabbitmq_connections_opened_total', 'Client connections opened', c.connectionsOpened],
    ['rabbitmq_connections_closed_total', 'Client connections closed or lost', c.connectionsClosed],
    ['rabbitmq_channels_opened_total', 'Channels opened', c.channelsOpened],
    ['rabbitmq_channels_closed_total', 'Channels closed (with their connection or alone)', c.channelsClosed],
    ['rabbitmq_queues_declared_total', 'Queues declared (queue.declare that succeeded)', c.queuesDeclared],
    ['rabbitmq_queues_created_total', 'Queues created through this node', c.queuesCreated],
    ['rabbitmq_queues_deleted_total', 'Queues deleted through this node', c.queuesDeleted],
  ];
  for (const [name, help, value] of churn) w.single(rename(name), 'counter', help, value);
}
