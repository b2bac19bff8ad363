import { describe, expect, it } from 'vitest';
import type { BackoffPolicy } from './backoff.ts';
import { backoffDelayMs, DEFAULT_BACKOFF, MAX_BACKOFF_MS, validateBackoffPolicy } from './backoff.ts';

describe('backoffDelayMs', () => {
  it('doubles from 100 ms and is capped at 5 s by default', () => {
    const delays = Array.from({ length: 9 }, (_, i) => backoffDelayMs(DEFAULT_BACKOFF, i + 1));
    expect(delays).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
  });

  it('never exceeds the cap, even for huge attempt numbers', () => {
    for (const attempt of [10, 31, 64, 1_000, 2 ** 40]) {
      expect(backoffDelayMs(DEFAULT_BACKOFF, attempt)).toBe(MAX_BACKOFF_MS);
    }
  });

  it('follows a custom policy', () => {
    const policy: BackoffPolicy = { initialDelayMs: 250, maxDelayMs: 1000, jitterRatio: 0, jitterSeed: 0 };
    expect([1, 2, 3, 4].map((a) => backoffDelayMs(policy, a))).toEqual([250, 500, 1000, 1000]);
  });

  it('jitter is deterministic, only shortens, and stays within the ratio', () => {
    const policy: BackoffPolicy = { ...DEFAULT_BACKOFF, jitterRatio: 0.5, jitterSeed: 42 };
    const seen = new Set<number>();
    for (let key = 0; key < 200; key++) {
      for (let attempt = 1; attempt <= 8; attempt++) {
        const plain = backoffDelayMs(DEFAULT_BACKOFF, attempt);
        const jittered = backoffDelayMs(policy, attempt, key);
        expect(jittered).toBe(backoffDelayMs(policy, attempt, key));
        expect(jittered).toBeLessThanOrEqual(plain);
        expect(jittered).toBeGreaterThanOrEqual(plain * 0.5);
        seen.add(jittered);
      }
    }
    // It does spread retries out.
    expect(seen.size).toBeGreaterThan(50);
    // Another seed gives another schedule.
    const other = { ...policy, jitterSeed: 43 };
    const differs = Array.from(
      { length: 20 },
      (_, k) => backoffDelayMs(other, 7, k) !== backoffDelayMs(policy, 7, k),
    );
    expect(differs).toContain(true);
  });

  it('rejects policies outside the documented bounds', () => {
    const bad: BackoffPolicy[] = [
      { ...DEFAULT_BACKOFF, initialDelayMs: 0 },
      { ...DEFAULT_BACKOFF, maxDelayMs: MAX_BACKOFF_MS + 1 },
      { ...DEFAULT_BACKOFF, initialDelayMs: 200, maxDelayMs: 100 },
      { ...DEFAULT_BACKOFF, jitterRatio: 1.5 },
      { ...DEFAULT_BACKOFF, jitterRatio: Number.NaN },
      { ...DEFAULT_BACKOFF, jitterSeed: 0.5 },
    ];
    for (const policy of bad) {
      expect(() => validateBackoffPolicy(policy)).toThrow(
        expect.objectContaining({ code: 'DLX_INVALID_CONFIG' }),
      );
    }
    expect(() => validateBackoffPolicy(DEFAULT_BACKOFF)).not.toThrow();
  });
});
