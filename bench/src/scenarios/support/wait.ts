/** Waiting for a condition while watching that something still moves. */
import { nowMs, sleep } from './clock.ts';

/** Nothing progressed for the stall timeout: the broker lost messages or stopped working. */
export class StallError extends Error {
  readonly code = 'BENCH_STALLED';
  constructor(message: string) {
    super(message);
    this.name = 'StallError';
  }
}

/** How often a wait re-checks its condition, ms. */
const POLL_MS = 10;

export interface WaitOptions {
  /** Names what is awaited, for the error: 'dead-lettered messages'. */
  readonly what: string;
  /** A counter that grows while work is progressing. */
  readonly progress: () => number;
  /** The counter's target, for the error text. */
  readonly expected: number;
  /** ms without progress before giving up. */
  readonly stallMs: number;
  /** Called on every poll (the live line). */
  readonly onPoll?: () => void;
}

/** Resolves once `done()` holds; rejects with StallError when `progress()` stops moving. */
export async function waitUntil(done: () => boolean, options: WaitOptions): Promise<void> {
  let last = options.progress();
  let lastMoveMs = nowMs();
  while (!done()) {
    await sleep(POLL_MS);
    options.onPoll?.();
    const p = options.progress();
    if (p !== last) {
      last = p;
      lastMoveMs = nowMs();
    } else if (nowMs() - lastMoveMs > options.stallMs) {
      throw new StallError(
        `stalled: ${p} of ${options.expected} ${options.what} after ${Math.round(options.stallMs / 1000)} s without progress`,
      );
    }
  }
}
