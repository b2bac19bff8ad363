/**
 * A fixed-bucket histogram of durations in seconds, in the shape Prometheus histograms take:
 * per-bucket counts, their sum and count (the node's `/metrics` writes it as one). Observing is a
 * short loop over the bounds and two additions: no allocation, so it can sit on an I/O path (the
 * log store's batch syncs).
 */

/**
 * Bounds for a disk sync, seconds: 100 µs (page cache, a fast NVMe) to 2.5 s (a disk in trouble).
 * LMDB's fsync per batch is typically 0.5–10 ms on SSDs.
 */
export const SYNC_LATENCY_BOUNDS: readonly number[] = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];

export class LatencyHistogram {
  readonly bounds: readonly number[];
  /** Per bucket, not cumulative; the last one is above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[] = SYNC_LATENCY_BOUNDS) {
    for (let i = 0; i < bounds.length; i++) {
      const b = bounds[i] as number;
      if (!Number.isFinite(b) || (i > 0 && b <= (bounds[i - 1] as number))) {
        throw new RangeError('histogram bounds must be finite and increasing');
      }
    }
    this.bounds = [...bounds];
    this.counts = new Float64Array(bounds.length + 1);
  }

  /** Record one duration, seconds. */
  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count++;
  }
}
