/**
 * A writer of Prometheus' text exposition format, version 0.0.4 — what a Prometheus server asks
 * for (`Content-Type: text/plain; version=0.0.4`). Small enough to own rather than depend on a
 * client library: the broker's figures are read at scrape time (no registry of live metric objects),
 * and a scrape of 10,000 queues must stay cheap.
 *
 * The format, as this writer produces it:
 * - a family starts with `# HELP name text` (text escaped: `\` → `\\`, newline → `\n`) and
 *   `# TYPE name counter|gauge|histogram`; all of its samples follow, contiguously, and a family
 *   appears once (`family` throws when a name repeats: two groups of one family are invalid);
 * - a sample is `name{label="value",...} value\n`; a label value escapes `\` → `\\`, `"` → `\"`
 *   and newline → `\n` (a queue name is attacker-controlled and may hold all three);
 * - values are Go-style floats: integers as digits, `NaN`, `+Inf`, `-Inf`;
 * - a histogram is cumulative `name_bucket{le="bound"}` lines in increasing order ending with
 *   `le="+Inf"` (equal to the count), then `name_sum` and `name_count`.
 *
 * Names are checked (`[a-zA-Z_:][a-zA-Z0-9_:]*`, labels `[a-zA-Z_][a-zA-Z0-9_]*`): they are
 * constants of this code, so a bad one is a programming error and throws.
 */

export type MetricType = 'counter' | 'gauge' | 'histogram';

/** A histogram as the writer reads it: upper bounds (increasing, finite) and per-bucket counts. */
export interface HistogramSnapshot {
  /** Upper bounds, increasing; the +Inf bucket is implicit. */
  readonly bounds: readonly number[];
  /** Observations per bucket, NOT cumulative: `bounds.length + 1` entries, the last one above every bound. */
  readonly counts: ArrayLike<number>;
  readonly sum: number;
  readonly count: number;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const NEEDS_ESCAPE = /[\\"\n]/;

/** A label value as the format needs it inside double quotes. */
export function escapeLabelValue(value: string): string {
  if (!NEEDS_ESCAPE.test(value)) return value;
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escaping (quotes stay as they are there). */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

/** A sample value in the format's float syntax. */
export function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * The inside of a label set, `a="x",b="y"` (no braces), for `sample`: made once per queue and
 * reused for each of its samples. Pairs are [name, value].
 */
export function labelPairs(pairs: readonly (readonly [string, string])[]): string {
  let out = '';
  for (const [name, value] of pairs) {
    if (!LABEL_NAME.test(name) || name.startsWith('__')) throw new RangeError(`bad label name '${name}'`);
    out += `${out === '' ? '' : ','}${name}="${escapeLabelValue(value)}"`;
  }
  return out;
}

/** Appends `extra` (already formatted pairs) to `labels`. */
export function withLabels(labels: string, extra: string): string {
  if (labels === '') return extra;
  if (extra === '') return labels;
  return `${labels},${extra}`;
}

export class ExpositionWriter {
  private out = '';
  private readonly families = new Set<string>();
  /** The family being written: samples must belong to it. */
  private current: { readonly name: string; readonly type: MetricType } | undefined;

  /** Start a family; every sample written until the next `family` call belongs to it. */
  family(name: string, type: MetricType, help: string): void {
    if (!METRIC_NAME.test(name)) throw new RangeError(`bad metric name '${name}'`);
    if (this.families.has(name)) throw new RangeError(`metric family '${name}' written twice`);
    this.families.add(name);
    this.current = { name, type };
    this.out += `# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`;
  }

  /** One sample of the current (counter or gauge) family; `labels` from `labelPairs` ('' for none). */
  sample(labels: string, value: number): void {
    const family = this.requireFamily();
    if (family.type === 'histogram') throw new RangeError(`'${family.name}' is a histogram: use histogram()`);
    this.line(family.name, labels, value);
  }

  /** One histogram of the current (histogram) family. */
  histogram(labels: string, h: HistogramSnapshot): void {
    const family = this.requireFamily();
    if (family.type !== 'histogram') throw new RangeError(`'${family.name}' is not a histogram`);
    if (h.counts.length !== h.bounds.length + 1)
      throw new RangeError('histogram: one count per bound, plus +Inf');
    const bucket = `${family.name}_bucket`;
    let cumulative = 0;
    for (let i = 0; i < h.bounds.length; i++) {
      cumulative += h.counts[i] as number;
      this.line(bucket, withLabels(labels, `le="${formatValue(h.bounds[i] as number)}"`), cumulative);
    }
    cumulative += h.counts[h.bounds.length] as number;
    this.line(bucket, withLabels(labels, 'le="+Inf"'), cumulative);
    this.line(`${family.name}_sum`, labels, h.sum);
    this.line(`${family.name}_count`, labels, cumulative);
  }

  /** Everything written so far. */
  text(): string {
    return this.out;
  }

  private requireFamily(): { readonly name: string; readonly type: MetricType } {
    if (this.current === undefined) throw new RangeError('sample before any family');
    return this.current;
  }

  private line(name: string, labels: string, value: number): void {
    this.out +=
      labels === '' ? `${name} ${formatValue(value)}\n` : `${name}{${labels}} ${formatValue(value)}\n`;
  }
}
