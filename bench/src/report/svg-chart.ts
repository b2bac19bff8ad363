/**
 * An SVG chart of latency distributions, one panel per case with Styx's curve beside RabbitMQ's, as
 * HdrHistogram plots them: percentile on a log scale of 1/(1 − p) (0, 90, 99, 99.9 % ...), value on
 * a log scale (lateness spans from below a millisecond to tens of seconds). Plain SVG 1.1 text, no
 * scripts and no external resources.
 */
import type { PercentilePoint } from '../histogram/hdr-histogram.ts';

export interface ChartSeries {
  readonly name: string;
  readonly color: string;
  /** Percentile (0..100) → value in ms. */
  readonly points: readonly PercentilePoint[];
}

export interface ChartPanel {
  readonly title: string;
  readonly series: readonly ChartSeries[];
}

/** Panel geometry, px. */
const PANEL_W = 480;
const PANEL_H = 280;
const MARGIN = { left: 64, right: 32, top: 44, bottom: 40 } as const;
const COLUMNS = 2;
/** Values below this (ms) are drawn at it: a log axis has no zero. */
export const VALUE_FLOOR_MS = 0.1;
/** The x axis ends at this many nines (99.999 %) at most. */
const MAX_NINES = 5;

/** Escapes text for an SVG text node or attribute. */
export function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

/** "Nines" of a percentile: log10(1 / (1 − p)); 90 % → 1, 99 % → 2. 100 % maps to `cap`. */
export function ninesOf(percentile: number, cap: number = MAX_NINES): number {
  const tail = 1 - percentile / 100;
  if (tail <= 0) return cap;
  return Math.min(cap, Math.log10(1 / tail));
}

/** The decades [lo, hi] (powers of ten, ms) that cover `values`, at least one decade wide. */
export function decadeRange(values: readonly number[]): { lo: number; hi: number } {
  const positive = values.map((v) => Math.max(v, VALUE_FLOOR_MS));
  if (positive.length === 0) return { lo: 0, hi: 1 };
  const lo = Math.floor(Math.log10(Math.min(...positive)));
  const hi = Math.max(lo + 1, Math.ceil(Math.log10(Math.max(...positive))));
  return { lo, hi };
}

/** A decade's label: 0.1 ms, 1 ms, 10 ms, 100 ms, 1 s, 10 s, 100 s. */
export function decadeLabel(exp: number): string {
  if (exp >= 3) return `${10 ** (exp - 3)} s`;
  if (exp >= 0) return `${10 ** exp} ms`;
  return `${Number((10 ** exp).toPrecision(1))} ms`;
}

/** The x-axis label of a number of nines: 0 → 0 %, 1 → 90 %, 3 → 99.9 %. */
export function ninesLabel(n: number): string {
  if (n === 0) return '0%';
  return `${(100 - 100 / 10 ** n).toFixed(Math.max(0, n - 2))}%`;
}

const f = (n: number): string => (Math.round(n * 10) / 10).toString();

function panelSvg(panel: ChartPanel, x0: number, y0: number): string {
  const plotW = PANEL_W - MARGIN.left - MARGIN.right;
  const plotH = PANEL_H - MARGIN.top - MARGIN.bottom;
  const left = x0 + MARGIN.left;
  const top = y0 + MARGIN.top;
  const out: string[] = [];
  out.push(
    `<text x="${f(x0 + PANEL_W / 2)}" y="${f(y0 + 18)}" text-anchor="middle" font-weight="bold">${escapeXml(panel.title)}</text>`,
  );
  const all = panel.series.flatMap((s) => s.points);
  if (all.length === 0) {
    out.push(
      `<text x="${f(x0 + PANEL_W / 2)}" y="${f(y0 + PANEL_H / 2)}" text-anchor="middle" fill="#888">no data</text>`,
    );
    return out.join('\n');
  }
  // The x axis reaches one decade past the deepest percentile below 100 % that a series resolves,
  // so the 100 % point (drawn at the right edge) stays apart from it.
  const deepest = Math.max(
    0,
    ...all.filter((p) => p.percentile < 100).map((p) => ninesOf(p.percentile, MAX_NINES)),
  );
  const nines = Math.min(MAX_NINES, Math.floor(deepest + 1e-9) + 1);
  const { lo, hi } = decadeRange(all.map((p) => p.value));
  const xOf = (p: number): number => left + (ninesOf(p, nines) / nines) * plotW;
  const yOf = (v: number): number => {
    const l = Math.log10(Math.max(v, VALUE_FLOOR_MS));
    return top + plotH - ((l - lo) / (hi - lo)) * plotH;
  };
  out.push(
    `<rect x="${f(left)}" y="${f(top)}" width="${f(plotW)}" height="${f(plotH)}" fill="none" stroke="#999"/>`,
  );
  for (let e = lo; e <= hi; e++) {
    const y = yOf(10 ** e);
    out.push(`<line x1="${f(left)}" y1="${f(y)}" x2="${f(left + plotW)}" y2="${f(y)}" stroke="#eee"/>`);
    out.push(
      `<text x="${f(left - 6)}" y="${f(y + 4)}" text-anchor="end">${escapeXml(decadeLabel(e))}</text>`,
    );
  }
  for (let n = 0; n <= nines; n++) {
    const x = left + (n / nines) * plotW;
    out.push(`<line x1="${f(x)}" y1="${f(top)}" x2="${f(x)}" y2="${f(top + plotH)}" stroke="#eee"/>`);
    out.push(`<text x="${f(x)}" y="${f(top + plotH + 16)}" text-anchor="middle">${ninesLabel(n)}</text>`);
  }
  out.push(
    `<text x="${f(left + plotW / 2)}" y="${f(top + plotH + 32)}" text-anchor="middle" fill="#555">percentile</text>`,
  );
  panel.series.forEach((s, i) => {
    if (s.points.length > 0) {
      const pts = s.points.map((p) => `${f(xOf(p.percentile))},${f(yOf(p.value))}`).join(' ');
      out.push(`<polyline fill="none" stroke="${escapeXml(s.color)}" stroke-width="2" points="${pts}"/>`);
    }
    const lx = left + 8 + i * 110;
    out.push(
      `<line x1="${f(lx)}" y1="${f(top - 10)}" x2="${f(lx + 18)}" y2="${f(top - 10)}" stroke="${escapeXml(s.color)}" stroke-width="3"/>`,
    );
    out.push(
      `<text x="${f(lx + 22)}" y="${f(top - 6)}">${escapeXml(s.name)}${s.points.length === 0 ? ' (no data)' : ''}</text>`,
    );
  });
  return out.join('\n');
}

/** The whole chart: panels in a grid of two columns. */
export function renderChart(title: string, panels: readonly ChartPanel[]): string {
  const rows = Math.max(1, Math.ceil(panels.length / COLUMNS));
  const width = PANEL_W * COLUMNS;
  const height = 40 + rows * PANEL_H;
  const body =
    panels.length === 0
      ? `<text x="${width / 2}" y="${40 + PANEL_H / 2}" text-anchor="middle" fill="#888">no latency data in this run</text>`
      : panels
          .map((p, i) => panelSvg(p, (i % COLUMNS) * PANEL_W, 40 + Math.floor(i / COLUMNS) * PANEL_H))
          .join('\n');
  return svgDocument(width, height, title, body);
}

/** A standalone SVG document: white background, `title` centred on top, then `body`. */
export function svgDocument(width: number, height: number, title: string, body: string): string {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="26" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
    body,
    '</svg>',
    '',
  ].join('\n');
}
