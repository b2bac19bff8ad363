import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_STAGE_BOUNDS, DeadLetterTimings } from './dead-letter-timings.ts';

/** Index of the bucket a duration in seconds falls in (the first bound >= it; last: above all). */
function bucketOf(seconds: number): number {
  const i = DEAD_LETTER_STAGE_BOUNDS.findIndex((b) => seconds <= b);
  return i === -1 ? DEAD_LETTER_STAGE_BOUNDS.length : i;
}

describe('DeadLetterTimings', () => {
  it('times each expired message from its deadline, and the entry once per message to its apply', () => {
    const t = new DeadLetterTimings();
    t.expired([0, 3, 40], 10_000, 10_012);
    expect(t.expiryProposed.count).toBe(3);
    expect(t.expiryProposed.sum).toBeCloseTo(0.043, 9);
    expect(t.expiryProposed.counts[bucketOf(0.04)]).toBe(1);
    expect(t.expiryCommitted.count).toBe(3);
    expect(t.expiryCommitted.sum).toBeCloseTo(0.036, 9);
    expect(t.expiryCommitted.counts[bucketOf(0.012)]).toBe(3);
  });

  it('times copies per strategy, from the removal entry to the commit at the target', () => {
    const t = new DeadLetterTimings();
    t.copied('at-most-once', 5_000, 5_007);
    t.copied('at-least-once', 5_000, 5_250);
    t.copied('at-least-once', 5_000, 20_000);
    expect(t.copyCommitted['at-most-once'].count).toBe(1);
    expect(t.copyCommitted['at-most-once'].counts[bucketOf(0.007)]).toBe(1);
    expect(t.copyCommitted['at-least-once'].count).toBe(2);
    // 15 s is past the last bound (10 s): the +Inf bucket.
    expect(t.copyCommitted['at-least-once'].counts[DEAD_LETTER_STAGE_BOUNDS.length]).toBe(1);
  });

  it('reads a clock that stepped back (another leader stamped the entry) as no delay, never negative', () => {
    const t = new DeadLetterTimings();
    t.expired([-5], 10_000, 9_990);
    t.copied('at-most-once', 10_000, 9_000);
    expect(t.expiryProposed.sum).toBe(0);
    expect(t.expiryCommitted.sum).toBe(0);
    expect(t.copyCommitted['at-most-once'].sum).toBe(0);
    expect(t.expiryProposed.counts[0]).toBe(1);
  });

  it('records nothing for an apply that expired nothing', () => {
    const t = new DeadLetterTimings();
    t.expired([], 1, 2);
    expect(t.expiryProposed.count).toBe(0);
    expect(t.expiryCommitted.count).toBe(0);
  });
});
