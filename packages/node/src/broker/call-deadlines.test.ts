import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { CallDeadlines } from './call-deadlines.ts';

describe('CallDeadlines', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('expires a call timeoutMs after it started, not before', async () => {
    const deadlines = new CallDeadlines(1_000);
    const expired: string[] = [];
    deadlines.start(() => expired.push('a'));
    await vi.advanceTimersByTimeAsync(400);
    deadlines.start(() => expired.push('b'));
    await vi.advanceTimersByTimeAsync(599);
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(399);
    expect(expired).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(1);
    expect(expired).toEqual(['a', 'b']);
    expect(deadlines.waiting).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('never expires a settled call, wherever it is in line', async () => {
    const deadlines = new CallDeadlines(1_000);
    const expired: number[] = [];
    const calls = [0, 1, 2, 3].map((n) => deadlines.start(() => expired.push(n)));
    deadlines.settle(calls[1] as never);
    deadlines.settle(calls[0] as never);
    deadlines.settle(calls[0] as never); // idempotent
    expect(deadlines.waiting).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual([2, 3]);
  });

  it('keeps one timer for any number of calls, and none once they are over', async () => {
    const deadlines = new CallDeadlines(1_000);
    const calls = Array.from({ length: 5_000 }, () => deadlines.start(() => {}));
    expect(vi.getTimerCount()).toBe(1);
    for (const call of calls) deadlines.settle(call);
    expect(deadlines.kept).toBe(0);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('holds about the calls in flight, not every call of the last timeoutMs', () => {
    const deadlines = new CallDeadlines(1_000);
    const inFlight = [];
    for (let i = 0; i < 100_000; i++) {
      inFlight.push(deadlines.start(() => {}));
      if (inFlight.length > 100) deadlines.settle(inFlight.shift() as never);
    }
    expect(deadlines.kept).toBe(100);
  });

  it('re-arms for a call started after the oldest settled, and expires it on its own deadline', async () => {
    const deadlines = new CallDeadlines(1_000);
    const expired: string[] = [];
    const first = deadlines.start(() => expired.push('first'));
    await vi.advanceTimersByTimeAsync(600);
    deadlines.start(() => expired.push('second'));
    deadlines.settle(first);
    await vi.advanceTimersByTimeAsync(400); // the timer fires for `first`, finds it settled
    expect(expired).toEqual([]);
    await vi.advanceTimersByTimeAsync(600);
    expect(expired).toEqual(['second']);
  });

  it('lets an expiry start and settle other calls', async () => {
    const deadlines = new CallDeadlines(1_000);
    const expired: string[] = [];
    const later = deadlines.start(() => expired.push('later'));
    deadlines.start(() => {
      expired.push('retry-started');
      deadlines.settle(later);
      deadlines.start(() => expired.push('retry'));
    });
    const first = deadlines.start(() => expired.push('never'));
    deadlines.settle(first);
    await vi.advanceTimersByTimeAsync(1_000);
    // `later` expired first (it started first), then the second call's expiry started a retry.
    expect(expired).toEqual(['later', 'retry-started']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(expired).toEqual(['later', 'retry-started', 'retry']);
    expect(deadlines.kept).toBe(0);
  });

  it('refuses a timeout that is not positive', () => {
    expect(() => new CallDeadlines(0)).toThrow(RangeError);
    expect(() => new CallDeadlines(-5)).toThrow(RangeError);
    expect(() => new CallDeadlines(Number.NaN)).toThrow(RangeError);
  });
});
