import { describe, expect, it } from 'vitest';
import { bucketIndexOf, HdrHistogram, highestValueAt, lowestValueAt } from './hdr-histogram.ts';

describe('bucket layout', () => {
  it('keeps values below 2048 exact', () => {
    for (const v of [0, 1, 2, 100, 1023, 1024, 2047]) {
      expect(lowestValueAt(bucketIndexOf(v))).toBe(v);
      expect(highestValueAt(bucketIndexOf(v))).toBe(v);
    }
  });

  it('puts 5000 in the counter for [5000, 5003] (the worked example)', () => {
    const i = bucketIndexOf(5000);
    expect(lowestValueAt(i)).toBe(5000);
    expect(highestValueAt(i)).toBe(5003);
    expect(bucketIndexOf(5003)).toBe(i);
    expect(bucketIndexOf(5004)).toBe(i + 1);
  });

  it('is contiguous and monotonic across powers of two, with relative width at most 1/1024', () => {
    let prev = bucketIndexOf(2047);
    for (let v = 2048; v < 2 ** 22; v = Math.floor(v * 1.37) + 1) {
      const i = bucketIndexOf(v);
      expect(i).toBeGreaterThanOrEqual(prev);
      expect(lowestValueAt(i)).toBeLessThanOrEqual(v);
      expect(highestValueAt(i)).toBeGreaterThanOrEqual(v);
      expect((highestValueAt(i) - lowestValueAt(i) + 1) / lowestValueAt(i)).toBeLessThanOrEqual(1 / 1024);
      prev = i;
    }
    // Each counter's range starts right after the previous one's.
    for (let i = 2040; i < 2048 + 3 * 1024; i++) expect(lowestValueAt(i + 1)).toBe(highestValueAt(i) + 1);
  });

  it('handles values above 2^32', () => {
    const v = 2 ** 33 + 12345;
    const i = bucketIndexOf(v);
    expect(lowestValueAt(i)).toBeLessThanOrEqual(v);
    expect(highestValueAt(i)).toBeGreaterThanOrEqual(v);
  });
});

describe('HdrHistogram', () => {
  it('gives exact percentiles for small values', () => {
    const h = new HdrHistogram();
    for (let v = 1; v <= 1000; v++) h.record(v);
    expect(h.count).toBe(1000);
    expect(h.valueAtPercentile(50)).toBe(500);
    expect(h.valueAtPercentile(99)).toBe(990);
    expect(h.valueAtPercentile(100)).toBe(1000);
    expect(h.valueAtPercentile(0)).toBe(1);
    const s = h.summary();
    expect(s.min).toBe(1);
    expect(s.max).toBe(1000);
    expect(s.mean).toBeCloseTo(500.5, 6);
  });

  it('keeps 3 significant digits for large values', () => {
    const h = new HdrHistogram();
    const values = Array.from({ length: 10_000 }, (_, i) => 1_000_000 + i * 997);
    for (const v of values) h.record(v);
    const exactP99 = values[Math.ceil(0.99 * values.length) - 1] ?? 0;
    const p99 = h.valueAtPercentile(99);
    expect(Math.abs(p99 - exactP99) / exactP99).toBeLessThan(1 / 1000);
  });

  it('never reports a percentile above the largest recorded value', () => {
    const h = new HdrHistogram();
    h.record(5000);
    expect(h.valueAtPercentile(100)).toBe(5000);
    expect(h.valueAtPercentile(50)).toBe(5000);
  });

  it('counts negatives as zero and clamps values above the bound', () => {
    const h = new HdrHistogram(10_000);
    h.record(-3);
    h.record(50_000);
    const s = h.summary();
    expect(s.negatives).toBe(1);
    expect(s.clamped).toBe(1);
    expect(s.min).toBe(0);
    expect(s.max).toBe(10_000);
  });

  it('records with a count and adds histograms', () => {
    const a = new HdrHistogram();
    const b = new HdrHistogram();
    a.record(10, 3);
    b.record(20, 1);
    a.add(b);
    expect(a.count).toBe(4);
    expect(a.valueAtPercentile(75)).toBe(10);
    expect(a.valueAtPercentile(100)).toBe(20);
    expect(() => a.add(new HdrHistogram(5000))).toThrow(RangeError);
  });

  it('is empty-safe', () => {
    const h = new HdrHistogram();
    expect(h.valueAtPercentile(99)).toBe(0);
    expect(h.summary()).toMatchObject({ count: 0, min: 0, max: 0, mean: 0 });
    expect(h.percentileDistribution()).toEqual([]);
  });

  it('gives a percentile curve from 0 to 100 with rising percentiles and values', () => {
    const h = new HdrHistogram();
    for (let v = 0; v < 100_000; v++) h.record(v);
    const points = h.percentileDistribution(4);
    expect(points[0]?.percentile).toBe(0);
    expect(points.at(-1)).toEqual({ percentile: 100, value: 99_999 });
    for (let i = 1; i < points.length; i++) {
      expect(points[i]?.percentile).toBeGreaterThan(points[i - 1]?.percentile ?? 0);
      expect(points[i]?.value).toBeGreaterThanOrEqual(points[i - 1]?.value ?? 0);
    }
    // The tail is resolved down to about one value in 100k: past 99.99 %.
    expect(points.at(-2)?.percentile).toBeGreaterThan(99.99);
  });

  it('refuses a bound below its exact range', () => {
    expect(() => new HdrHistogram(100)).toThrow(RangeError);
  });
});
