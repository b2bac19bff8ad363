/** Which distributions go in lateness.svg, and how they pair up per case. */
import type { Target } from '../brokers/broker.ts';
import { TARGET_LABELS, TARGETS } from '../brokers/broker.ts';
import type { CaseResult } from '../runner/results.ts';
import type { ChartPanel } from './svg-chart.ts';
import { renderChart } from './svg-chart.ts';

/** Histogram keys charted: expiry lateness (c, e) and reject → arrival (d). */
export const CHARTED_KEYS = ['lateness', 'reject'] as const;

export const SERIES_COLORS: Readonly<Record<Target, string>> = {
  styx: '#1f77b4',
  'styx-amqp': '#2ca02c',
  rabbitmq: '#ff7f0e',
};

/** One panel per case and charted histogram, each broker's curve in it (absent if it did not run). */
export function latenessPanels(results: readonly CaseResult[]): ChartPanel[] {
  const panels: ChartPanel[] = [];
  const caseIds = [...new Set(results.map((r) => r.caseId))];
  for (const caseId of caseIds) {
    for (const key of CHARTED_KEYS) {
      const series = TARGETS.flatMap((target) => {
        const r = results.find((x) => x.caseId === caseId && x.target === target);
        if (r === undefined) return [];
        const h = r.status === 'ok' ? r.histograms.find((x) => x.key === key) : undefined;
        return [{ name: TARGET_LABELS[target], color: SERIES_COLORS[target], points: h?.distribution ?? [] }];
      });
      const label = results
        .filter((r) => r.caseId === caseId)
        .flatMap((r) => r.histograms)
        .find((h) => h.key === key)?.label;
      if (series.some((s) => s.points.length > 0))
        panels.push({ title: `${caseId}: ${label ?? key}`, series });
    }
  }
  return panels;
}

export function latenessSvg(results: readonly CaseResult[]): string {
  return renderChart('Lateness distributions (log scales): Styx beside RabbitMQ', latenessPanels(results));
}
