/**
 * The node's metrics endpoints: this node's own figures in Prometheus' text format 0.0.4
 * (exposition-writer.ts). Each node of a cluster serves its own; a dashboard sums across nodes.
 * Three views, as RabbitMQ's Prometheus plugin has them (`MetricsView`):
 * - `GET /metrics`, aggregated: the node's totals, per-queue series summed without queue labels
 *   (small and cheap whatever the number of queues);
 * - `GET /metrics/per-object`: the same series, per queue (`vhost`, `queue` labels);
 * - `GET /metrics/detailed?family=…&vhost=…`: only the families asked for, per queue, filtered by
 *   vhost, under `rabbitmq_detailed_` names (detailed-families.ts).
 *
 * Names follow RabbitMQ's Prometheus plugin where it has the figure (`rabbitmq_queue_messages_ready`,
 * `rabbitmq_global_messages_received_total`, `rabbitmq_raft_term`, ...) so its Grafana dashboards
 * and the cluster-operator's alert rules apply (test: dashboard-series.test.ts), Node.js' usual
 * names for the heap, and `styx_` names for what RabbitMQ lacks: dead-lettering per queue, reason
 * and strategy, dropped copies, pending and blocked hand-offs, elections, per-replica commit lag,
 * the log's sync latency.
 *
 * Where each figure comes from, so nothing is counted twice across a cluster:
 * - per-queue message figures (`rabbitmq_queue_*`, `styx_queue_*`): only from the replica that
 *   leads the queue, so summing every node's gives each queue once;
 * - Raft figures (`rabbitmq_raft_*`, `styx_raft_*`): from every replica (each has its own term and
 *   indexes), per-replica commit lag from the leader;
 * - client traffic (`rabbitmq_global_messages_*` but dead-lettering, connection churn): counted by
 *   the channels of the node the client is connected to (broker-counters.ts);
 * - dead-lettering totals (`rabbitmq_global_messages_dead_lettered_*`): what this node's queue
 *   leaders applied since it started.
 *
 * Cost with many queues: one pass over the replicas to read their figures, then one pass per
 * family; label sets are escaped once per queue. The dead-letter families of a queue without a
 * dead-letter exchange are written only where a count is not zero (a plain queue costs none of
 * those lines); a queue with one gets every series its strategy can move, zeros included, so an
 * alert on `increase()` sees the first dead-letter.
 */
import type { ClusterMemberStatus } from '../cluster/cluster-view.ts';
import type { DeadLetterTimings } from '../queue/dead-letter-timings.ts';
import type { DeadLetterStrategyLabel } from '../queue/queue-flow-counters.ts';
import type { RemovalReason } from '../queue/types.ts';
import type { DetailedRequest } from './detailed-families.ts';
import { writeDetailed } from './detailed-families.ts';
import { writeEventLoopLag } from './event-loop-lag.ts';
import { ExpositionWriter, labelPairs } from './exposition-writer.ts';
import type { NodeMetricsSource } from './metrics-source.ts';
import type { NodeResources } from './node-resources.ts';
import { readNodeResources } from './node-resources.ts';
import { writeAlarms, writeChurn, writeNodeLimits, writeNodeUsage } from './node-series.ts';
import { allQueueFigures } from './queue-figures.ts';
import type { QueueRow, QueueShape } from './queue-series.ts';
import {
  QUEUE_MESSAGE_FAMILIES,
  queueRow,
  RAFT_FAMILIES,
  writeCommitLag,
  writeDeadLettering,
  writePerQueue,
} from './queue-series.ts';
import { writeRedrives } from './redrive-series.ts';

/** The content type of the format written. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const REASONS: readonly RemovalReason[] = ['rejected', 'expired', 'maxlen', 'delivery_limit'];
const STRATEGIES: readonly DeadLetterStrategyLabel[] = ['at_most_once', 'at_least_once'];
/** RabbitMQ's label for the queues Styx has (replicated, Raft-based: quorum queues). */
const QUEUE_TYPE = 'queue_type="rabbit_quorum_queue"';

/** Which endpoint is rendered; `rabbitmq_identity_info` says it in its `rabbitmq_endpoint` label. */
export type MetricsView =
  | { readonly kind: 'aggregated' }
  | { readonly kind: 'per-object' }
  | ({ readonly kind: 'detailed' } & DetailedRequest);

export const AGGREGATED: MetricsView = { kind: 'aggregated' };

/** What the node's cluster looks like from here (`ClusterView.members()`). */
export interface MetricsClusterView {
  members(): readonly ClusterMemberStatus[];
}

/** Lets the node's other work run (setImmediate: after pending I/O). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Render one view of the node's metrics: UTF-8, in the chunks written (send them in order; a
 * per-object scrape of 10,000 queues is ~11 MiB, not worth one more copy). `nameOf` maps node ids
 * to names (replica labels).
 *
 * The figures are read in one synchronous pass; writing them yields (`pause`) between per-queue
 * families, so a scrape of 10,000 queues holds the event loop for a family's worth (a few ms), not
 * for the whole scrape. Flow counters are read as they are when their family is written: series of
 * one scrape are read within the scrape, not at one instant (as with RabbitMQ's collectors).
 */
export async function renderNodeMetrics(
  source: NodeMetricsSource,
  cluster: MetricsClusterView,
  nameOf: (id: string) => string,
  view: MetricsView = AGGREGATED,
  pause: () => Promise<void> = nextTurn,
): Promise<Buffer[]> {
  const resources = await readNodeResources(source.dataDir);
  const w = new ExpositionWriter();
  writeIdentity(w, source, view.kind);
  const figures = allQueueFigures(source.replicas(), (id) => source.raftGroupOf(id), nameOf);
  const all = figures.map(queueRow);
  if (view.kind === 'detailed') {
    await writeDetailed(w, source, resources, all, view, pause);
    return w.chunkList();
  }
  const led = all.filter((row) => row.figures.leader);
  writeNode(w, source, cluster, led, resources);
  writeClientTraffic(w, source);
  writeGlobalDeadLettering(w, source);
  writeRedrives(w, source.metadata);
  const shape: QueueShape = view.kind;
  for (const family of QUEUE_MESSAGE_FAMILIES) {
    await pause();
    writePerQueue(w, led, family, shape);
  }
  await pause();
  writeDeadLettering(w, led, shape);
  const replicated = all.filter((row) => row.figures.raft !== undefined);
  for (const family of RAFT_FAMILIES) {
    await pause();
    writePerQueue(w, replicated, family, shape);
  }
  await pause();
  writeCommitLag(w, replicated, shape);
  return w.chunkList();
}

// ------------------------------------------------------------------------------ identity

/**
 * `rabbitmq_identity_info` and `rabbitmq_build_info`, on every endpoint: RabbitMQ's dashboards
 * join every query on the first (`rabbitmq_cluster`, `rabbitmq_node`, `rabbitmq_endpoint`).
 * `erlang_version` holds the Node.js version: the runtime's, where RabbitMQ has Erlang's.
 */
function writeIdentity(w: ExpositionWriter, source: NodeMetricsSource, endpoint: MetricsView['kind']): void {
  w.family(
    'rabbitmq_identity_info',
    'gauge',
    'The node answering and its cluster (labels), and this endpoint',
  );
  w.sample(
    labelPairs([
      ['rabbitmq_node', source.nodeName],
      ['rabbitmq_cluster', source.clusterName],
      ['rabbitmq_endpoint', endpoint],
    ]),
    1,
  );
  w.family('rabbitmq_build_info', 'gauge', "Styx's version and the Node.js runtime's (labels)");
  w.sample(
    labelPairs([
      ['rabbitmq_version', source.version],
      ['product_name', 'Styx'],
      ['product_version', source.version],
      ['erlang_version', process.version],
    ]),
    1,
  );
}

// ------------------------------------------------------------------------------ node

function writeNode(
  w: ExpositionWriter,
  source: NodeMetricsSource,
  cluster: MetricsClusterView,
  led: readonly QueueRow[],
  resources: NodeResources,
): void {
  writeNodeUsage(w, resources);
  writeNodeLimits(w, source, resources);
  writeAlarms(w, source);
  const memory = process.memoryUsage();
  w.single('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use, bytes', memory.heapUsed);
  w.single('nodejs_heap_size_total_bytes', 'gauge', 'V8 heap reserved, bytes', memory.heapTotal);
  w.single(
    'nodejs_external_memory_bytes',
    'gauge',
    'Memory of C++ objects bound to JavaScript ones (buffers), bytes',
    memory.external,
  );
  writeEventLoopLag(w);

  w.single('rabbitmq_connections', 'gauge', 'Client connections open on this node', source.connectionCount());
  w.single('rabbitmq_channels', 'gauge', 'Channels open on this node', source.channelCount());
  let consumers = 0;
  for (const row of led) consumers += row.figures.counts.consumers;
  w.single('rabbitmq_consumers', 'gauge', 'Consumers of the queues led by this node', consumers);
  w.single('rabbitmq_queues', 'gauge', 'Queues led by this node', led.length);
  w.single(
    'rabbitmq_global_publishers',
    'gauge',
    "Channels of this node's clients that have published",
    source.publisherCount(),
  );
  w.single(
    'rabbitmq_global_consumers',
    'gauge',
    "Consumers on the channels of this node's clients",
    source.clientConsumerCount(),
  );
  writeChurn(w, source);

  const members = cluster.members();
  let online = 0;
  for (const m of members) if (m.online) online++;
  w.single(
    'styx_cluster_members',
    'gauge',
    'Members of the cluster, as this node knows them',
    members.length,
  );
  w.single(
    'styx_cluster_members_online',
    'gauge',
    'Members of the cluster this node reaches now (itself included)',
    online,
  );
  w.single(
    'rabbitmq_unreachable_cluster_peers_count',
    'gauge',
    'Members of the cluster this node does not reach now',
    members.length - online,
  );
  w.family('styx_cluster_member_up', 'gauge', 'Whether this node reaches each member now (1) or not (0)');
  for (const m of members) w.sample(labelPairs([['member', m.name]]), m.online ? 1 : 0);

  const meta = source.metadataRaft();
  if (meta !== undefined) {
    w.single(
      'styx_metadata_raft_term',
      'gauge',
      "The metadata group's current Raft term on this node",
      meta.term,
    );
    w.single(
      'styx_metadata_raft_commit_index',
      'gauge',
      "The metadata group's commit index on this node",
      meta.commitIndex,
    );
    w.single(
      'styx_metadata_raft_elections_total',
      'counter',
      "Elections the metadata group's replica here started",
      meta.elections,
    );
    w.single(
      'styx_metadata_leader',
      'gauge',
      'Whether this node leads the metadata group (1) or not (0)',
      meta.role === 'leader' ? 1 : 0,
    );
  }
  writeRaftTraffic(w, source);
  if (source.logSync !== undefined) {
    w.family(
      'styx_log_sync_duration_seconds',
      'histogram',
      'Time from handing a batch of log writes to LMDB until it was committed and synced to disk',
    );
    w.histogram('', source.logSync);
  }
}

/** What this node's Raft host sent its peers: per-message and per-write costs show apart. */
function writeRaftTraffic(w: ExpositionWriter, source: NodeMetricsSource): void {
  const t = source.raftTraffic();
  if (t === undefined) return;
  // styx_raft_<key>_total: its help, its value (none: the transport does not count it).
  const counters: Record<string, readonly [string, number | undefined]> = {
    peer_batches_sent: ['Batches of Raft messages sent to peers (one frame each)', t.batchesSent],
    messages_sent: ['Raft messages sent to peers, every type and group', t.messagesSent],
    appends_sent: ['Raft appends (AppendEntries) sent to peers', t.appendsSent],
    entries_sent: ['Log entries carried by the appends sent to peers', t.entriesSent],
    append_rejections_received: [
      'Append rejections received from peers (the leader walks back and sends entries again)',
      t.appendRejectsReceived,
    ],
    peer_writes: ['Writes to the Raft streams to peers', t.transportWrites],
  };
  for (const [key, [help, value]] of Object.entries(counters)) {
    if (value !== undefined) w.single(`styx_raft_${key}_total`, 'counter', help, value);
  }
}

/** The client traffic of this node (broker-counters.ts), under RabbitMQ's global counter names. */
function writeClientTraffic(w: ExpositionWriter, source: NodeMetricsSource): void {
  const c = source.counters;
  const counters: readonly [string, string, number][] = [
    ['received', 'Messages published by clients of this node', c.received],
    ['received_confirm', 'Of those, messages published in confirm mode', c.receivedConfirm],
    ['routed', 'Messages routed to at least one queue', c.routed],
    ['unroutable_dropped', 'Unroutable messages dropped (published without mandatory)', c.unroutableDropped],
    [
      'unroutable_returned',
      'Unroutable messages returned to the publisher (mandatory)',
      c.unroutableReturned,
    ],
    ['confirmed', 'Messages confirmed to publishers', c.confirmed],
    ['delivered', 'Messages delivered to clients of this node (consume and get)', c.delivered],
    [
      'delivered_consume_auto_ack',
      'Messages delivered to consumers in no-ack mode',
      c.deliveredConsumeAutoAck,
    ],
    ['delivered_consume_manual_ack', 'Messages delivered to consumers that ack', c.deliveredConsumeManualAck],
    ['delivered_get_auto_ack', 'Messages fetched with basic.get in no-ack mode', c.deliveredGetAutoAck],
    ['delivered_get_manual_ack', 'Messages fetched with basic.get, to be acked', c.deliveredGetManualAck],
    ['get_empty', 'basic.get calls that found the queue empty', c.getEmpty],
    ['redelivered', 'Messages delivered again (flagged redelivered)', c.redelivered],
    ['acknowledged', 'Messages acked by clients of this node', c.acknowledged],
  ];
  for (const [name, help, value] of counters) {
    w.single(`rabbitmq_global_messages_${name}_total`, 'counter', help, value);
  }
  // RabbitMQ's per-channel figures, summed over this node's channels (Styx keeps node totals).
  w.single(
    'rabbitmq_channel_messages_published_total',
    'counter',
    "Messages published on this node's channels",
    c.received,
  );
  w.single(
    'rabbitmq_channel_messages_confirmed_total',
    'counter',
    "Messages confirmed on this node's channels",
    c.confirmed,
  );
  w.single(
    'rabbitmq_channel_messages_unroutable_dropped_total',
    'counter',
    "Unroutable messages dropped on this node's channels (published without mandatory)",
    c.unroutableDropped,
  );
  w.single(
    'rabbitmq_channel_messages_unroutable_returned_total',
    'counter',
    "Unroutable messages returned on this node's channels (mandatory)",
    c.unroutableReturned,
  );
  w.family(
    'rabbitmq_message_size_bytes',
    'histogram',
    'Body sizes of the messages published by clients of this node, bytes',
  );
  w.histogram('', c.messageSizes());
}

/** What this node's queue leaders applied: enqueued, and dead-lettered per reason and strategy. */
function writeGlobalDeadLettering(w: ExpositionWriter, source: NodeMetricsSource): void {
  const flow = source.nodeFlow;
  w.single(
    'styx_global_messages_enqueued_total',
    'counter',
    "Messages enqueued by this node's queue leaders",
    flow.published,
  );
  for (const reason of REASONS) {
    w.family(
      `rabbitmq_global_messages_dead_lettered_${reason}_total`,
      'counter',
      `Messages dead-lettered for reason ${reason} by this node's queue leaders (at-least-once: once every target confirmed)`,
    );
    for (const strategy of STRATEGIES) {
      w.sample(`${QUEUE_TYPE},dead_letter_strategy="${strategy}"`, flow.deadLettered[strategy][reason]);
    }
  }
  let confirmed = 0;
  for (const reason of REASONS) confirmed += flow.deadLettered.at_least_once[reason];
  w.family(
    'rabbitmq_global_messages_dead_lettered_confirmed_total',
    'counter',
    "Messages dead-lettered at-least-once and confirmed by every target queue, by this node's queue leaders",
  );
  w.sample(`${QUEUE_TYPE},dead_letter_strategy="at_least_once"`, confirmed);
  writeDeadLetterStages(w, source.deadLetterTimings);
}

/** Where dead-lettering's time goes on this node's queue leaders (queue/dead-letter-timings.ts). */
function writeDeadLetterStages(w: ExpositionWriter, t: DeadLetterTimings): void {
  w.family(
    'styx_dead_letter_stage_seconds',
    'histogram',
    "Dead-lettering by this node's queue leaders, per stage: expiry_proposed (a message's deadline to the entry that expired it), expiry_committed (that entry to its commit), copy_committed (the removal to the copy's commit at its target, per strategy)",
  );
  w.histogram('stage="expiry_proposed"', t.expiryProposed);
  w.histogram('stage="expiry_committed"', t.expiryCommitted);
  for (const [strategy, histogram] of Object.entries(t.copyCommitted)) {
    w.histogram(`stage="copy_committed",dead_letter_strategy="${strategy.replaceAll('-', '_')}"`, histogram);
  }
}
