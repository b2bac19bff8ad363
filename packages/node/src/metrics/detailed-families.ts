/**
 * `GET /metrics/detailed`: only the metric families a scrape asks for (`family=`, repeatable),
 * per queue and filtered by vhost (`vhost=`, repeatable; every vhost when absent), under
 * RabbitMQ's `rabbitmq_detailed_` names (`styx_detailed_` for Styx's own) so they never clash
 * with `/metrics` scraped into the same Prometheus. The family names are RabbitMQ's, so a scrape
 * configured for RabbitMQ (`family=queue_coarse_metrics&family=queue_consumer_count`) works.
 *
 * A family Styx does not have (channel_metrics, …) is ignored, as RabbitMQ ignores one it does not
 * know: a scrape job shared with RabbitMQ nodes keeps working. `DETAILED_FAMILIES` lists the ones
 * it has. Without any family only the identity series are written (as RabbitMQ does).
 */
import type { ExpositionWriter } from './exposition-writer.ts';
import type { NodeMetricsSource } from './metrics-source.ts';
import type { NodeResources } from './node-resources.ts';
import { writeChurn, writeNodeLimits, writeNodeUsage } from './node-series.ts';
import type { PerQueueFamily, QueueRow } from './queue-series.ts';
import {
  detailedName,
  QUEUE_MESSAGE_FAMILIES,
  RAFT_FAMILIES,
  writeCommitLag,
  writeDeadLettering,
  writePerQueue,
} from './queue-series.ts';

/** What a scrape of `/metrics/detailed` asked for. */
export interface DetailedRequest {
  /** Family names (RabbitMQ's); unknown ones are ignored. */
  readonly families: ReadonlySet<string>;
  /** Only queues of these vhosts; undefined: every vhost. */
  readonly vhosts: ReadonlySet<string> | undefined;
}

function queueFamilies(...names: string[]): PerQueueFamily[] {
  return names.map((name) => {
    const family = QUEUE_MESSAGE_FAMILIES.find((f) => f.name === name);
    if (family === undefined) throw new RangeError(`no per-queue family ${name}`);
    return family;
  });
}

/** The per-queue families of each of RabbitMQ's queue family names that Styx has. */
const QUEUE_GROUPS: ReadonlyMap<string, readonly PerQueueFamily[]> = new Map([
  [
    'queue_coarse_metrics',
    queueFamilies(
      'rabbitmq_queue_messages_ready',
      'rabbitmq_queue_messages_unacked',
      'rabbitmq_queue_messages',
    ),
  ],
  ['queue_consumer_count', queueFamilies('rabbitmq_queue_consumers')],
  ['queue_metrics', queueFamilies('rabbitmq_queue_consumers', 'rabbitmq_queue_messages_ready_bytes')],
  [
    'queue_delivery_metrics',
    queueFamilies(
      'rabbitmq_queue_messages_delivered_total',
      'rabbitmq_queue_messages_redelivered_total',
      'rabbitmq_queue_messages_acked_total',
    ),
  ],
  [
    'styx_dead_letter_metrics',
    queueFamilies(
      'styx_queue_dead_letter_pending',
      'styx_queue_dead_letter_pending_bytes',
      'styx_queue_dead_letter_blocked',
    ),
  ],
]);

/** Every family name `/metrics/detailed` answers (others are ignored). */
export const DETAILED_FAMILIES: readonly string[] = [
  ...QUEUE_GROUPS.keys(),
  'ra_metrics',
  'connection_churn_metrics',
  'node_coarse_metrics',
  'node_metrics',
];

/** Write the families `request` asks for; queue rows are all of this node's replicas. */
export async function writeDetailed(
  w: ExpositionWriter,
  source: NodeMetricsSource,
  resources: NodeResources,
  all: readonly QueueRow[],
  request: DetailedRequest,
  pause: () => Promise<void>,
): Promise<void> {
  const { families, vhosts } = request;
  if (families.has('node_coarse_metrics')) writeNodeUsage(w, resources, detailedName);
  if (families.has('node_metrics')) writeNodeLimits(w, source, resources, detailedName);
  if (families.has('connection_churn_metrics')) writeChurn(w, source, detailedName);

  const rows = vhosts === undefined ? all : all.filter((row) => vhosts.has(row.figures.vhost));
  const led = rows.filter((row) => row.figures.leader);
  // A family in several groups (queue_consumers) is written once.
  const written = new Set<PerQueueFamily>();
  for (const [group, groupFamilies] of QUEUE_GROUPS) {
    if (!families.has(group)) continue;
    for (const family of groupFamilies) {
      if (written.has(family)) continue;
      written.add(family);
      await pause();
      writePerQueue(w, led, family, 'per-object', detailedName(family.name));
    }
  }
  if (families.has('styx_dead_letter_metrics')) {
    await pause();
    writeDeadLettering(w, led, 'per-object', detailedName);
  }
  if (families.has('ra_metrics')) {
    const replicated = rows.filter((row) => row.figures.raft !== undefined);
    for (const family of RAFT_FAMILIES) {
      await pause();
      writePerQueue(w, replicated, family, 'per-object', detailedName(family.name));
    }
    await pause();
    writeCommitLag(w, replicated, 'per-object', detailedName);
  }
}
