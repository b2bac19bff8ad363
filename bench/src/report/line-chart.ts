/**
 * Line charts of our own (no chart library): panels in a grid, each with a few named series (Styx
 * and RabbitMQ), x on a log scale (a sweep's 1 → 10 → 100 → 1,000) or a linear one (seconds of a
 * soak), y linear from 0, or on a log scale when it spans decades (the size sweep). Ticks on x sit at the data's own x values on a log axis (64 B, 1 KiB, ...),
 * at round steps on a linear one. Plain SVG 1.1 text, no scripts and no external resources.
 */
import { escapeXml, svgDocument } from './svg-chart.ts';

export interface XY {
  readonly x: number;
  readonly y: number;
}

export interface LineSeries {
  readonly name: string;
  readonly color: string;
  readonly points: readonly XY[];
}

export interface LinePanel {
  readonly title: string;
  readonly xLabel: string;
  readonly yLabel: string;
  readonly xScale: 'log' | 'linear';
  /** Linear from 0 (default), or log with a tick per decade (values ≤ 0 are left out). */
  readonly yScale?: 'log' | 'linear';
  readonly series: readonly LineSeries[];
  /** Tick text of an x value (default: the number). */
  readonly formatX?: (x: number) => string;
}

/** Panel geometry, px. */
export const LINE_PANEL = { width: 480, height: 280, left: 72, right: 24, top: 44, bottom: 44 } as const;
const COLUMNS = 2;
/** Space above the panels for the chart's title, px. */
const TITLE_H = 40;

/** Maps [lo, hi] onto [a, b], on a log10 scale or a linear one; lo = hi maps to the middle. */
export function scaleOf(
  kind: 'log' | 'linear',
  lo: number,
  hi: number,
  a: number,
  b: number,
): (v: number) => number {
  const t = kind === 'log' ? Math.log10 : (v: number): number => v;
  const l = t(lo);
  const h = t(hi);
  if (!(h > l)) return () => (a + b) / 2;
  return (v) => a + ((t(v) - l) / (h - l)) * (b - a);
}

/** The smallest 1, 2 or 5 × 10^k that is at least `v` (the y axis's top); 1 for v ≤ 0. */
export function niceCeiling(v: number): number {
  if (!(v > 0) || !Number.isFinite(v)) return 1;
  const exp = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * exp >= v * (1 - 1e-12)) return m * exp;
  return 10 * exp;
}

/** `count` + 1 evenly spaced ticks from 0 to `top`. */
export function linearTicks(top: number, count = 4): number[] {
  return Array.from({ length: count + 1 }, (_, i) => (top * i) / count);
}

/** A tick label: 1,200 → '1.2k', 3,000,000 → '3M', 0.25 → '0.25'. */
export function compactNumber(v: number): string {
  const abs = Math.abs(v);
  if (abs >= 1e6) return `${Number((v / 1e6).toPrecision(3))}M`;
  if (abs >= 1e3) return `${Number((v / 1e3).toPrecision(3))}k`;
  return `${Number(v.toPrecision(3))}`;
}

const f = (n: number): string => (Math.round(n * 10) / 10).toString();

/** Where a panel's plot area lies and how values map into it. */
export interface PanelGeometry {
  readonly xOf: (x: number) => number;
  readonly yOf: (y: number) => number;
  readonly xTicks: readonly number[];
  readonly yTicks: readonly number[];
}

/** The scales of `panel` drawn with its top-left corner at (x0, y0). Undefined without points. */
export function panelGeometry(panel: LinePanel, x0: number, y0: number): PanelGeometry | undefined {
  const pts = panel.series.flatMap((s) => s.points).filter((p) => drawable(panel, p));
  const xs = pts.map((p) => p.x);
  if (xs.length === 0) return undefined;
  const left = x0 + LINE_PANEL.left;
  const right = x0 + LINE_PANEL.width - LINE_PANEL.right;
  const top = y0 + LINE_PANEL.top;
  const bottom = y0 + LINE_PANEL.height - LINE_PANEL.bottom;
  let xLo = Math.min(...xs);
  let xHi = Math.max(...xs);
  let xTicks: number[];
  if (panel.xScale === 'log') {
    if (xHi === xLo) {
      xLo /= 10;
      xHi *= 10;
    }
    xTicks = [...new Set(xs)].sort((a, b) => a - b);
  } else {
    xLo = Math.min(0, xLo);
    xHi = niceCeiling(xHi);
    xTicks = linearTicks(xHi);
  }
  const ys = pts.map((p) => p.y);
  if (panel.yScale === 'log') {
    const lo = Math.floor(Math.log10(Math.min(...ys)));
    const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...ys))));
    return {
      xOf: scaleOf(panel.xScale, xLo, xHi, left, right),
      yOf: scaleOf('log', 10 ** lo, 10 ** hi, bottom, top),
      xTicks,
      yTicks: Array.from({ length: hi - lo + 1 }, (_, i) => 10 ** (lo + i)),
    };
  }
  const yTop = niceCeiling(Math.max(0, ...ys));
  return {
    xOf: scaleOf(panel.xScale, xLo, xHi, left, right),
    yOf: scaleOf('linear', 0, yTop, bottom, top),
    xTicks,
    yTicks: linearTicks(yTop),
  };
}

/** Whether `p` can be drawn on `panel`'s axes: finite, and positive on a log axis. */
function drawable(panel: LinePanel, p: XY): boolean {
  if (!Number.isFinite(p.x) || !Number.isFinite(p.y)) return false;
  return (panel.xScale === 'linear' || p.x > 0) && (panel.yScale !== 'log' || p.y > 0);
}

function panelSvg(panel: LinePanel, x0: number, y0: number): string {
  const out: string[] = [];
  const left = x0 + LINE_PANEL.left;
  const right = x0 + LINE_PANEL.width - LINE_PANEL.right;
  const top = y0 + LINE_PANEL.top;
  const bottom = y0 + LINE_PANEL.height - LINE_PANEL.bottom;
  out.push(
    `<text x="${f(x0 + LINE_PANEL.width / 2)}" y="${f(y0 + 18)}" text-anchor="middle" font-weight="bold">${escapeXml(panel.title)}</text>`,
  );
  const g = panelGeometry(panel, x0, y0);
  if (g === undefined) {
    out.push(
      `<text x="${f(x0 + LINE_PANEL.width / 2)}" y="${f(y0 + LINE_PANEL.height / 2)}" text-anchor="middle" fill="#888">no data</text>`,
    );
    return out.join('\n');
  }
  out.push(
    `<rect x="${f(left)}" y="${f(top)}" width="${f(right - left)}" height="${f(bottom - top)}" fill="none" stroke="#999"/>`,
  );
  for (const y of g.yTicks) {
    const py = g.yOf(y);
    out.push(`<line x1="${f(left)}" y1="${f(py)}" x2="${f(right)}" y2="${f(py)}" stroke="#eee"/>`);
    out.push(
      `<text x="${f(left - 6)}" y="${f(py + 4)}" text-anchor="end">${escapeXml(compactNumber(y))}</text>`,
    );
  }
  const fx = panel.formatX ?? compactNumber;
  for (const x of g.xTicks) {
    const px = g.xOf(x);
    out.push(`<line x1="${f(px)}" y1="${f(top)}" x2="${f(px)}" y2="${f(bottom)}" stroke="#eee"/>`);
    out.push(`<text x="${f(px)}" y="${f(bottom + 16)}" text-anchor="middle">${escapeXml(fx(x))}</text>`);
  }
  out.push(
    `<text x="${f((left + right) / 2)}" y="${f(bottom + 34)}" text-anchor="middle" fill="#555">${escapeXml(panel.xLabel)}</text>`,
  );
  out.push(
    `<text x="${f(x0 + 14)}" y="${f((top + bottom) / 2)}" text-anchor="middle" fill="#555" transform="rotate(-90 ${f(x0 + 14)} ${f((top + bottom) / 2)})">${escapeXml(panel.yLabel)}</text>`,
  );
  panel.series.forEach((s, i) => {
    const pts = s.points.filter((p) => drawable(panel, p)).sort((a, b) => a.x - b.x);
    const color = escapeXml(s.color);
    if (pts.length > 0) {
      const coords = pts.map((p) => `${f(g.xOf(p.x))},${f(g.yOf(p.y))}`);
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${coords.join(' ')}"/>`);
      // Markers: a sweep has only a few points, each a separate run.
      if (pts.length <= 20)
        for (const c of coords) {
          const [cx, cy] = c.split(',');
          out.push(`<circle cx="${cx}" cy="${cy}" r="3" fill="${color}"/>`);
        }
    }
    const lx = left + 8 + i * 120;
    out.push(
      `<line x1="${f(lx)}" y1="${f(top - 10)}" x2="${f(lx + 18)}" y2="${f(top - 10)}" stroke="${color}" stroke-width="3"/>`,
    );
    out.push(
      `<text x="${f(lx + 22)}" y="${f(top - 6)}">${escapeXml(s.name)}${pts.length === 0 ? ' (no data)' : ''}</text>`,
    );
  });
  return out.join('\n');
}

/** The whole chart: `panels` in a grid of two columns under `title`. */
export function renderLineChart(
  title: string,
  panels: readonly LinePanel[],
  empty = 'no data in this run',
): string {
  const rows = Math.max(1, Math.ceil(panels.length / COLUMNS));
  const width = LINE_PANEL.width * COLUMNS;
  const height = TITLE_H + rows * LINE_PANEL.height;
  const body =
    panels.length === 0
      ? `<text x="${width / 2}" y="${TITLE_H + LINE_PANEL.height / 2}" text-anchor="middle" fill="#888">${escapeXml(empty)}</text>`
      : panels
          .map((p, i) =>
            panelSvg(
              p,
              (i % COLUMNS) * LINE_PANEL.width,
              TITLE_H + Math.floor(i / COLUMNS) * LINE_PANEL.height,
            ),
          )
          .join('\n');
  return svgDocument(width, height, title, body);
}
