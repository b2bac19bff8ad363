/**
 * Where a log's leader reads time when it stamps a proposal. Injected so tests can step time, or
 * move it backwards, without touching the system clock.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. May go backwards (NTP steps); logs clamp it. */
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to; for tests and simulations. */
export class ManualClock implements Clock {
  #now: number;

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  /** Set the time in ms since the epoch; may be earlier than the current value. */
  set(ms: number): void {
    this.#now = ms;
  }

  /** Move the time by `ms` (negative moves it backwards). */
  advance(ms: number): void {
    this.#now += ms;
  }
}
