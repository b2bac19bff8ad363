/** Number formatting shared by the table and the Markdown report. */

/** 12345.6 → '12,346'; small values keep up to 3 significant digits (0.0421 → '0.0421'). */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return Number(n.toPrecision(3)).toString();
}

/** A duration in ms: '0.42 ms', '12.3 ms', '1.23 s'. */
export function formatMs(ms: number): string {
  if (!Number.isFinite(ms)) return String(ms);
  const abs = Math.abs(ms);
  if (abs >= 1000) return `${(ms / 1000).toFixed(abs >= 10_000 ? 1 : 2)} s`;
  if (abs >= 100) return `${Math.round(ms)} ms`;
  if (abs >= 10) return `${ms.toFixed(1)} ms`;
  return `${ms.toFixed(2)} ms`;
}

/** Bytes: '812 B', '1.5 KiB', '3.2 MiB'. */
export function formatBytes(b: number): string {
  const abs = Math.abs(b);
  if (abs >= 2 ** 20) return `${(b / 2 ** 20).toFixed(1)} MiB`;
  if (abs >= 2 ** 10) return `${(b / 2 ** 10).toFixed(1)} KiB`;
  return `${Math.round(b)} B`;
}

/** A value with its unit, as the reports print metrics. */
export function formatValue(value: number, unit: string): string {
  switch (unit) {
    case 'ms':
      return formatMs(value);
    case 'B':
      return formatBytes(value);
    case 'MiB':
      return `${formatCount(value)} MiB`;
    case 'msg/s':
      return `${formatCount(value)} msg/s`;
    default:
      return `${formatCount(value)} ${unit}`;
  }
}

/** A ratio: '×1.84', '×12.3', '×0.00014'; '–' when there is none. */
export function formatRatio(ratio: number | null): string {
  if (ratio === null) return '–';
  if (ratio >= 10) return `×${ratio.toFixed(1)}`;
  if (ratio >= 0.01 || ratio === 0) return `×${ratio.toFixed(2)}`;
  return `×${Number(ratio.toPrecision(2))}`;
}

/** CPU time and its share of wall time: '4.2 s (85 %)'. */
export function formatCpu(cpuMs: number | null, wallMs: number): string {
  if (cpuMs === null) return '?';
  const pct = wallMs > 0 ? Math.round((cpuMs / wallMs) * 100) : 0;
  return `${(cpuMs / 1000).toFixed(1)} s (${pct} %)`;
}

/**
 * Each node's share of the broker CPU, node 1 first: as µs/msg when the case has a CPU-per-message
 * figure (`perMessageUs`, split by each node's share of the case's broker CPU, which also covers
 * set-up: an estimate), else as seconds. Empty for a single node.
 */
export function formatNodeCpu(
  nodesMs: readonly number[] | undefined,
  perMessageUs: number | undefined,
): string {
  if (nodesMs === undefined || nodesMs.length < 2) return '';
  const total = nodesMs.reduce((a, b) => a + b, 0);
  if (perMessageUs !== undefined && total > 0) {
    return `${nodesMs.map((ms) => ((perMessageUs * ms) / total).toFixed(1)).join(' / ')} µs/msg`;
  }
  return `${nodesMs.map((ms) => (ms / 1000).toFixed(1)).join(' / ')} s`;
}

/** Left-aligned text table with a header row and a dashed rule under it. */
export function textTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
