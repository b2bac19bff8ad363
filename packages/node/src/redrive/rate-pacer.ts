/**
 * Spaces a redrive's publishes to at most `rate` per second: each `take` resolves at the earliest
 * at 1/rate s after the previous one's slot (no burst beyond one slot after an idle pause, so a
 * resumed redrive does not flood its target). Without a rate it never waits.
 */
export interface PacerClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemPacerClock: PacerClock = {
  now: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export class RatePacer {
  readonly #intervalMs: number;
  readonly #clock: PacerClock;
  /** When the next slot opens (the clock's ms). */
  #next = Number.NEGATIVE_INFINITY;

  /** `rate`: messages per second, or null for no limit. */
  constructor(rate: number | null, clock: PacerClock = systemPacerClock) {
    this.#intervalMs = rate === null ? 0 : 1000 / rate;
    this.#clock = clock;
  }

  /** Wait for the next slot. */
  async take(): Promise<void> {
    if (this.#intervalMs === 0) return;
    const now = this.#clock.now();
    const slot = Math.max(this.#next, now);
    this.#next = slot + this.#intervalMs;
    if (slot > now) await this.#clock.sleep(slot - now);
  }

  /** How many publishes fit in `ms` at this rate (at least 1; `cap` without a rate). */
  perWindow(ms: number, cap: number): number {
    if (this.#intervalMs === 0) return cap;
    return Math.max(1, Math.min(cap, Math.floor(ms / this.#intervalMs)));
  }
}
