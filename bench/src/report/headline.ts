/** The few numbers of a case that go in its row of a table. */
import type { CaseResult, HistogramReport } from '../runner/results.ts';
import type { Metric } from '../scenarios/scenario.ts';
import { CPU_PER_MESSAGE_KEY } from '../scenarios/support/cpu-window.ts';

/** The metrics that say "messages per second" for a case, most telling first. */
const THROUGHPUT_KEYS = ['throughput', 'publish-rate'];

export interface Headline {
  /** Broker CPU µs per message over the case's measured window. */
  readonly cpuPerMessage: Metric | undefined;
  /** The case's main rate, msg/s. */
  readonly throughput: Metric | undefined;
  /** Its first latency distribution. */
  readonly latency: HistogramReport | undefined;
  /** Its other own metrics (not rates, not histogram stats). */
  readonly others: readonly Metric[];
}

export function headlineOf(r: CaseResult): Headline {
  const throughput = THROUGHPUT_KEYS.map((k) => r.metrics.find((m) => m.key === k)).find(
    (m) => m !== undefined,
  );
  const cpuPerMessage = r.metrics.find((m) => m.key === CPU_PER_MESSAGE_KEY);
  const histogramKeys = new Set(r.histograms.map((h) => h.key));
  const others = r.metrics.filter(
    (m) =>
      m !== throughput &&
      m !== cpuPerMessage &&
      m.unit !== 'msg/s' &&
      !histogramKeys.has(m.key.split('.')[0] ?? ''),
  );
  return { cpuPerMessage, throughput, latency: r.histograms[0], others };
}
