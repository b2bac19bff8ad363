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
