import { describe, expect, it } from 'vitest';
import type { CaseResult } from '../runner/results.ts';
import type { LinePanel } from './line-chart.ts';
import {
  compactNumber,
  LINE_PANEL,
  linearTicks,
  niceCeiling,
  panelGeometry,
  renderLineChart,
  scaleOf,
} from './line-chart.ts';
import { scalingPanels, sizeLabel, soakPanels } from './scaling-chart.ts';
import { caseResult } from './test-support/case-result.ts';

/**
 * Checks that `svg` is well-formed XML as far as the writer's output goes: one root <svg>, every
 * element closed in order or self-closed, attribute values quoted, `&` only in entities, `<` only
 * opening tags. Returns the element names in document order.
 */
function wellFormed(svg: string): string[] {
  const names: string[] = [];
  const open: string[] = [];
  const tag = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y;
  let i = 0;
  let text = '';
  while (i < svg.length) {
    const lt = svg.indexOf('<', i);
    text += lt < 0 ? svg.slice(i) : svg.slice(i, lt);
    if (lt < 0) break;
    tag.lastIndex = lt;
    const m = tag.exec(svg);
    if (m === null) throw new Error(`malformed tag at ${lt}: ${svg.slice(lt, lt + 40)}`);
    const [, closing, name = '', , selfClosing] = m;
    if (closing === '/') {
      if (open.pop() !== name) throw new Error(`</${name}> closes nothing open`);
    } else {
      if (open.length === 0 && names.length > 0) throw new Error('a second root element');
      names.push(name);
      if (selfClosing !== '/') open.push(name);
    }
    i = tag.lastIndex;
  }
  if (open.length > 0) throw new Error(`unclosed: ${open.join(', ')}`);
  const attrText = svg.match(/="[^"]*"/g)?.join('') ?? '';
  for (const t of [text, attrText])
    if (/&(?!(amp|lt|gt|quot|apos);)/.test(t)) throw new Error('a bare & outside an entity');
  if (names[0] !== 'svg') throw new Error('the root is not <svg>');
  return names;
}

const sweepPanel = (xs: number[], ys: number[]): LinePanel => ({
  title: 'queues: throughput',
  xLabel: 'queues',
  yLabel: 'msg/s',
  xScale: 'log',
  series: [{ name: 'Styx', color: '#1f77b4', points: xs.map((x, i) => ({ x, y: ys[i] ?? 0 })) }],
});

/** The coordinates of the first polyline in `svg`. */
function polyline(svg: string): number[][] {
  return (
    /<polyline [^>]*points="([^"]+)"/
      .exec(svg)?.[1]
      ?.split(' ')
      .map((p) => p.split(',').map(Number)) ?? []
  );
}

describe('scales', () => {
  it('maps decades to equal steps on a log scale, and linearly otherwise', () => {
    const log = scaleOf('log', 1, 1000, 0, 300);
    expect([1, 10, 100, 1000].map(log)).toEqual([0, 100, 200, 300]);
    const lin = scaleOf('linear', 0, 50, 200, 100); // y grows upwards: 0 at the bottom (200)
    expect([0, 25, 50].map(lin)).toEqual([200, 150, 100]);
    expect(scaleOf('log', 5, 5, 0, 10)(5)).toBe(5);
  });

  it('rounds the y axis up to 1, 2 or 5 × 10^k and ticks it evenly', () => {
    expect([0, 0.3, 1, 7, 12, 42_000, 99_999].map(niceCeiling)).toEqual([1, 0.5, 1, 10, 20, 50_000, 100_000]);
    expect(linearTicks(20)).toEqual([0, 5, 10, 15, 20]);
  });

  it('labels compactly', () => {
    expect([0, 12, 1200, 64_000, 3_000_000].map(compactNumber)).toEqual(['0', '12', '1.2k', '64k', '3M']);
    expect([64, 1024, 65_536, 1_048_576].map(sizeLabel)).toEqual(['64 B', '1 KiB', '64 KiB', '1 MiB']);
  });
});

describe('renderLineChart', () => {
  it('writes well-formed SVG with a polyline and markers per series, ticks at the x values', () => {
    const svg = renderLineChart('Scaling <&>', [sweepPanel([1, 10, 100, 1000], [100, 80, 60, 40])]);
    const names = wellFormed(svg);
    expect(names.filter((n) => n === 'polyline')).toHaveLength(1);
    expect(names.filter((n) => n === 'circle')).toHaveLength(4);
    expect(svg).toContain('Scaling &lt;&amp;&gt;');
    for (const t of ['>1<', '>10<', '>100<', '>1k<']) expect(svg).toContain(t);
  });

  it('places log-x points at equal steps across the plot, y proportional from 0 at the bottom', () => {
    const svg = renderLineChart('t', [sweepPanel([1, 10, 100, 1000], [100, 50, 25, 0])]);
    const pts = polyline(svg);
    const left = LINE_PANEL.left;
    const right = LINE_PANEL.width - LINE_PANEL.right;
    const top = 40 + LINE_PANEL.top;
    const bottom = 40 + LINE_PANEL.height - LINE_PANEL.bottom;
    expect(pts.map((p) => p[0])).toEqual(
      [left, left + (right - left) / 3, left + (2 * (right - left)) / 3, right].map(
        (v) => Math.round(v * 10) / 10,
      ),
    );
    // y: 100 is the axis top (niceCeiling(100) = 100), 0 the bottom, 50 half-way.
    expect(pts.map((p) => p[1])).toEqual([top, (top + bottom) / 2, bottom - (bottom - top) / 4, bottom]);
  });

  it('sorts points by x and drops non-positive x on a log axis', () => {
    const g = panelGeometry(sweepPanel([100, 0, 10], [1, 2, 3]), 0, 0);
    expect(g?.xTicks).toEqual([10, 100]);
    const svg = renderLineChart('t', [sweepPanel([100, 0, 10], [1, 2, 3])]);
    const xs = polyline(svg).map((p) => p[0] ?? 0);
    expect(xs).toHaveLength(2);
    expect(xs[0]).toBeLessThan(xs[1] ?? 0);
  });

  it('puts a tick per decade on a log y axis and places values between them by their logarithm', () => {
    const panel: LinePanel = { ...sweepPanel([64, 1024, 65_536], [40, 400, 4000]), yScale: 'log' };
    const g = panelGeometry(panel, 0, 0);
    expect(g?.yTicks).toEqual([10, 100, 1000, 10_000]);
    const top = LINE_PANEL.top;
    const bottom = LINE_PANEL.height - LINE_PANEL.bottom;
    expect(g?.yOf(10)).toBe(bottom);
    expect(g?.yOf(10_000)).toBe(top);
    // 40, 400 and 4000 are a decade apart: equal vertical steps.
    const ys = [40, 400, 4000].map((v) => g?.yOf(v) ?? 0);
    expect((ys[0] ?? 0) - (ys[1] ?? 0)).toBeCloseTo((ys[1] ?? 0) - (ys[2] ?? 0), 9);
    // A zero cannot sit on a log axis: it is left out rather than drawn at -infinity.
    const withZero: LinePanel = { ...sweepPanel([1, 10], [0, 5]), yScale: 'log' };
    expect(polyline(renderLineChart('t', [withZero]))).toHaveLength(1);
  });

  it('draws a linear x axis from 0 to a round top', () => {
    const panel: LinePanel = { ...sweepPanel([0, 3.5, 7.2], [10, 20, 30]), xScale: 'linear' };
    const g = panelGeometry(panel, 0, 0);
    expect(g?.xTicks).toEqual([0, 2.5, 5, 7.5, 10]);
    expect(g?.xOf(0)).toBe(LINE_PANEL.left);
    expect(g?.xOf(10)).toBe(LINE_PANEL.width - LINE_PANEL.right);
  });

  it('says so when a panel or the chart is empty, and stays well-formed', () => {
    const empty = renderLineChart('t', [sweepPanel([], [])]);
    wellFormed(empty);
    expect(empty).toContain('no data');
    expect(renderLineChart('t', [], 'nothing & more')).toContain('nothing &amp; more');
    expect(() => wellFormed('<svg><g></svg>')).toThrow();
    expect(() => wellFormed('<svg a="1 & 2"/>')).toThrow();
  });
});

describe('scalingPanels and soakPanels', () => {
  const point = (target: 'styx' | 'rabbitmq', x: number, rate: number, cpu: number): CaseResult => ({
    ...caseResult(target, `h.queues.${x}`, [
      { key: 'cpu-per-msg', label: 'cpu', unit: 'µs/msg', value: cpu, better: 'lower' },
      { key: 'throughput', label: 'published', unit: 'msg/s', value: rate, better: 'higher' },
    ]),
    params: { sweep: 'queues', x },
  });

  it('gives each sweep a throughput and a CPU panel, one series per broker that ran it', () => {
    const panels = scalingPanels([
      point('styx', 1, 100, 10),
      point('styx', 10, 90, 12),
      point('rabbitmq', 1, 50, 20),
    ]);
    expect(panels.map((p) => p.title)).toEqual(['queues: throughput', 'queues: broker CPU per message']);
    expect(panels[0]?.series.map((s) => [s.name, s.points.map((p) => [p.x, p.y])])).toEqual([
      [
        'Styx',
        [
          [1, 100],
          [10, 90],
        ],
      ],
      ['RabbitMQ', [[1, 50]]],
    ]);
    expect(panels[1]?.series[0]?.points.map((p) => p.y)).toEqual([10, 12]);
    expect(scalingPanels([])).toEqual([]);
  });

  it('charts each sampled memory series over time', () => {
    const soak: CaseResult = {
      ...caseResult('styx', 'm.soak', []),
      series: [
        {
          key: 'rss',
          label: 'RSS',
          unit: 'MiB',
          points: [
            { x: 0, y: 100 },
            { x: 1, y: 120 },
          ],
        },
      ],
    };
    const panels = soakPanels([soak, caseResult('rabbitmq', 'm.soak', [], 'error')]);
    expect(panels).toHaveLength(1);
    expect(panels[0]?.xScale).toBe('linear');
    expect(panels[0]?.series.map((s) => s.name)).toEqual(['Styx']);
  });
});
