/**
 * Waiting, before a case, until the broker has finished the work the previous step left it: a
 * queue delete is confirmed before the broker has dropped the queue's messages (Styx removes a
 * deleted queue's bodies from LMDB in chunks afterwards), so without this wait the warm-up's (or
 * the previous case's) cleanup ran inside the next case's CPU window: LMDB deletes showed up in
 * a.publish's profile. The rule reads only the broker's CPU time, so every target gets the same
 * one: the broker is quiet once it used at most `maxBusyMs` of CPU in each of `quietSamples`
 * consecutive `sampleMs` periods.
 */
import { nowMs, sleep } from '../scenarios/support/clock.ts';

export interface QuietRule {
  /** Length of one sample, ms. */
  readonly sampleMs: number;
  /**
   * CPU a quiet broker may use in one sample, ms. /proc counts in clock ticks (10 ms), so one tick
   * in a sample must pass: an idle broker's timers (heartbeats, metrics) cost about that.
   */
  readonly maxBusyMs: number;
  /** Consecutive quiet samples needed. */
  readonly quietSamples: number;
  /** Give up waiting after this long, ms (a broker that never goes quiet must not hang the bench). */
  readonly maxWaitMs: number;
}

export const DEFAULT_QUIET_RULE: QuietRule = {
  sampleMs: 500,
  maxBusyMs: 10,
  quietSamples: 2,
  maxWaitMs: 30_000,
};

export interface QuietOutcome {
  /** False when `maxWaitMs` passed first, or the broker's CPU could not be read. */
  readonly quiet: boolean;
  readonly waitedMs: number;
  /** Broker CPU used while waiting, ms (0 when unreadable). */
  readonly cpuMs: number;
}

export interface QuietClock {
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
}

const REAL_CLOCK: QuietClock = { now: nowMs, sleep };

/**
 * Resolves once the broker whose CPU time `readCpuMs` reads (ms, undefined when unreadable) has
 * been quiet under `rule`, or `rule.maxWaitMs` has passed.
 */
export async function waitUntilQuiet(
  readCpuMs: () => number | undefined,
  rule: QuietRule = DEFAULT_QUIET_RULE,
  clock: QuietClock = REAL_CLOCK,
): Promise<QuietOutcome> {
  if (!(rule.sampleMs > 0) || !(rule.quietSamples >= 1) || !(rule.maxBusyMs >= 0)) {
    throw new RangeError(`invalid quiet rule: ${JSON.stringify(rule)}`);
  }
  const start = clock.now();
  const first = readCpuMs();
  if (first === undefined) return { quiet: false, waitedMs: 0, cpuMs: 0 };
  let last = first;
  let quietInARow = 0;
  while (quietInARow < rule.quietSamples) {
    if (clock.now() - start >= rule.maxWaitMs) {
      return { quiet: false, waitedMs: clock.now() - start, cpuMs: last - first };
    }
    await clock.sleep(rule.sampleMs);
    const cpu = readCpuMs();
    if (cpu === undefined) return { quiet: false, waitedMs: clock.now() - start, cpuMs: last - first };
    quietInARow = cpu - last <= rule.maxBusyMs ? quietInARow + 1 : 0;
    last = cpu;
  }
  return { quiet: true, waitedMs: clock.now() - start, cpuMs: last - first };
}
