import { describe, expect, it } from 'vitest';
import type { PacerClock } from './rate-pacer.ts';
import { RatePacer } from './rate-pacer.ts';

/** A clock that only moves when something sleeps, recording when each take was let through. */
function fakeClock(): PacerClock & { t: number } {
  const clock = {
    t: 0,
    now: () => clock.t,
    sleep: async (ms: number) => {
      clock.t += ms;
    },
  };
  return clock;
}

describe('RatePacer', () => {
  it('spaces takes 1/rate apart, in the order they were asked', async () => {
    const clock = fakeClock();
    const pacer = new RatePacer(4, clock);
    const times: number[] = [];
    for (let i = 0; i < 5; i++) {
      await pacer.take();
      times.push(clock.t);
    }
    expect(times).toEqual([0, 250, 500, 750, 1000]);
  });

  it('gives no burst after an idle pause beyond the next slot', async () => {
    const clock = fakeClock();
    const pacer = new RatePacer(10, clock);
    await pacer.take();
    clock.t += 5000;
    await pacer.take();
    const before = clock.t;
    await pacer.take();
    expect(clock.t - before).toBe(100);
  });

  it('never waits without a rate, and sizes batches to about a window', async () => {
    const clock = fakeClock();
    const free = new RatePacer(null, clock);
    for (let i = 0; i < 100; i++) await free.take();
    expect(clock.t).toBe(0);
    expect(free.perWindow(1000, 64)).toBe(64);
    expect(new RatePacer(5, clock).perWindow(1000, 64)).toBe(5);
    expect(new RatePacer(0.2, clock).perWindow(1000, 64)).toBe(1);
    expect(new RatePacer(500, clock).perWindow(1000, 64)).toBe(64);
  });
});
