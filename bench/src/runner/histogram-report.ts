/** Turning a recorded histogram (µs) into the report's form (ms) and into metrics. */
import type { Metric, RecordedHistogram } from '../scenarios/scenario.ts';
import type { HistogramReport } from './results.ts';

const MS = 1 / 1000;

/** Points per halving of the tail in the report's percentile curve. */
const CURVE_POINTS_PER_HALVING = 4;

export function histogramReport(h: RecordedHistogram): HistogramReport {
  const s = h.histogram.summary();
  return {
    key: h.key,
    label: h.label,
    unit: 'ms',
    count: s.count,
    min: s.min * MS,
    mean: s.mean * MS,
    p50: s.p50 * MS,
    p90: s.p90 * MS,
    p99: s.p99 * MS,
    p999: s.p999 * MS,
    max: s.max * MS,
    negatives: s.negatives,
    distribution: h.histogram
      .percentileDistribution(CURVE_POINTS_PER_HALVING)
      .map((p) => ({ percentile: p.percentile, value: p.value * MS })),
  };
}

/** p50, p99 and max of a histogram as metrics ('<key>.p50', ...), lower being better. */
export function histogramMetrics(h: HistogramReport): Metric[] {
  const m = (stat: 'p50' | 'p99' | 'max'): Metric => ({
    key: `${h.key}.${stat}`,
    label: `${h.label} ${stat}`,
    unit: 'ms',
    value: h[stat],
    better: 'lower',
  });
  return h.count === 0 ? [] : [m('p50'), m('p99'), m('max')];
}
