/**
 * A high-dynamic-range histogram of non-negative integers (the bench records microseconds), in the
 * manner of Gil Tene's HdrHistogram: log-linear buckets that keep every value to 3 significant
 * digits (relative error at most 1/1024) from 0 up to `highestTrackable`, in fixed memory, with O(1)
 * recording and no allocation per value.
 *
 * Layout. Values below SUB_BUCKET_COUNT (2048) each have their own counter, so they are exact. Above
 * that, the range [2^k, 2^(k+1)) (k >= 11) is split into HALF (1024) counters of width 2^(k-10).
 * Worked example: 5000 = 0b1001110001000, its top bit is 2^12, so shift = 12 - 10 = 2 and the value
 * falls in the counter for [5000, 5003]; reading it back gives 5003 (the highest equivalent value).
 */

/** Counters that hold one value each: values below this are recorded exactly. */
const SUB_BUCKET_COUNT = 2048;
/** Counters per power of two above SUB_BUCKET_COUNT (the precision: 1/1024 relative). */
const HALF = 1024;
/** log2(HALF). */
const HALF_MAGNITUDE = 10;

/** Default upper bound: one hour in microseconds. Larger values are clamped to it and counted. */
export const DEFAULT_HIGHEST_TRACKABLE = 3_600_000_000;

/** The counter index of a non-negative integer value. */
export function bucketIndexOf(value: number): number {
  if (value < SUB_BUCKET_COUNT) return value;
  // floor(log2(value)) for values up to 2^53, without Math.log rounding trouble.
  const magnitude = value < 2 ** 32 ? 31 - Math.clz32(value) : 63 - Math.clz32(Math.floor(value / 2 ** 32));
  const shift = magnitude - HALF_MAGNITUDE;
  const top = Math.floor(value / 2 ** shift); // in [HALF, SUB_BUCKET_COUNT)
  return SUB_BUCKET_COUNT + (shift - 1) * HALF + (top - HALF);
}

/** The lowest value that lands in counter `index`. */
export function lowestValueAt(index: number): number {
  if (index < SUB_BUCKET_COUNT) return index;
  const shift = Math.floor((index - SUB_BUCKET_COUNT) / HALF) + 1;
  const top = ((index - SUB_BUCKET_COUNT) % HALF) + HALF;
  return top * 2 ** shift;
}

/** The highest value that lands in counter `index`. */
export function highestValueAt(index: number): number {
  if (index < SUB_BUCKET_COUNT) return index;
  const shift = Math.floor((index - SUB_BUCKET_COUNT) / HALF) + 1;
  return lowestValueAt(index) + 2 ** shift - 1;
}

/** A summary of a histogram, as it goes into the JSON report (values in the recorded unit). */
export interface HistogramSummary {
  readonly count: number;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  /** Values that were above highestTrackable (recorded as highestTrackable). */
  readonly clamped: number;
  /** Values that were below zero (recorded as zero): a clock or a model assumption was off. */
  readonly negatives: number;
}

/** One point of a percentile distribution: `percentile` in [0, 100], `value` in the recorded unit. */
export interface PercentilePoint {
  readonly percentile: number;
  readonly value: number;
}

export class HdrHistogram {
  readonly highestTrackable: number;
  readonly #counts: Float64Array;
  #count = 0;
  #sum = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = 0;
  #clamped = 0;
  #negatives = 0;

  /** @param highestTrackable the largest value kept (bigger ones are clamped), >= 2048. */
  constructor(highestTrackable: number = DEFAULT_HIGHEST_TRACKABLE) {
    if (!Number.isSafeInteger(highestTrackable) || highestTrackable < SUB_BUCKET_COUNT)
      throw new RangeError(
        `highestTrackable must be an integer >= ${SUB_BUCKET_COUNT}, got ${highestTrackable}`,
      );
    this.highestTrackable = highestTrackable;
    this.#counts = new Float64Array(bucketIndexOf(highestTrackable) + 1);
  }

  get count(): number {
    return this.#count;
  }

  /** Records `value` (rounded to an integer) `times` times. */
  record(value: number, times = 1): void {
    let v = Math.round(value);
    if (v < 0) {
      this.#negatives += times;
      v = 0;
    } else if (v > this.highestTrackable || Number.isNaN(v)) {
      this.#clamped += times;
      v = this.highestTrackable;
    }
    const i = bucketIndexOf(v);
    this.#counts[i] = (this.#counts[i] ?? 0) + times;
    this.#count += times;
    this.#sum += v * times;
    if (v < this.#min) this.#min = v;
    if (v > this.#max) this.#max = v;
  }

  /** Adds every value of `other` (same highestTrackable) to this one. */
  add(other: HdrHistogram): void {
    if (other.highestTrackable !== this.highestTrackable)
      throw new RangeError('cannot add histograms with different highestTrackable');
    const theirs = other.#counts;
    for (let i = 0; i < theirs.length; i++) this.#counts[i] = (this.#counts[i] ?? 0) + (theirs[i] ?? 0);
    this.#count += other.#count;
    this.#sum += other.#sum;
    this.#clamped += other.#clamped;
    this.#negatives += other.#negatives;
    if (other.#count > 0) {
      this.#min = Math.min(this.#min, other.#min);
      this.#max = Math.max(this.#max, other.#max);
    }
  }

  /**
   * The value at `percentile` (0..100): the highest value equivalent to the recorded value whose
   * rank is ceil(percentile/100 * count), capped at the largest value recorded. 0 when empty.
   */
  valueAtPercentile(percentile: number): number {
    if (this.#count === 0) return 0;
    const p = Math.min(Math.max(percentile, 0), 100);
    const rank = Math.max(1, Math.ceil((p / 100) * this.#count));
    let seen = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      seen += this.#counts[i] ?? 0;
      if (seen >= rank) return Math.min(highestValueAt(i), this.#max);
    }
    return this.#max;
  }

  summary(): HistogramSummary {
    const empty = this.#count === 0;
    return {
      count: this.#count,
      min: empty ? 0 : this.#min,
      max: this.#max,
      mean: empty ? 0 : this.#sum / this.#count,
      p50: this.valueAtPercentile(50),
      p90: this.valueAtPercentile(90),
      p99: this.valueAtPercentile(99),
      p999: this.valueAtPercentile(99.9),
      clamped: this.#clamped,
      negatives: this.#negatives,
    };
  }

  /**
   * The percentile distribution on a log scale of 1/(1 - p), as HdrHistogram plots it: 0, then
   * `perHalving` points per halving of the remaining tail (50 %, 75 %, 87.5 %, ...), down to a tail of
   * one value, then 100. For charts.
   */
  percentileDistribution(perHalving = 4): PercentilePoint[] {
    const points: PercentilePoint[] = [];
    if (this.#count === 0) return points;
    points.push({ percentile: 0, value: this.valueAtPercentile(0) });
    const step = 2 ** (1 / perHalving);
    // The tail fraction shrinks geometrically until it holds less than one value.
    for (let tail = 1 / step; tail * this.#count >= 1; tail /= step) {
      const percentile = 100 * (1 - tail);
      points.push({ percentile, value: this.valueAtPercentile(percentile) });
    }
    points.push({ percentile: 100, value: this.#max });
    return points;
  }
}
