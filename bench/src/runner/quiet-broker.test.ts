import { describe, expect, it } from 'vitest';
import type { QuietClock, QuietRule } from './quiet-broker.ts';
import { waitUntilQuiet } from './quiet-broker.ts';

const RULE: QuietRule = { sampleMs: 100, maxBusyMs: 10, quietSamples: 2, maxWaitMs: 1000 };

/** A clock that advances only when slept on, and CPU readings given per sample (cumulative, ms). */
function scripted(readings: (number | undefined)[]): {
  clock: QuietClock;
  read: () => number | undefined;
  reads: () => number;
} {
  let t = 0;
  let n = 0;
  const clock: QuietClock = {
    now: () => t,
    sleep: async (ms) => {
      t += ms;
    },
  };
  return {
    clock,
    read: () => {
      const v = n < readings.length ? readings[n] : readings.at(-1);
      n++;
      return v;
    },
    reads: () => n,
  };
}

describe('waitUntilQuiet', () => {
  it('returns after the required quiet samples when the broker is idle from the start', async () => {
    const s = scripted([500, 500, 505]);
    const r = await waitUntilQuiet(s.read, RULE, s.clock);
    expect(r).toEqual({ quiet: true, waitedMs: 200, cpuMs: 5 });
    expect(s.reads()).toBe(3);
  });

  it('waits while the broker is busy (cleanup still running), and a busy sample restarts the count', async () => {
    // busy 200, 150; quiet 5; busy 40 (resets); quiet 0, 10 (= maxBusyMs counts as quiet)
    const s = scripted([0, 200, 350, 355, 395, 395, 405]);
    const r = await waitUntilQuiet(s.read, RULE, s.clock);
    expect(r).toEqual({ quiet: true, waitedMs: 600, cpuMs: 405 });
  });

  it('gives up after maxWaitMs when the broker never goes quiet', async () => {
    const readings = Array.from({ length: 50 }, (_, i) => i * 50);
    const s = scripted(readings);
    const r = await waitUntilQuiet(s.read, RULE, s.clock);
    expect(r.quiet).toBe(false);
    expect(r.waitedMs).toBe(1000);
    expect(r.cpuMs).toBe(500);
  });

  it('reports not quiet, without waiting, when the CPU time cannot be read', async () => {
    const s = scripted([undefined]);
    expect(await waitUntilQuiet(s.read, RULE, s.clock)).toEqual({ quiet: false, waitedMs: 0, cpuMs: 0 });
  });

  it('stops when the broker becomes unreadable while waiting (it exited)', async () => {
    const s = scripted([0, 100, undefined]);
    expect(await waitUntilQuiet(s.read, RULE, s.clock)).toEqual({ quiet: false, waitedMs: 200, cpuMs: 100 });
  });

  it('rejects a rule that could never be met or would spin', async () => {
    const s = scripted([0]);
    await expect(waitUntilQuiet(s.read, { ...RULE, sampleMs: 0 }, s.clock)).rejects.toThrow(RangeError);
    await expect(waitUntilQuiet(s.read, { ...RULE, quietSamples: 0 }, s.clock)).rejects.toThrow(RangeError);
    await expect(waitUntilQuiet(s.read, { ...RULE, maxBusyMs: -1 }, s.clock)).rejects.toThrow(RangeError);
  });
});
