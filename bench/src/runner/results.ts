/** What one run of the bench produced: the JSON report's shape. */
import type { StyxTarget, Target } from '../brokers/broker.ts';
import type { PercentilePoint } from '../histogram/hdr-histogram.ts';
import type { Metric, ScenarioId, TimeSeries } from '../scenarios/scenario.ts';
import type { Mode } from '../scenarios/sizes.ts';

/**
 * - ok: ran to the end;
 * - unsupported: the broker lacks a feature the case needs (its probe failed), so it was not run;
 * - skipped: the bench cannot set the case up for this broker (e.g. no 3-node launcher yet);
 * - error: the case failed while running (stall, nack, broker crash, ...).
 */
export type CaseStatus = 'ok' | 'unsupported' | 'skipped' | 'error';

/** A latency distribution, in ms. */
export interface HistogramReport {
  readonly key: string;
  readonly label: string;
  readonly unit: 'ms';
  readonly count: number;
  readonly min: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /** Values below zero, recorded as zero (a measurement assumption was off). */
  readonly negatives: number;
  /** The percentile curve, for charts. */
  readonly distribution: readonly PercentilePoint[];
}

/** CPU time over the whole case (setup included), ms, and the case's wall-clock time. */
export interface CpuReport {
  readonly brokerMs: number | null;
  /**
   * The same per node process tree, in node order (node 1 first), when the broker has more than
   * one node: on a cluster it shows what the queue's leader and its followers each cost.
   */
  readonly brokerNodesMs?: readonly number[];
  readonly generatorMs: number;
  readonly wallMs: number;
}

export interface CaseResult {
  readonly caseId: string;
  readonly scenario: ScenarioId;
  readonly title: string;
  readonly target: Target;
  readonly status: CaseStatus;
  readonly reason?: string;
  readonly params: Readonly<Record<string, number | string>>;
  /** The case's own metrics, then p50/p99/max of each histogram as '<key>.p50' etc. (ms). */
  readonly metrics: readonly Metric[];
  readonly histograms: readonly HistogramReport[];
  /** Readings over time (scenario m's memory), when the case took any. */
  readonly series?: readonly TimeSeries[];
  readonly notes: readonly string[];
  readonly cpu: CpuReport | null;
}

/** A Styx column over RabbitMQ for one metric of one case. */
export interface Ratio {
  readonly caseId: string;
  /** Which Styx column: through the SDK, or through amqplib over AMQP (the same client as RabbitMQ's). */
  readonly target: StyxTarget;
  readonly metric: string;
  readonly label: string;
  readonly unit: string;
  /** That Styx column's value. */
  readonly styx: number;
  readonly rabbitmq: number;
  /** styx / rabbitmq; null when RabbitMQ's value is 0. */
  readonly ratio: number | null;
  /** Whether Styx did better, worse, or the same (within 1 %), given which way is better. */
  readonly verdict: 'better' | 'worse' | 'same' | 'n/a';
}

export interface BrokerInfo {
  readonly target: Target;
  readonly version: string;
}

export interface BenchReport {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly mode: Mode;
  readonly targets: readonly Target[];
  readonly brokers: readonly BrokerInfo[];
  readonly host: {
    readonly cpus: number;
    readonly cpuModel: string;
    readonly memoryGiB: number;
    readonly node: string;
    readonly gitCommit: string | null;
  };
  /** What differs from the definitions (quick mode sizes, ...). */
  readonly notes: readonly string[];
  readonly results: readonly CaseResult[];
  readonly ratios: readonly Ratio[];
}
