/**
 * Publishing with confirms for a fixed time rather than a fixed count, from several channels at
 * once, each round-robin over its own queues: the scaling sweeps (h–k) run each point for a few
 * seconds whatever its rate, so a slow point (1 MiB bodies, 1,000 connections) costs no more time
 * than a fast one.
 */
import type { BenchConfirmChannel } from '../../adapters/client-api.ts';
import { BodyWriter } from './body.ts';
import { nowMs } from './clock.ts';
import { PublishError } from './publisher.ts';

/** One publishing channel and the queues it spreads its messages over. */
export interface TimedLane {
  readonly channel: BenchConfirmChannel;
  readonly queues: readonly string[];
}

export interface TimedPlan {
  readonly lanes: readonly TimedLane[];
  /** Publishing stops this long after it starts; the outstanding confirms are awaited. */
  readonly durationMs: number;
  /** Most unconfirmed messages per lane. */
  readonly windowPerLane: number;
  readonly bodyBytes: number;
  /** Fail when messages are outstanding and no confirm came for this long, ms. */
  readonly stallMs: number;
  /** Called about every 250 ms with the confirmed count. */
  readonly onProgress?: (confirmed: number) => void;
}

export interface TimedResult {
  /** Messages published and confirmed. */
  readonly confirmed: number;
  readonly startMs: number;
  /** When the last confirm arrived. */
  readonly endMs: number;
}

/** How often the stall watchdog and the progress callback run, ms. */
const TICK_MS = 250;

/** Publishes from every lane until `durationMs` has passed, then waits for every confirm. */
export async function publishFor(plan: TimedPlan): Promise<TimedResult> {
  const startMs = nowMs();
  const deadline = startMs + plan.durationMs;
  let confirmed = 0;
  let lastMoveMs = startMs;
  let endMs = startMs;
  let failure: Error | undefined;
  const wakers = new Set<() => void>();
  const wakeAll = (): void => {
    const all = [...wakers];
    wakers.clear();
    for (const w of all) w();
  };
  const ticker = setInterval(() => {
    plan.onProgress?.(confirmed);
    if (failure === undefined && nowMs() - lastMoveMs > plan.stallMs) {
      failure = new PublishError(
        `no confirm for ${Math.round(plan.stallMs / 1000)} s (${confirmed} confirmed)`,
      );
      wakeAll();
    }
  }, TICK_MS);

  async function lane(l: TimedLane): Promise<void> {
    // One body per lane: a channel copies it into its frame synchronously inside publish().
    const writer = new BodyWriter(plan.bodyBytes);
    let inFlight = 0;
    let seq = 0;
    let wake: (() => void) | undefined;
    const settled = (): Promise<void> =>
      new Promise<void>((r) => {
        wake = r;
        wakers.add(r);
      });
    const onConfirm = (err: Error | null): void => {
      const now = nowMs();
      inFlight--;
      lastMoveMs = now;
      endMs = now;
      if (err === null) confirmed++;
      else failure ??= new PublishError(`a message was not confirmed: ${err.message}`, { cause: err });
      const w = wake;
      wake = undefined;
      if (w !== undefined) {
        wakers.delete(w);
        w();
      }
    };
    while (failure === undefined && nowMs() < deadline) {
      if (inFlight >= plan.windowPerLane) {
        await settled();
        continue;
      }
      const queue = l.queues[seq % l.queues.length] ?? '';
      inFlight++;
      l.channel.publish('', queue, writer.stamp(seq, nowMs()), { persistent: true }, onConfirm);
      seq++;
      // Let confirms in now and then: a lane with a wide window would otherwise fill it in one go.
      if (seq % 64 === 0) await new Promise<void>((r) => setImmediate(r));
    }
    while (inFlight > 0 && failure === undefined) await settled();
  }

  try {
    await Promise.all(plan.lanes.map(lane));
  } finally {
    clearInterval(ticker);
  }
  if (failure !== undefined) throw failure;
  return { confirmed, startMs, endMs };
}
