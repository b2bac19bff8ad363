import { describe, expect, it } from 'vitest';
import { backoffDelay, backoffPolicy, DEFAULT_MAX_DELAY_MS, DEFAULT_MIN_DELAY_MS } from './backoff.ts';

const policy = { minDelayMs: 100, maxDelayMs: 1000 };
const schedule = (random: () => number, n = 6): number[] =>
  Array.from({ length: n }, (_, i) => backoffDelay(i, policy, random));

describe('backoffDelay', () => {
  it('doubles the ceiling per attempt up to maxDelayMs', () => {
    expect(schedule(() => 0.999_999)).toEqual([199, 399, 799, 999, 999, 999]);
  });

  it('never goes below minDelayMs', () => {
    expect(schedule(() => 0)).toEqual([100, 100, 100, 100, 100, 100]);
  });

  it('spreads delays uniformly between the floor and the ceiling', () => {
    expect(schedule(() => 0.5)).toEqual([150, 250, 450, 550, 550, 550]);
  });

  it('stays bounded for huge attempt numbers', () => {
    expect(backoffDelay(10_000, policy, () => 0.999_999)).toBe(999);
  });

  it('is constant when min equals max', () => {
    expect(backoffDelay(3, { minDelayMs: 50, maxDelayMs: 50 }, () => 0.7)).toBe(50);
  });
});

describe('backoffPolicy', () => {
  it('applies the defaults', () => {
    expect(backoffPolicy()).toEqual({ minDelayMs: DEFAULT_MIN_DELAY_MS, maxDelayMs: DEFAULT_MAX_DELAY_MS });
    expect(backoffPolicy(20_000)).toEqual({ minDelayMs: 20_000, maxDelayMs: 20_000 });
  });

  it('rejects negative, infinite or inverted bounds', () => {
    expect(() => backoffPolicy(-1)).toThrow(RangeError);
    expect(() => backoffPolicy(10, Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => backoffPolicy(500, 100)).toThrow(RangeError);
  });
});
