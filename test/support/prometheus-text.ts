// Reading `GET /metrics` in tests with a real Prometheus text-format parser
// (parse-prometheus-text-format, a port of the Prometheus Python client's parser), plus the checks
// that parser leaves out: every family once, names valid, values numbers.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

/** A family as the parser returns it (prom2json's shape; values are strings). */
export interface ParsedFamily {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly metrics: readonly ParsedSample[];
}

export interface ParsedSample {
  readonly labels?: Readonly<Record<string, string>>;
  readonly value?: string;
  /** Histograms: bucket upper bound ('+Inf' included) → cumulative count. */
  readonly buckets?: Readonly<Record<string, string>>;
  readonly count?: string;
  readonly sum?: string;
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Parse `text`, failing on anything the format forbids that the parser lets through. */
export function parseExposition(text: string): ParsedFamily[] {
  const families = (parsePrometheusTextFormat as (text: string) => ParsedFamily[])(text);
  const seen = new Set<string>();
  for (const family of families) {
    if (seen.has(family.name)) throw new Error(`family ${family.name} appears twice (split into groups)`);
    seen.add(family.name);
    if (!METRIC_NAME.test(family.name)) throw new Error(`bad metric name ${family.name}`);
    if (!['COUNTER', 'GAUGE', 'HISTOGRAM'].includes(family.type)) {
      throw new Error(`family ${family.name} has type ${family.type} (no TYPE line before its samples?)`);
    }
    if (family.help === '') throw new Error(`family ${family.name} has no HELP`);
    for (const sample of family.metrics) {
      for (const label of Object.keys(sample.labels ?? {})) {
        if (!LABEL_NAME.test(label)) throw new Error(`bad label name ${label} in ${family.name}`);
      }
      for (const v of [sample.value, sample.count, sample.sum, ...Object.values(sample.buckets ?? {})]) {
        if (v !== undefined && Number.isNaN(Number(v)) && v !== 'NaN') {
          throw new Error(`non-numeric value ${v} in ${family.name}`);
        }
      }
    }
  }
  return families;
}

/** The family named `name`; throws when absent. */
export function family(families: readonly ParsedFamily[], name: string): ParsedFamily {
  const found = families.find((f) => f.name === name);
  if (found === undefined) throw new Error(`no family ${name}`);
  return found;
}

/** The value of the sample of `name` whose labels include `labels` (undefined when none matches). */
export function sampleValue(
  families: readonly ParsedFamily[],
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const found = families.find((f) => f.name === name);
  const sample = found?.metrics.find((m) =>
    Object.entries(labels).every(([key, value]) => m.labels?.[key] === value),
  );
  return sample?.value === undefined ? undefined : Number(sample.value);
}

/** One histogram of a family, by its labels (`le` aside). */
export interface LabelledHistogram {
  readonly labels: Readonly<Record<string, string>>;
  readonly count: number;
  readonly sum: number;
  /** Upper bound ('+Inf' included) → cumulative count, in the order written. */
  readonly buckets: ReadonlyMap<string, number>;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\} (\S+)$/;
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * The histograms of family `name` in `text`, one per label set. The parser `parseExposition` uses
 * keeps one histogram per family and drops its labels (it merges every `_bucket` line into one), so
 * a family of several labelled histograms is read here, from the sample lines themselves.
 */
export function labelledHistograms(text: string, name: string): LabelledHistogram[] {
  const byLabels = new Map<
    string,
    { labels: Record<string, string>; count: number; sum: number; buckets: Map<string, number> }
  >();
  for (const line of text.split('\n')) {
    const match = SAMPLE_LINE.exec(line);
    if (match === null) continue;
    const [, sampleName = '', labelText = '', valueText = ''] = match;
    const suffix = sampleName.startsWith(`${name}_`) ? sampleName.slice(name.length + 1) : undefined;
    if (suffix !== 'bucket' && suffix !== 'sum' && suffix !== 'count') continue;
    const labels: Record<string, string> = {};
    for (const [, key = '', value = ''] of labelText.matchAll(LABEL_PAIR)) labels[key] = value;
    const le = labels.le;
    delete labels.le;
    const key = JSON.stringify(Object.entries(labels).sort());
    let h = byLabels.get(key);
    if (h === undefined) {
      h = { labels, count: Number.NaN, sum: Number.NaN, buckets: new Map() };
      byLabels.set(key, h);
    }
    const value = Number(valueText);
    if (suffix === 'bucket') {
      if (le === undefined) throw new Error(`${sampleName} without le: ${line}`);
      h.buckets.set(le, value);
    } else h[suffix] = value;
  }
  return [...byLabels.values()];
}
