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
 * A bucket bound as the `le` label value, in the form Prometheus 3 normalises `le` to on ingestion
 * (Go's shortest `%g`, whole numbers with `.0`: `100.0`, `1e+06`, `0.005`). Dashboards match `le`
 * as a string (RabbitMQ's Overview asks for `le="100.0"` and `le="1e+06"`); written this way the
 * same queries work on a Prometheus that does not normalise.
 */
export function formatBound(value: number): string {
  if (!Number.isFinite(value)) return formatValue(value);
  const exponent = value === 0 ? 0 : Math.floor(Math.log10(Math.abs(value)));
  if (exponent < -4 || exponent >= 6) {
    const [mantissa, exp] = value.toExponential().split('e') as [string, string];
    const sign = exp.startsWith('-') ? '-' : '+';
    const digits = exp.replace(/^[+-]/, '');
    return `${mantissa}e${sign}${digits.length < 2 ? `0${digits}` : digits}`;
  }
  return Number.isInteger(value) ? `${value}.0` : String(value);
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

/** Bytes per output chunk: a scrape of 10,000 queues is ~150 chunks, each filled in place. */
const CHUNK_BYTES = 64 * 1024;
const SPACE = 0x20;
const NEWLINE = 0x0a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/**
 * Writes into reused-size Buffer chunks rather than concatenating strings: a scrape of 10,000
 * queues is ~150,000 lines, and building each line as a string (then a rope of them) made the
 * garbage collector the largest cost of a scrape.
 */
export class ExpositionWriter {
  private readonly chunks: Buffer[] = [];
  private chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  private at = 0;
  private readonly families = new Set<string>();
  /** The family being written: samples must belong to it. */
  private current: { readonly name: string; readonly type: MetricType } | undefined;

  /** Start a family; every sample written until the next `family` call belongs to it. */
  family(name: string, type: MetricType, help: string): void {
    if (!METRIC_NAME.test(name)) throw new RangeError(`bad metric name '${name}'`);
    if (this.families.has(name)) throw new RangeError(`metric family '${name}' written twice`);
    this.families.add(name);
    this.current = { name, type };
    this.put(`# HELP ${name} ${escapeHelp(help)}\n# TYPE ${name} ${type}\n`);
  }

  /** One sample of the current (counter or gauge) family; `labels` from `labelPairs` ('' for none). */
  /** A family of one unlabelled sample: `family` then `sample('', value)`. */
  single(name: string, type: MetricType, help: string, value: number): void {
    this.family(name, type, help);
    this.sample('', value);
  }

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
      this.line(bucket, withLabels(labels, `le="${formatBound(h.bounds[i] as number)}"`), cumulative);
    }
    cumulative += h.counts[h.bounds.length] as number;
    this.line(bucket, withLabels(labels, 'le="+Inf"'), cumulative);
    this.line(`${family.name}_sum`, labels, h.sum);
    this.line(`${family.name}_count`, labels, cumulative);
  }

  /** Everything written so far, UTF-8, as the chunks filled (no copy into one buffer). */
  chunkList(): Buffer[] {
    return [...this.chunks, this.chunk.subarray(0, this.at)];
  }

  /** Everything written so far, UTF-8, in one buffer. */
  bytes(): Buffer {
    return Buffer.concat(this.chunkList());
  }

  /** Everything written so far, as text. */
  text(): string {
    return this.bytes().toString('utf8');
  }

  private requireFamily(): { readonly name: string; readonly type: MetricType } {
    if (this.current === undefined) throw new RangeError('sample before any family');
    return this.current;
  }

  private line(name: string, labels: string, value: number): void {
    // Worst case of this line in UTF-8 (3 bytes per UTF-16 unit), plus braces, space, newline and
    // a number's digits: room for it in the current chunk, so single bytes go in unchecked.
    this.reserve(3 * (name.length + labels.length) + 32);
    const chunk = this.chunk;
    this.at += chunk.write(name, this.at);
    if (labels !== '') {
      chunk[this.at++] = OPEN_BRACE;
      this.at += chunk.write(labels, this.at);
      chunk[this.at++] = CLOSE_BRACE;
    }
    chunk[this.at++] = SPACE;
    this.at += chunk.write(formatValue(value), this.at);
    chunk[this.at++] = NEWLINE;
  }

  private put(text: string): void {
    this.reserve(3 * text.length);
    this.at += this.chunk.write(text, this.at);
  }

  /** Makes room for `bytes` in the current chunk (a new chunk, larger if one line needs it). */
  private reserve(bytes: number): void {
    if (this.at + bytes <= this.chunk.length) return;
    this.chunks.push(this.chunk.subarray(0, this.at));
    this.chunk = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, bytes));
    this.at = 0;
  }
}
