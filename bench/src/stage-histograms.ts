/**
 * Reading a node's `styx_dead_letter_stage_seconds` histograms (queue/dead-letter-timings.ts) out of
 * its `GET /metrics` text, adding up several nodes' (a cluster: each leader times its own queues),
 * and estimating quantiles from the buckets the way Prometheus's `histogram_quantile` does: linear
 * within the bucket the rank falls in.
 */

/** The family the node writes. */
export const STAGE_FAMILY = 'styx_dead_letter_stage_seconds';

/** One stage: cumulative counts per upper bound, increasing bounds, `+Inf` last. */
export interface StageHistogram {
  /** The sample's labels without `node` and `le`, as written (e.g. `stage="expiry_proposed"`). */
  readonly stage: string;
  readonly bounds: number[];
  readonly cumulative: number[];
}

const BUCKET_LINE = new RegExp(`^${STAGE_FAMILY}_bucket\\{(.*)\\} (\\S+)$`);
const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The stage histograms in one exposition text, in the order written. */
export function parseStageHistograms(text: string): StageHistogram[] {
  const stages = new Map<string, StageHistogram>();
  for (const line of text.split('\n')) {
    const match = BUCKET_LINE.exec(line);
    if (match === null) continue;
    let le: string | undefined;
    const kept: string[] = [];
    for (const [pair, key, value] of (match[1] ?? '').matchAll(LABEL_PAIR)) {
      if (key === 'le') le = value;
      else if (key !== 'node') kept.push(pair);
    }
    if (le === undefined) throw new Error(`${STAGE_FAMILY} bucket without le: ${line}`);
    const stage = kept.join(',');
    let h = stages.get(stage);
    if (h === undefined) {
      h = { stage, bounds: [], cumulative: [] };
      stages.set(stage, h);
    }
    h.bounds.push(le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le));
    h.cumulative.push(Number(match[2]));
  }
  return [...stages.values()];
}

/** `a` plus `b`, stage by stage (the same bounds: every node writes the same buckets). */
export function addStageHistograms(
  a: readonly StageHistogram[],
  b: readonly StageHistogram[],
): StageHistogram[] {
  const sum = new Map(a.map((h) => [h.stage, { ...h, cumulative: [...h.cumulative] }]));
  for (const h of b) {
    const into = sum.get(h.stage);
    if (into === undefined) {
      sum.set(h.stage, { ...h, cumulative: [...h.cumulative] });
      continue;
    }
    if (into.bounds.length !== h.bounds.length || into.bounds.some((bound, i) => bound !== h.bounds[i])) {
      throw new Error(`${STAGE_FAMILY} ${h.stage}: the nodes' buckets differ`);
    }
    for (let i = 0; i < h.cumulative.length; i++)
      into.cumulative[i] = (into.cumulative[i] ?? 0) + (h.cumulative[i] ?? 0);
  }
  return [...sum.values()];
}

/** `later` minus `earlier` (a scrape before the measured window from one after it). */
export function subtractStageHistograms(
  later: readonly StageHistogram[],
  earlier: readonly StageHistogram[],
): StageHistogram[] {
  const negated = earlier.map((h) => ({ ...h, cumulative: h.cumulative.map((c) => -c) }));
  return addStageHistograms(later, negated);
}

/** How many observations `h` holds. */
export function stageCount(h: StageHistogram): number {
  return h.cumulative.at(-1) ?? 0;
}

/**
 * The q-quantile (0 < q < 1) of `h`, seconds, interpolated linearly within its bucket (from 0 for
 * the first); the highest finite bound when the rank falls in `+Inf`; undefined when empty.
 */
export function stageQuantile(h: StageHistogram, q: number): number | undefined {
  if (!(q > 0 && q < 1)) throw new RangeError(`quantile must be in (0, 1), got ${q}`);
  const total = stageCount(h);
  if (total <= 0) return undefined;
  const rank = q * total;
  for (let i = 0; i < h.bounds.length; i++) {
    const upTo = h.cumulative[i] ?? 0;
    if (upTo < rank) continue;
    const upper = h.bounds[i] as number;
    if (upper === Number.POSITIVE_INFINITY) return h.bounds[i - 1] ?? 0;
    const lower = i === 0 ? 0 : (h.bounds[i - 1] as number);
    const below = i === 0 ? 0 : (h.cumulative[i - 1] ?? 0);
    const inBucket = upTo - below;
    return inBucket === 0 ? upper : lower + ((upper - lower) * (rank - below)) / inBucket;
  }
  return h.bounds.at(-2);
}
