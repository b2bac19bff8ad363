/**
 * scaling.svg (the sweeps h–k: throughput and broker CPU per message against the swept dimension,
 * log x) and soak.svg (scenario m: resident memory over time), Styx's line beside RabbitMQ's.
 */
import { TARGET_LABELS, TARGETS } from '../brokers/broker.ts';
import type { CaseResult } from '../runner/results.ts';
import { CPU_PER_MESSAGE_KEY } from '../scenarios/support/cpu-window.ts';
import { SERIES_COLORS } from './lateness-chart.ts';
import type { LinePanel, LineSeries, XY } from './line-chart.ts';
import { compactNumber, renderLineChart } from './line-chart.ts';

/** The swept dimensions in chart order, with their axis label and tick text. */
const DIMENSIONS: readonly {
  key: string;
  label: string;
  format: (x: number) => string;
  /** Log y where the figures span decades (64 B to 1 MiB bodies). */
  yScale: 'log' | 'linear';
}[] = [
  { key: 'queues', label: 'queues (publishers spread over them)', format: compactNumber, yScale: 'linear' },
  { key: 'connections', label: 'publishing connections', format: compactNumber, yScale: 'linear' },
  { key: 'size', label: 'message size', format: sizeLabel, yScale: 'log' },
  { key: 'nodes', label: 'cluster nodes', format: compactNumber, yScale: 'linear' },
];

/** 64 → '64 B', 1024 → '1 KiB', 1048576 → '1 MiB'. */
export function sizeLabel(bytes: number): string {
  if (bytes >= 2 ** 20) return `${Number((bytes / 2 ** 20).toPrecision(3))} MiB`;
  if (bytes >= 2 ** 10) return `${Number((bytes / 2 ** 10).toPrecision(3))} KiB`;
  return `${bytes} B`;
}

/** Each broker's (x, metric) points of sweep `dimension`, from its 'ok' results. */
function sweepSeries(results: readonly CaseResult[], dimension: string, metric: string): LineSeries[] {
  return TARGETS.flatMap((target) => {
    const runs = results.filter((r) => r.target === target && r.params.sweep === dimension);
    if (runs.length === 0) return [];
    const points: XY[] = runs.flatMap((r) => {
      const m = r.status === 'ok' ? r.metrics.find((x) => x.key === metric) : undefined;
      const x = Number(r.params.x);
      return m === undefined || !Number.isFinite(x) ? [] : [{ x, y: m.value }];
    });
    return [{ name: TARGET_LABELS[target], color: SERIES_COLORS[target], points }];
  });
}

/** Two panels per sweep that ran: msgs/s, then broker CPU µs/msg. */
export function scalingPanels(results: readonly CaseResult[]): LinePanel[] {
  return DIMENSIONS.flatMap((d) => {
    const rate = sweepSeries(results, d.key, 'throughput');
    if (rate.length === 0) return [];
    const common = { xLabel: d.label, xScale: 'log' as const, yScale: d.yScale, formatX: d.format };
    return [
      { ...common, title: `${d.key}: throughput`, yLabel: 'msg/s', series: rate },
      {
        ...common,
        title: `${d.key}: broker CPU per message`,
        yLabel: 'µs/msg',
        series: sweepSeries(results, d.key, CPU_PER_MESSAGE_KEY),
      },
    ];
  });
}

export function scalingSvg(results: readonly CaseResult[]): string {
  return renderLineChart(
    'Scaling: publish with confirms, Styx beside RabbitMQ (x on log scales)',
    scalingPanels(results),
    'no scaling sweep in this run (pnpm bench scaling)',
  );
}

/** One panel per memory series the soak sampled (RSS, anonymous, file-backed), over time. */
export function soakPanels(results: readonly CaseResult[]): LinePanel[] {
  const soaks = results.filter((r) => r.status === 'ok' && (r.series?.length ?? 0) > 0);
  const keys = [...new Set(soaks.flatMap((r) => (r.series ?? []).map((s) => s.key)))];
  return keys.map((key) => {
    const label = soaks.flatMap((r) => r.series ?? []).find((s) => s.key === key);
    return {
      title: `broker ${label?.label ?? key} during the soak`,
      xLabel: 'seconds since the first cycle began',
      yLabel: label?.unit ?? '',
      xScale: 'linear' as const,
      series: TARGETS.flatMap((target) => {
        const r = soaks.find((x) => x.target === target);
        const s = r?.series?.find((x) => x.key === key);
        return r === undefined
          ? []
          : [{ name: TARGET_LABELS[target], color: SERIES_COLORS[target], points: s?.points ?? [] }];
      }),
    };
  });
}

export function soakSvg(results: readonly CaseResult[]): string {
  return renderLineChart(
    'Soak: resident memory over publish/drain cycles',
    soakPanels(results),
    'no soak in this run (pnpm bench soak)',
  );
}
