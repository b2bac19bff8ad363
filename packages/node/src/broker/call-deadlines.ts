/**
 * Deadlines of calls that all wait the same time (`timeoutMs`): they expire in the order they
 * started, so one FIFO and one timer serve them all, instead of a timer per call (a publish with
 * confirms made one `setTimeout` + `clearTimeout` per message, a few percent of a leader's CPU).
 *
 * A settled call drops its `expire` callback at once (nothing of its outcome stays reachable from
 * here) and settled calls at the head are trimmed as they settle; calls settle roughly in the order
 * they started, so the FIFO holds about the calls in flight. The timer is armed for the oldest call
 * still waiting and not cleared when that one settles: it fires at most once per `timeoutMs` while
 * calls come and go, re-arms only while some call is waiting, and is unref'd (a deadline alone
 * does not hold a stopping process open for up to `timeoutMs`). Deadlines are read from
 * `performance.now()` (monotonic; test fake timers move it too).
 */

/** One call's deadline, as `start` returned it. */
export interface CallDeadline {
  readonly at: number;
  /** Undefined once the call settled or expired. */
  expire: (() => void) | undefined;
}

export class CallDeadlines {
  readonly #timeoutMs: number;
  #waiting: CallDeadline[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(timeoutMs: number) {
    if (!(timeoutMs > 0)) throw new RangeError(`call timeout must be positive, got ${timeoutMs}`);
    this.#timeoutMs = timeoutMs;
  }

  /** `expire` is called once `timeoutMs` from now, unless `settle` is called first. */
  start(expire: () => void): CallDeadline {
    const deadline: CallDeadline = { at: performance.now() + this.#timeoutMs, expire };
    this.#waiting.push(deadline);
    if (this.#timer === undefined) this.#arm(deadline.at);
    return deadline;
  }

  /** The call is over: its deadline no longer fires. Idempotent. */
  settle(deadline: CallDeadline): void {
    deadline.expire = undefined;
    this.#trim();
  }

  /** Calls started and neither settled nor expired (for tests). */
  get waiting(): number {
    let count = 0;
    for (let i = this.#head; i < this.#waiting.length; i++)
      if (this.#waiting[i]?.expire !== undefined) count++;
    return count;
  }

  /** Records kept, waiting or not trimmed yet (for tests: bounded by the calls in flight). */
  get kept(): number {
    return this.#waiting.length - this.#head;
  }

  #arm(at: number): void {
    this.#timer = setTimeout(this.#fire, Math.max(0, Math.ceil(at - performance.now())));
    // A deadline is no work of its own: it must not keep a stopping process alive.
    this.#timer.unref?.();
  }

  readonly #fire = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    // `this.#waiting` re-read each time: an `expire` may start or settle calls (which may trim it).
    while (this.#head < this.#waiting.length) {
      const waiting = this.#waiting;
      const oldest = waiting[this.#head] as CallDeadline;
      const expire = oldest.expire;
      if (expire !== undefined) {
        if (oldest.at > now) break;
        oldest.expire = undefined;
      }
      waiting[this.#head] = undefined as unknown as CallDeadline; // let it be collected
      this.#head++;
      // After the record left the FIFO: an `expire` that starts another call finds it consistent.
      expire?.();
    }
    this.#trim();
    const next = this.#waiting[this.#head];
    if (next !== undefined && this.#timer === undefined) this.#arm(next.at);
  };

  /** Drop the settled records at the head; give back the array's room once it is mostly spent. */
  #trim(): void {
    const waiting = this.#waiting;
    while (this.#head < waiting.length && (waiting[this.#head] as CallDeadline).expire === undefined) {
      waiting[this.#head] = undefined as unknown as CallDeadline;
      this.#head++;
    }
    if (this.#head === waiting.length) {
      waiting.length = 0;
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= waiting.length) {
      this.#waiting = waiting.slice(this.#head);
      this.#head = 0;
    }
  }
}
