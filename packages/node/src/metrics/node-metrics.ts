/**
 * The node's `GET /metrics`: this node's own figures in Prometheus' text format 0.0.4
 * (exposition-writer.ts). Each node of a cluster serves its own; a dashboard sums across nodes.
 *
 * Names follow RabbitMQ's Prometheus plugin where it has the figure (`rabbitmq_queue_messages_ready`,
 * `rabbitmq_global_messages_dead_lettered_expired_total`, `rabbitmq_raft_term_total`, ...) so
 * existing dashboards and alerts apply, Node.js' usual names for the heap, and `styx_` names for
 * what RabbitMQ lacks: dead-lettering per queue, reason and strategy, dropped copies, pending and
 * blocked hand-offs, elections, per-replica commit lag, the log's sync latency.
 *
 * Where each figure comes from, so nothing is counted twice across a cluster:
 * - per-queue message figures (`rabbitmq_queue_*`, `styx_queue_*`): only from the replica that
 *   leads the queue, so summing every node's gives each queue once;
 * - Raft figures (`rabbitmq_raft_*`, `styx_raft_*`): from every replica (each has its own term and
 *   indexes), per-replica commit lag from the leader;
 * - node totals (`rabbitmq_global_*`): what this node's leaders applied since it started.
 *
 * Cost with many queues: one pass over the replicas to read their figures, then one pass per
 * family; label sets are escaped once per queue. The dead-letter families of a queue without a
 * dead-letter exchange are written only where a count is not zero (a plain queue costs none of
 * those lines); a queue with one gets every series its strategy can move, zeros included, so an
 * alert on `increase()` sees the first dead-letter.
 */
import type { ClusterMemberStatus } from '../cluster/cluster-view.ts';
import type { DeadLetterStrategyLabel } from '../queue/queue-flow-counters.ts';
import type { RemovalReason, RemovalTotals } from '../queue/types.ts';
import { ExpositionWriter, labelPairs, withLabels } from './exposition-writer.ts';
import type { NodeMetricsSource } from './metrics-source.ts';
import type { QueueFigures, RaftFigures } from './queue-figures.ts';
import { allQueueFigures } from './queue-figures.ts';

/** The content type of the format written. */
export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

const REASONS: readonly RemovalReason[] = ['rejected', 'expired', 'maxlen', 'delivery_limit'];
const STRATEGIES: readonly DeadLetterStrategyLabel[] = ['at_most_once', 'at_least_once'];
/** RabbitMQ's label for the queues Styx has (replicated, Raft-based: quorum queues). */
const QUEUE_TYPE = 'queue_type="rabbit_quorum_queue"';

/** What the node's cluster looks like from here (`ClusterView.members()`). */
export interface MetricsClusterView {
  members(): readonly ClusterMemberStatus[];
}

/** A queue about to be written: its figures and its label set, escaped once. */
interface QueueRow {
  readonly figures: QueueFigures;
  readonly labels: string;
}

/** Lets the node's other work run (setImmediate: after pending I/O). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * Render the node's metrics: UTF-8, in the chunks written (send them in order; a scrape of 10,000
 * queues is ~11 MiB, not worth one more copy). `nameOf` maps node ids to names (replica labels).
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
  pause: () => Promise<void> = nextTurn,
): Promise<Buffer[]> {
  const w = new ExpositionWriter();
  const figures = allQueueFigures(source.replicas(), (id) => source.raftGroupOf(id), nameOf);
  const all: QueueRow[] = figures.map((f) => ({
    figures: f,
    labels: labelPairs([
      ['vhost', f.vhost],
      ['queue', f.name],
    ]),
  }));
  const led = all.filter((row) => row.figures.leader);
  writeNode(w, source, cluster, led);
  writeGlobalFlow(w, source);
  for (const family of QUEUE_MESSAGE_FAMILIES) {
    await pause();
    writePerQueue(w, led, family);
  }
  await pause();
  writeDeadLettering(w, led);
  const replicated = all.filter((row) => row.figures.raft !== undefined);
  for (const family of RAFT_FAMILIES) {
    await pause();
    writePerQueue(w, replicated, family);
  }
  await pause();
  writeCommitLag(w, replicated);
  return w.chunkList();
}

// ------------------------------------------------------------------------------ node

function writeNode(
  w: ExpositionWriter,
  source: NodeMetricsSource,
  cluster: MetricsClusterView,
  led: readonly QueueRow[],
): void {
  w.family('rabbitmq_identity_info', 'gauge', 'The node answering (labels: its name)');
  w.sample(
    labelPairs([
      ['rabbitmq_node', source.nodeName],
      ['rabbitmq_cluster', source.nodeName],
    ]),
    1,
  );
  const memory = process.memoryUsage();
  w.single(
    'rabbitmq_process_resident_memory_bytes',
    'gauge',
    'Memory used in bytes (resident set)',
    memory.rss,
  );
  w.single('nodejs_heap_size_used_bytes', 'gauge', 'V8 heap in use, bytes', memory.heapUsed);
  w.single('nodejs_heap_size_total_bytes', 'gauge', 'V8 heap reserved, bytes', memory.heapTotal);
  w.single(
    'nodejs_external_memory_bytes',
    'gauge',
    'Memory of C++ objects bound to JavaScript ones (buffers), bytes',
    memory.external,
  );

  w.single('rabbitmq_connections', 'gauge', 'Client connections open on this node', source.connectionCount());
  w.single('rabbitmq_channels', 'gauge', 'Channels open on this node', source.channelCount());
  let consumers = 0;
  for (const row of led) consumers += row.figures.counts.consumers;
  w.single('rabbitmq_consumers', 'gauge', 'Consumers of the queues led by this node', consumers);
  w.single('rabbitmq_queues', 'gauge', 'Queues led by this node', led.length);

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
  if (source.logSync !== undefined) {
    w.family(
      'styx_log_sync_duration_seconds',
      'histogram',
      'Time from handing a batch of log writes to LMDB until it was committed and synced to disk',
    );
    w.histogram('', source.logSync);
  }
}

function writeGlobalFlow(w: ExpositionWriter, source: NodeMetricsSource): void {
  const flow = source.nodeFlow;
  w.single(
    'styx_global_messages_enqueued_total',
    'counter',
    "Messages enqueued by this node's queue leaders",
    flow.published,
  );
  w.single(
    'rabbitmq_global_messages_delivered_total',
    'counter',
    "Messages delivered by this node's queue leaders (consume and get)",
    flow.delivered,
  );
  w.single(
    'rabbitmq_global_messages_redelivered_total',
    'counter',
    "Messages redelivered by this node's queue leaders",
    flow.redelivered,
  );
  w.single(
    'rabbitmq_global_messages_acknowledged_total',
    'counter',
    "Messages acked at this node's queue leaders",
    flow.acked,
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
}

// ------------------------------------------------------------------------------ per queue

/** A family with one sample per queue of `rows`. */
interface PerQueueFamily {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly value: (f: QueueFigures) => number;
}

function writePerQueue(w: ExpositionWriter, rows: readonly QueueRow[], family: PerQueueFamily): void {
  w.family(family.name, family.type, family.help);
  for (const row of rows) w.sample(row.labels, family.value(row.figures));
}

const QUEUE_MESSAGE_FAMILIES: readonly PerQueueFamily[] = [
  {
    name: 'rabbitmq_queue_messages_ready',
    type: 'gauge',
    help: 'Messages ready to be delivered',
    value: (f) => f.counts.ready,
  },
  {
    name: 'rabbitmq_queue_messages_unacked',
    type: 'gauge',
    help: 'Messages delivered and not yet acknowledged',
    value: (f) => f.counts.unacked,
  },
  {
    name: 'rabbitmq_queue_messages_ready_bytes',
    type: 'gauge',
    help: 'Body bytes of the ready messages',
    value: (f) => f.counts.readyBytes,
  },
  {
    name: 'rabbitmq_queue_consumers',
    type: 'gauge',
    help: 'Consumers of the queue',
    value: (f) => f.counts.consumers,
  },
  {
    name: 'rabbitmq_queue_messages_published_total',
    type: 'counter',
    help: 'Messages enqueued (publishes and dead-lettered copies)',
    value: (f) => f.flow.published,
  },
  {
    name: 'rabbitmq_queue_messages_delivered_total',
    type: 'counter',
    help: 'Messages delivered to consumers or basic.get (redeliveries included)',
    value: (f) => f.flow.delivered,
  },
  {
    name: 'rabbitmq_queue_messages_redelivered_total',
    type: 'counter',
    help: 'Messages delivered again (flagged redelivered)',
    value: (f) => f.flow.redelivered,
  },
  {
    name: 'rabbitmq_queue_messages_acked_total',
    type: 'counter',
    help: 'Messages acknowledged by consumers',
    value: (f) => f.flow.acked,
  },
  {
    name: 'styx_queue_dead_letter_pending',
    type: 'gauge',
    help: 'Messages waiting for their at-least-once dead-letter hand-off (neither ready nor unacked)',
    value: (f) => f.counts.deadLetterPending,
  },
  {
    name: 'styx_queue_dead_letter_pending_bytes',
    type: 'gauge',
    help: 'Body bytes of the messages waiting for their at-least-once dead-letter hand-off',
    value: (f) => f.counts.deadLetterPendingBytes,
  },
  {
    name: 'styx_queue_dead_letter_blocked',
    type: 'gauge',
    help: 'At-least-once hand-offs waiting to retry: their last attempt found no target (DLX missing, nothing bound) or was refused',
    value: (f) => f.blockedHandOffs,
  },
];

/** Writes a per-reason series for each row where `value` is not zero or `always` holds for it. */
function reasonSamples(
  w: ExpositionWriter,
  led: readonly QueueRow[],
  extra: string,
  totals: (f: QueueFigures) => RemovalTotals,
  always: (f: QueueFigures) => boolean,
): void {
  for (const row of led) {
    const t = totals(row.figures);
    const all = always(row.figures);
    for (const reason of REASONS) {
      const value = t[reason];
      if (value !== 0 || all) w.sample(withLabels(row.labels, `reason="${reason}",${extra}`), value);
    }
  }
}

function hasDlx(f: QueueFigures): boolean {
  return f.config.deadLetterExchange !== undefined;
}

function strategyOf(f: QueueFigures): DeadLetterStrategyLabel {
  return f.config.deadLetterStrategy === 'at-least-once' ? 'at_least_once' : 'at_most_once';
}

/** Whether any of `totals` is not zero. */
function anyCounted(...totals: RemovalTotals[]): boolean {
  for (const t of totals) if (t.rejected + t.expired + t.maxlen + t.delivery_limit > 0) return true;
  return false;
}

/** The rows with a dead-letter series to write: a DLX set, or something counted. */
function deadLetterRows(led: readonly QueueRow[]): QueueRow[] {
  return led.filter(({ figures: f }) => {
    if (hasDlx(f)) return true;
    const { deadLettered } = f.flow;
    const { noDlx, cycle, lost } = f.dropped;
    return anyCounted(
      deadLettered.at_most_once,
      deadLettered.at_least_once,
      noDlx,
      cycle.at_most_once,
      cycle.at_least_once,
      lost,
    );
  });
}

function writeDeadLettering(w: ExpositionWriter, allLed: readonly QueueRow[]): void {
  // Most queues of a large node are plain and have counted nothing: one pass drops them here.
  const led = deadLetterRows(allLed);
  w.family(
    'styx_queue_messages_dead_lettered_total',
    'counter',
    'Messages dead-lettered, per reason and strategy (at-most-once: copies published; at-least-once: every target confirmed)',
  );
  for (const strategy of STRATEGIES) {
    reasonSamples(
      w,
      led,
      `dead_letter_strategy="${strategy}"`,
      (f) => f.flow.deadLettered[strategy],
      (f) => hasDlx(f) && strategyOf(f) === strategy,
    );
  }
  w.family(
    'styx_queue_messages_dead_letter_dropped_total',
    'counter',
    'Dead-lettered messages or copies dropped, per reason and cause: no_dlx (no dead-letter exchange), cycle (a target would close a dead-letter cycle), lost (at-most-once copy with nowhere to go or refused)',
  );
  reasonSamples(
    w,
    led,
    'cause="no_dlx",dead_letter_strategy="disabled"',
    (f) => f.dropped.noDlx,
    () => false,
  );
  for (const strategy of STRATEGIES) {
    reasonSamples(
      w,
      led,
      `cause="cycle",dead_letter_strategy="${strategy}"`,
      (f) => f.dropped.cycle[strategy],
      (f) => hasDlx(f) && strategyOf(f) === strategy,
    );
  }
  reasonSamples(
    w,
    led,
    'cause="lost",dead_letter_strategy="at_most_once"',
    (f) => f.dropped.lost,
    (f) => hasDlx(f) && strategyOf(f) === 'at_most_once',
  );
}

// ------------------------------------------------------------------------------ raft

/** The Raft figures of a row that has them (the Raft families are written for those rows only). */
function raftOf(f: QueueFigures): RaftFigures {
  return f.raft as RaftFigures;
}

const RAFT_FAMILIES: readonly PerQueueFamily[] = [
  {
    name: 'rabbitmq_raft_term_total',
    type: 'counter',
    help: "The queue replica's current Raft term",
    value: (f) => raftOf(f).term,
  },
  {
    name: 'rabbitmq_raft_log_commit_index',
    type: 'gauge',
    help: "The queue replica's Raft commit index",
    value: (f) => raftOf(f).commitIndex,
  },
  {
    name: 'rabbitmq_raft_log_last_applied_index',
    type: 'gauge',
    help: "The queue replica's last applied Raft index",
    value: (f) => raftOf(f).appliedIndex,
  },
  {
    name: 'styx_raft_elections_total',
    type: 'counter',
    help: 'Elections the queue replica started since it opened',
    value: (f) => raftOf(f).elections,
  },
];

function writeCommitLag(w: ExpositionWriter, replicated: readonly QueueRow[]): void {
  w.family(
    'styx_raft_replica_commit_lag',
    'gauge',
    "Entries a queue replica lags behind its leader's commit index (written by the leader, per replica)",
  );
  for (const row of replicated) {
    for (const r of raftOf(row.figures).replicas) {
      w.sample(withLabels(row.labels, labelPairs([['replica', r.node]])), r.commitLag);
    }
  }
}
