/**
 * Publishing with confirms and a bounded window of unconfirmed messages, at full speed or paced.
 * Every message carries its sequence number and publish time (see body.ts).
 */
import type { BenchConfirmChannel, BenchPublishOptions } from '../../adapters/client-api.ts';
import { BodyWriter } from './body.ts';
import { nowMs, sleep } from './clock.ts';

export interface PublishPlan {
  readonly exchange: string;
  readonly routingKey: string;
  readonly count: number;
  /** Most unconfirmed messages at any time (the "in flight"). */
  readonly window: number;
  /** Messages per second; undefined = as fast as the window allows. */
  readonly ratePerSecond?: number;
  /** First sequence number (so two publishes into one queue stay distinct). */
  readonly firstSeq?: number;
  readonly options?: BenchPublishOptions;
  /** Called on each confirm with the message's sequence number and its confirm latency, ms. */
  readonly onConfirm?: (seq: number, latencyMs: number) => void;
  /** Fail when messages are outstanding and no confirm came for this long, ms (default 30 s). */
  readonly stallMs?: number;
}

export interface PublishResult {
  readonly startMs: number;
  /** When the last publish() call returned. */
  readonly lastPublishMs: number;
  /** When the last confirm arrived. */
  readonly lastConfirmMs: number;
  readonly nacked: number;
}

/** A publisher's progress, for the live line. */
export interface PublishProgress {
  published: number;
  confirmed: number;
}

/** The broker nacked messages, or the channel failed under the publisher. */
export class PublishError extends Error {
  readonly code = 'BENCH_PUBLISH_FAILED';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PublishError';
  }
}

/** Granularity of pacing, ms: a paced publisher catches up on its schedule at most this often. */
const PACE_TICK_MS = 5;
/** Default of PublishPlan.stallMs. */
const DEFAULT_STALL_MS = 30_000;
/** How often the stall watchdog looks, ms. */
const WATCHDOG_MS = 1000;

/**
 * Publishes `plan.count` messages and resolves when every one is confirmed. Rejects with
 * PublishError on the first nack or channel failure.
 */
export async function publishWithConfirms(
  ch: BenchConfirmChannel,
  plan: PublishPlan,
  progress: PublishProgress = { published: 0, confirmed: 0 },
): Promise<PublishResult> {
  const writer = new BodyWriter();
  const firstSeq = plan.firstSeq ?? 0;
  const options: BenchPublishOptions = { persistent: true, ...plan.options };
  // Publish time of every message (8 bytes each): confirms may come back out of order.
  const sentAt = new Float64Array(plan.count);
  let inFlight = 0;
  let nacked = 0;
  let failure: Error | undefined;
  let lastConfirmMs = 0;
  let wake: (() => void) | undefined;
  const wakeUp = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  /** Resolves at the next confirm (or failure). */
  const nextConfirm = (): Promise<void> =>
    new Promise<void>((r) => {
      wake = r;
    });

  const startMs = nowMs();
  let lastPublishMs = startMs;
  // One watchdog timer rather than a timeout per wait: waits happen once per confirm at full speed.
  const stallMs = plan.stallMs ?? DEFAULT_STALL_MS;
  let lastMoveMs = startMs;
  const watchdog = setInterval(() => {
    if (inFlight > 0 && failure === undefined && nowMs() - lastMoveMs > stallMs) {
      failure = new PublishError(
        `no confirm for ${Math.round(stallMs / 1000)} s with ${inFlight} messages unconfirmed ` +
          `(${progress.confirmed} of ${plan.count} confirmed)`,
      );
      wakeUp();
    }
  }, WATCHDOG_MS);
  try {
    return await publishLoop();
  } finally {
    clearInterval(watchdog);
  }

  async function publishLoop(): Promise<PublishResult> {
    for (let i = 0; i < plan.count; i++) {
      if (plan.ratePerSecond !== undefined) {
        const due = startMs + (i * 1000) / plan.ratePerSecond;
        const wait = due - nowMs();
        if (wait > 0) await sleep(Math.max(wait, PACE_TICK_MS));
      }
      while (inFlight >= plan.window && failure === undefined) await nextConfirm();
      if (failure !== undefined) break;
      const seq = firstSeq + i;
      const t = nowMs();
      sentAt[i] = t;
      inFlight++;
      progress.published++;
      const index = i;
      ch.publish(plan.exchange, plan.routingKey, writer.stamp(seq, t), options, (err) => {
        const now = nowMs();
        lastMoveMs = now;
        inFlight--;
        progress.confirmed++;
        lastConfirmMs = now;
        if (err !== null) {
          nacked++;
          failure ??= new PublishError(`message ${seq} was not confirmed: ${err.message}`, { cause: err });
        } else {
          plan.onConfirm?.(seq, now - (sentAt[index] ?? now));
        }
        wakeUp();
      });
      lastPublishMs = t;
    }
    while (inFlight > 0 && failure === undefined) await nextConfirm();
    if (failure !== undefined) throw failure;
    return { startMs, lastPublishMs, lastConfirmMs, nacked };
  }
}
