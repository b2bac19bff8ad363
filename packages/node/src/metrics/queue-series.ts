/**
 * The per-queue series of `/metrics`: message counts and flow, dead-lettering, Raft. Each is
 * written in one of two shapes (`QueueShape`):
 * - `per-object`: one sample per queue, labelled `vhost` and `queue` (`/metrics/per-object`, and
 *   `/metrics/detailed` under its `rabbitmq_detailed_` names);
 * - `aggregated`: the node's total across its queues, without those labels (`/metrics`, RabbitMQ's
 *   default), so a scrape of a node with 10,000 queues stays small. Series with other labels
 *   (reason, strategy, replica) keep those and are summed per label set. A latency is aggregated
 *   as its maximum, not its sum.
 */
import type { DeadLetterStrategyLabel } from '../queue/queue-flow-counters.ts';
import type { RemovalReason, RemovalTotals } from '../queue/types.ts';
import type { ExpositionWriter, MetricType } from './exposition-writer.ts';
import { labelPairs, withLabels } from './exposition-writer.ts';
import type { QueueFigures, RaftFigures } from './queue-figures.ts';

export type QueueShape = 'aggregated' | 'per-object';

/** A queue about to be written: its figures and its label set, escaped once. */
export interface QueueRow {
  readonly figures: QueueFigures;
  readonly labels: string;
}

/** `figures` with their `vhost`/`queue` label set. */
export function queueRow(figures: QueueFigures): QueueRow {
  return {
    figures,
    labels: labelPairs([
      ['vhost', figures.vhost],
      ['queue', figures.name],
    ]),
  };
}

/** The name a series has on `/metrics/detailed` (RabbitMQ's `rabbitmq_detailed_` prefix). */
export function detailedName(name: string): string {
  if (name.startsWith('rabbitmq_')) return `rabbitmq_detailed_${name.slice('rabbitmq_'.length)}`;
  if (name.startsWith('styx_')) return `styx_detailed_${name.slice('styx_'.length)}`;
  return name;
}

/**
 * Takes a family's samples, queue by queue: per object it writes each at once; aggregated it adds
 * them up per extra label set and writes the totals at `end`.
 */
class QueueSamples {
  private readonly totals = new Map<string, number>();
  private readonly w: ExpositionWriter;
  private readonly shape: QueueShape;
  private readonly combine: 'sum' | 'max';

  constructor(w: ExpositionWriter, shape: QueueShape, combine: 'sum' | 'max') {
    this.w = w;
    this.shape = shape;
    this.combine = combine;
  }

  add(row: QueueRow, extra: string, value: number): void {
    if (this.shape === 'per-object') {
      this.w.sample(withLabels(row.labels, extra), value);
      return;
    }
    const before = this.totals.get(extra);
    if (before === undefined) this.totals.set(extra, value);
    else this.totals.set(extra, this.combine === 'sum' ? before + value : Math.max(before, value));
  }

  /** Aggregated: the totals. A family no queue contributed to is written as 0 (without labels). */
  end(zeroWhenEmpty: boolean): void {
    if (this.shape === 'per-object') return;
    if (this.totals.size === 0 && zeroWhenEmpty) this.w.sample('', 0);
    for (const [extra, total] of this.totals) this.w.sample(extra, total);
  }
}

/** A family with one sample per queue. */
export interface PerQueueFamily {
  readonly name: string;
  readonly type: MetricType;
  readonly help: string;
  readonly value: (f: QueueFigures) => number;
  /** How the aggregated shape combines queues (default: sum). */
  readonly combine?: 'max';
}

/** Write `family` for `rows` under `name` (its own, or its detailed name). */
export function writePerQueue(
  w: ExpositionWriter,
  rows: readonly QueueRow[],
  family: PerQueueFamily,
  shape: QueueShape,
  name: string = family.name,
): void {
  w.family(name, family.type, family.help);
  const samples = new QueueSamples(w, shape, family.combine ?? 'sum');
  for (const row of rows) samples.add(row, '', family.value(row.figures));
  samples.end(true);
}

/** A per-queue family (shorthand for the table below). */
function perQueue(
  name: string,
  type: MetricType,
  help: string,
  value: (f: QueueFigures) => number,
): PerQueueFamily {
  return { name, type, help, value };
}

export const QUEUE_MESSAGE_FAMILIES: readonly PerQueueFamily[] = [
  perQueue('rabbitmq_queue_messages_ready', 'gauge', 'Messages ready to be delivered', (f) => f.counts.ready),
  perQueue(
    'rabbitmq_queue_messages_unacked',
    'gauge',
    'Messages delivered and not yet acknowledged',
    (f) => f.counts.unacked,
  ),
  perQueue(
    'rabbitmq_queue_messages',
    'gauge',
    'Messages ready and unacknowledged: the queue depth',
    (f) => f.counts.ready + f.counts.unacked,
  ),
  perQueue(
    'rabbitmq_queue_messages_ready_bytes',
    'gauge',
    'Body bytes of the ready messages',
    (f) => f.counts.readyBytes,
  ),
  perQueue('rabbitmq_queue_consumers', 'gauge', 'Consumers of the queue', (f) => f.counts.consumers),
  perQueue(
    'rabbitmq_queue_messages_published_total',
    'counter',
    'Messages enqueued (publishes and dead-lettered copies)',
    (f) => f.flow.published,
  ),
  perQueue(
    'rabbitmq_queue_messages_delivered_total',
    'counter',
    'Messages delivered to consumers or basic.get (redeliveries included)',
    (f) => f.flow.delivered,
  ),
  perQueue(
    'rabbitmq_queue_messages_redelivered_total',
    'counter',
    'Messages delivered again (flagged redelivered)',
    (f) => f.flow.redelivered,
  ),
  perQueue(
    'rabbitmq_queue_messages_acked_total',
    'counter',
    'Messages acknowledged by consumers',
    (f) => f.flow.acked,
  ),
  perQueue(
    'styx_queue_dead_letter_pending',
    'gauge',
    'Messages waiting for their at-least-once dead-letter hand-off (neither ready nor unacked)',
    (f) => f.counts.deadLetterPending,
  ),
  perQueue(
    'styx_queue_dead_letter_pending_bytes',
    'gauge',
    'Body bytes of the messages waiting for their at-least-once dead-letter hand-off',
    (f) => f.counts.deadLetterPendingBytes,
  ),
  perQueue(
    'styx_queue_dead_letter_blocked',
    'gauge',
    'At-least-once hand-offs waiting to retry: their last attempt found no target (DLX missing, nothing bound) or was refused',
    (f) => f.blockedHandOffs,
  ),
];

// ------------------------------------------------------------------------------ dead-lettering

const REASONS: readonly RemovalReason[] = ['rejected', 'expired', 'maxlen', 'delivery_limit'];
const STRATEGIES: readonly DeadLetterStrategyLabel[] = ['at_most_once', 'at_least_once'];

/** Adds a per-reason sample for each row where `value` is not zero or `always` holds for it. */
function reasonSamples(
  samples: QueueSamples,
  rows: readonly QueueRow[],
  extra: string,
  totals: (f: QueueFigures) => RemovalTotals,
  always: (f: QueueFigures) => boolean,
): void {
  for (const row of rows) {
    const t = totals(row.figures);
    const all = always(row.figures);
    for (const reason of REASONS) {
      const value = t[reason];
      if (value !== 0 || all) samples.add(row, `reason="${reason}",${extra}`, value);
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
function deadLetterRows(rows: readonly QueueRow[]): QueueRow[] {
  return rows.filter(({ figures: f }) => {
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

/** `styx_queue_messages_dead_lettered_total` and `styx_queue_messages_dead_letter_dropped_total`. */
export function writeDeadLettering(
  w: ExpositionWriter,
  allRows: readonly QueueRow[],
  shape: QueueShape,
  rename: (name: string) => string = (name) => name,
): void {
  // Most queues of a large node are plain and have counted nothing: one pass drops them here.
  const rows = deadLetterRows(allRows);
  w.family(
    rename('styx_queue_messages_dead_lettered_total'),
    'counter',
    'Messages dead-lettered, per reason and strategy (at-most-once: copies published; at-least-once: every target confirmed)',
  );
  const dead = new QueueSamples(w, shape, 'sum');
  for (const strategy of STRATEGIES) {
    reasonSamples(
      dead,
      rows,
      `dead_letter_strategy="${strategy}"`,
      (f) => f.flow.deadLettered[strategy],
      (f) => hasDlx(f) && strategyOf(f) === strategy,
    );
  }
  dead.end(false);
  w.family(
    rename('styx_queue_messages_dead_letter_dropped_total'),
    'counter',
    'Dead-lettered messages or copies dropped, per reason and cause: no_dlx (no dead-letter exchange), cycle (a target would close a dead-letter cycle), lost (at-most-once copy with nowhere to go or refused)',
  );
  const dropped = new QueueSamples(w, shape, 'sum');
  reasonSamples(
    dropped,
    rows,
    'cause="no_dlx",dead_letter_strategy="disabled"',
    (f) => f.dropped.noDlx,
    () => false,
  );
  for (const strategy of STRATEGIES) {
    reasonSamples(
      dropped,
      rows,
      `cause="cycle",dead_letter_strategy="${strategy}"`,
      (f) => f.dropped.cycle[strategy],
      (f) => hasDlx(f) && strategyOf(f) === strategy,
    );
  }
  reasonSamples(
    dropped,
    rows,
    'cause="lost",dead_letter_strategy="at_most_once"',
    (f) => f.dropped.lost,
    (f) => hasDlx(f) && strategyOf(f) === 'at_most_once',
  );
  dropped.end(false);
}

// ------------------------------------------------------------------------------ raft

/** The Raft figures of a row that has them (the Raft families are written for those rows only). */
function raftOf(f: QueueFigures): RaftFigures {
  return f.raft as RaftFigures;
}

/**
 * Each replica's Raft state. RabbitMQ 4 renamed its Raft series (`rabbitmq_raft_term`,
 * `_commit_index`, `_last_written_index`, `_snapshot_index`) and its Quorum-Queues-Raft dashboard
 * queries the old names and the new side by side: both are written, with the same figures.
 */
export const RAFT_FAMILIES: readonly PerQueueFamily[] = [
  ...[
    ['rabbitmq_raft_term_total', 'counter'],
    ['rabbitmq_raft_term', 'counter'],
  ].map(([name, type]) => ({
    name: name as string,
    type: type as MetricType,
    help: "The queue replica's current Raft term",
    value: (f: QueueFigures) => raftOf(f).term,
  })),
  ...['rabbitmq_raft_log_commit_index', 'rabbitmq_raft_commit_index'].map((name) => ({
    name,
    type: 'gauge' as const,
    help: "The queue replica's Raft commit index",
    value: (f: QueueFigures) => raftOf(f).commitIndex,
  })),
  ...['rabbitmq_raft_log_last_applied_index', 'rabbitmq_raft_last_applied'].map((name) => ({
    name,
    type: 'gauge' as const,
    help: "The queue replica's last applied Raft index",
    value: (f: QueueFigures) => raftOf(f).appliedIndex,
  })),
  ...['rabbitmq_raft_log_last_written_index', 'rabbitmq_raft_last_written_index'].map((name) => ({
    name,
    type: 'gauge' as const,
    help: "The index of the last entry written to the queue replica's log",
    value: (f: QueueFigures) => raftOf(f).lastWrittenIndex,
  })),
  ...['rabbitmq_raft_log_snapshot_index', 'rabbitmq_raft_snapshot_index'].map((name) => ({
    name,
    type: 'gauge' as const,
    help: "The index of the queue replica's latest snapshot (its log starts after it)",
    value: (f: QueueFigures) => raftOf(f).snapshotIndex,
  })),
  {
    name: 'rabbitmq_raft_commit_latency_seconds',
    type: 'gauge',
    help: 'Time from proposing to applying the last command the replica proposed as leader (aggregated: the largest)',
    value: (f) => raftOf(f).commitLatencyMs / 1000,
    combine: 'max',
  },
  {
    name: 'styx_raft_elections_total',
    type: 'counter',
    help: 'Elections the queue replica started since it opened',
    value: (f) => raftOf(f).elections,
  },
  {
    name: 'styx_raft_elections_won_total',
    type: 'counter',
    help: 'Elections the queue replica won since it opened (started minus won: split votes and lost elections)',
    value: (f) => raftOf(f).electionsWon,
  },
  {
    name: 'styx_raft_pre_votes_total',
    type: 'counter',
    help: 'Pre-vote rounds the queue replica started since it opened (a round that wins starts an election)',
    value: (f) => raftOf(f).preVotes,
  },
];

/** `styx_raft_replica_commit_lag{replica}`: per queue and member (aggregated: per member). */
export function writeCommitLag(
  w: ExpositionWriter,
  replicated: readonly QueueRow[],
  shape: QueueShape,
  rename: (name: string) => string = (name) => name,
): void {
  w.family(
    rename('styx_raft_replica_commit_lag'),
    'gauge',
    "Entries a queue replica lags behind its leader's commit index (written by the leader, per replica)",
  );
  const samples = new QueueSamples(w, shape, 'sum');
  for (const row of replicated) {
    for (const r of raftOf(row.figures).replicas)
      samples.add(row, labelPairs([['replica', r.node]]), r.commitLag);
  }
  samples.end(false);
}
