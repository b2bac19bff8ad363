/**
 * Shared scenario definitions: a scenario (the a–g) expands into cases (its variants: a
 * strategy, a pace), each of which runs once per broker through the same code.
 */
import type { BrokerAdapter, DeadLetterStrategy, QueueSpec } from '../adapters/adapter.ts';
import type { BenchConnection } from '../adapters/client-api.ts';
import type { BrokerUnderTest, Target } from '../brokers/broker.ts';
import type { HdrHistogram } from '../histogram/hdr-histogram.ts';
import type { Sizes } from './sizes.ts';

/** Which way a metric is better, so ratios can say who wins. */
export type Better = 'higher' | 'lower';

export interface Metric {
  /** Stable key, the same for both brokers (ratios pair metrics by it). */
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly value: number;
  readonly better: Better;
}

/** A latency distribution a case recorded, in microseconds. */
export interface RecordedHistogram {
  readonly key: string;
  readonly label: string;
  readonly histogram: HdrHistogram;
}

/** Readings over time (the soak's memory), for charts: x in seconds since the case began. */
export interface TimeSeries {
  readonly key: string;
  readonly label: string;
  /** Of the y values. */
  readonly unit: string;
  readonly points: readonly { readonly x: number; readonly y: number }[];
}

export interface CaseOutcome {
  readonly metrics: readonly Metric[];
  readonly histograms: readonly RecordedHistogram[];
  /** Readings over time, if the case samples any. */
  readonly series?: readonly TimeSeries[];
  /** Anything a reader needs to interpret the numbers (duplicates seen, early expiries, ...). */
  readonly notes: readonly string[];
}

/**
 * What a case needs from the broker beyond publish/consume. The runner probes each once per broker
 * and reports a case as unsupported, instead of running it, when the probe fails.
 */
export interface Requirement {
  readonly kind: 'dead-letter';
  readonly reason: 'expired' | 'rejected';
  readonly strategy: DeadLetterStrategy;
}

export interface CaseContext {
  readonly target: Target;
  readonly adapter: BrokerAdapter;
  /** The broker's OS process (node 1's), for memory readings. */
  readonly brokerPid: number;
  /** The broker under test (scenario l restarts it). */
  readonly broker: BrokerUnderTest;
  /**
   * CPU time so far of every broker process (each node, and for RabbitMQ beam.smp's helpers), ms;
   * undefined when /proc cannot be read. Support: cpu-window.ts.
   */
  brokerCpuMs(): number | undefined;
  /** Opens a connection (to node 1, or to `url`: another node's) that the runner closes after the case. */
  connect(url?: string): Promise<BenchConnection>;
  /** Declares a uniquely named queue for `role`; the runner deletes it after the case. */
  declareQueue(role: string, spec?: QueueSpec): Promise<string>;
  /** Declares a uniquely named fanout exchange; the runner deletes it after the case. */
  declareExchange(role: string): Promise<string>;
  /** Binds `queue` to `exchange` (routing key '', fanout). */
  bind(queue: string, exchange: string): Promise<void>;
  /** Shows `text` on the live progress line. */
  status(text: string): void;
  /** No progress for this long (ms) means the case is stuck: it fails with StallError. */
  readonly stallTimeoutMs: number;
}

export interface BenchCase {
  /** Unique and stable, e.g. 'c.burst.at-least-once'; what a name filter matches. */
  readonly id: string;
  readonly scenario: ScenarioId;
  readonly title: string;
  /** What the case was run with (message count, TTL, pace, ...), for the report. */
  readonly params: Readonly<Record<string, number | string>>;
  readonly requires: readonly Requirement[];
  /** Nodes the broker runs on; 1 when absent. Cases are grouped by it, one broker launch per group. */
  readonly nodes?: number;
  /**
   * Run on a broker that has run no case before (just started and warmed up): for readings that the
   * leftovers of earlier cases would distort, such as resident memory.
   */
  readonly freshBroker?: boolean;
  /** The case kills a node on purpose (o): a dead node afterwards is no failure of the broker. */
  readonly killsNode?: boolean;
  run(ctx: CaseContext): Promise<CaseOutcome>;
}

export const SCENARIO_IDS = [
  'a',
  'b',
  'c',
  'd',
  'e',
  'f',
  'g',
  'h',
  'i',
  'j',
  'k',
  'l',
  'm',
  'n',
  'o',
] as const;
export type ScenarioId = (typeof SCENARIO_IDS)[number];

export interface Scenario {
  readonly id: ScenarioId;
  /** The name to run it by, e.g. 'hot-expiry'. */
  readonly name: string;
  readonly title: string;
  cases(sizes: Sizes): BenchCase[];
}

/** Throughput in messages per second over a span in ms (0 when the span is empty). */
export function perSecond(count: number, spanMs: number): number {
  return spanMs > 0 ? (count * 1000) / spanMs : 0;
}
