import { describe, expect, it } from 'vitest';
import type { CaseResult, HistogramReport } from '../runner/results.ts';
import { latenessPanels, latenessSvg } from './lateness-chart.ts';
import { decadeLabel, decadeRange, escapeXml, ninesLabel, ninesOf, renderChart } from './svg-chart.ts';

describe('axes', () => {
  it('maps percentiles to nines', () => {
    expect(ninesOf(0)).toBe(0);
    expect(ninesOf(90)).toBeCloseTo(1, 10);
    expect(ninesOf(99.9)).toBeCloseTo(3, 6);
    expect(ninesOf(100, 4)).toBe(4);
    expect(ninesOf(99.99999, 3)).toBe(3);
  });

  it('labels nines and decades', () => {
    expect([0, 1, 2, 3].map(ninesLabel)).toEqual(['0%', '90%', '99%', '99.9%']);
    expect([-1, 0, 2, 3, 4].map(decadeLabel)).toEqual(['0.1 ms', '1 ms', '100 ms', '1 s', '10 s']);
  });

  it('covers the values with whole decades, flooring tiny values', () => {
    expect(decadeRange([3, 450])).toEqual({ lo: 0, hi: 3 });
    expect(decadeRange([0, 0.001, 5])).toEqual({ lo: -1, hi: 1 });
    expect(decadeRange([10, 10])).toEqual({ lo: 1, hi: 2 });
  });
});

describe('renderChart', () => {
  const points = [
    { percentile: 0, value: 1 },
    { percentile: 50, value: 10 },
    { percentile: 99, value: 100 },
    { percentile: 100, value: 200 },
  ];

  it('draws one polyline per series with data, inside the panel, and a legend entry for each', () => {
    const svg = renderChart('t', [
      {
        title: 'c.burst',
        series: [
          { name: 'Styx', color: '#1f77b4', points },
          { name: 'RabbitMQ', color: '#ff7f0e', points: [] },
        ],
      },
    ]);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<polyline /g)).toHaveLength(1);
    expect(svg).toContain('RabbitMQ (no data)');
    const coords =
      /points="([^"]+)"/
        .exec(svg)?.[1]
        ?.split(' ')
        .map((p) => p.split(',').map(Number)) ?? [];
    expect(coords).toHaveLength(points.length);
    for (const [x, y] of coords) {
      expect(x).toBeGreaterThanOrEqual(64);
      expect(x).toBeLessThanOrEqual(480 - 32);
      expect(y).toBeGreaterThanOrEqual(40 + 44);
      expect(y).toBeLessThanOrEqual(40 + 280 - 40);
    }
    // Later percentiles sit further right, larger values higher up (smaller y).
    for (let i = 1; i < coords.length; i++) {
      expect(coords[i]?.[0]).toBeGreaterThan(coords[i - 1]?.[0] ?? 0);
      expect(coords[i]?.[1]).toBeLessThan(coords[i - 1]?.[1] ?? 0);
    }
  });

  it('escapes titles and names', () => {
    expect(escapeXml(`a<b & "c"`)).toBe('a&lt;b &amp; &quot;c&quot;');
    const svg = renderChart('<x>', [{ title: 'a & b', series: [{ name: '<s>', color: 'red', points }] }]);
    expect(svg).not.toContain('<x>');
    expect(svg).toContain('a &amp; b');
    expect(svg).toContain('&lt;s&gt;');
  });

  it('says so when there is nothing to draw', () => {
    expect(renderChart('t', [])).toContain('no latency data');
  });
});

describe('latenessPanels', () => {
  const hist = (key: string, value: number): HistogramReport => ({
    key,
    label: key,
    unit: 'ms',
    count: 1,
    min: value,
    mean: value,
    p50: value,
    p90: value,
    p99: value,
    p999: value,
    max: value,
    negatives: 0,
    distribution: [
      { percentile: 0, value },
      { percentile: 100, value },
    ],
  });
  const result = (
    target: 'styx' | 'rabbitmq',
    caseId: string,
    h: HistogramReport[],
    status: CaseResult['status'] = 'ok',
  ): CaseResult => ({
    caseId,
    scenario: 'c',
    title: caseId,
    target,
    status,
    params: {},
    metrics: [],
    histograms: h,
    notes: [],
    cpu: null,
  });

  it('pairs the brokers per case, charts lateness and reject latencies only', () => {
    const panels = latenessPanels([
      result('styx', 'a.publish', [hist('confirm', 3)]),
      result('styx', 'c.burst', [hist('lateness', 5), hist('release', 1)]),
      result('rabbitmq', 'c.burst', [hist('lateness', 500)]),
      result('styx', 'd.reject', [hist('reject', 5)], 'unsupported'),
      result('rabbitmq', 'd.reject', [hist('reject', 50)]),
    ]);
    // The title takes the histogram's label from whichever broker has it.
    expect(panels.map((p) => p.title)).toEqual(['c.burst: lateness', 'd.reject: reject']);
    expect(panels[0]?.series.map((s) => [s.name, s.points.length])).toEqual([
      ['Styx', 2],
      ['RabbitMQ', 2],
    ]);
    // A broker that did not run the case still gets its legend entry, with no curve.
    expect(panels[1]?.series.map((s) => [s.name, s.points.length])).toEqual([
      ['Styx', 0],
      ['RabbitMQ', 2],
    ]);
    expect(latenessSvg([])).toContain('no latency data');
  });
});
