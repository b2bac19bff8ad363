// Publisher-confirm bookkeeping for one channel in confirm mode. Pure (no I/O, no timers).
//
// Each publish after confirmSelect gets the next sequence number, 1-based; the server confirms by
// delivery tag = sequence number, with `multiple` covering every outstanding number up to the tag.
// Example: publishes 1..5, then ack(3, multiple) settles 1, 2, 3; nack(5) settles 5; 4 stays.

/** Called once per publish: null for an ack, an Error for a nack or a channel close. */
export type ConfirmCallback = (err: Error | null) => void;

interface Waiter {
  /** Settles when every sequence number up to this one is confirmed. */
  upTo: number;
  resolve(): void;
  reject(err: Error): void;
}

/** Outstanding publishes and the waitForConfirms() promises on them. */
export class ConfirmTracker {
  #next = 1;
  /** Outstanding sequence numbers, in increasing order (Map keeps insertion order). */
  #outstanding = new Map<number, ConfirmCallback | undefined>();
  #waiters: Waiter[] = [];
  /**
   * Set when failAll() failed at least one publish. waitForAll() called afterwards rejects with it:
   * a publish that failed on close must never look confirmed to a later waitForConfirms().
   */
  #failedWith: Error | null = null;

  /** The sequence number the next publish will get. */
  get nextSequence(): number {
    return this.#next;
  }

  /** Number of publishes not yet confirmed. */
  get outstanding(): number {
    return this.#outstanding.size;
  }

  /** Registers a publish; returns its sequence number. */
  register(callback?: ConfirmCallback): number {
    const seq = this.#next++;
    this.#outstanding.set(seq, callback);
    return seq;
  }

  /** The server acked `tag` (and every outstanding number below it when `multiple`). */
  ack(tag: number, multiple: boolean): void {
    this.#settle(tag, multiple, null);
  }

  /** The server nacked `tag` (and every outstanding number below it when `multiple`). */
  nack(tag: number, multiple: boolean, err: Error): void {
    this.#settle(tag, multiple, err);
  }

  /** The channel closed: every outstanding publish fails with `err`. */
  failAll(err: Error): void {
    const all = [...this.#outstanding.entries()];
    this.#outstanding.clear();
    if (all.length > 0) this.#failedWith = err;
    for (const [, cb] of all) cb?.(err);
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w.reject(err);
  }

  /**
   * Resolves once every publish registered so far is acked; rejects at the first nack among them
   * (or when they fail on close). Resolves at once when nothing is outstanding, unless failAll()
   * already failed some publish: then it rejects with that error.
   */
  waitForAll(): Promise<void> {
    if (this.#failedWith !== null) return Promise.reject(this.#failedWith);
    if (this.#outstanding.size === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ upTo: this.#next - 1, resolve, reject });
    });
  }

  #lowestOutstanding(): number {
    for (const seq of this.#outstanding.keys()) return seq;
    return this.#next;
  }

  #settle(tag: number, multiple: boolean, err: Error | null): void {
    const settled: [number, ConfirmCallback | undefined][] = [];
    if (multiple) {
      for (const [seq, cb] of this.#outstanding) {
        if (seq > tag) break;
        settled.push([seq, cb]);
      }
      for (const [seq] of settled) this.#outstanding.delete(seq);
    } else if (this.#outstanding.has(tag)) {
      settled.push([tag, this.#outstanding.get(tag)]);
      this.#outstanding.delete(tag);
    }
    // A confirm for a number that is not outstanding (already confirmed, or never published) is
    // ignored, as amqplib does.
    for (const [, cb] of settled) cb?.(err);
    if (settled.length === 0) return;
    const lowest = this.#lowestOutstanding();
    const firstSettled = (settled[0] as [number, unknown])[0];
    const remaining: Waiter[] = [];
    for (const w of this.#waiters) {
      if (err !== null && firstSettled <= w.upTo) w.reject(err);
      else if (lowest > w.upTo) w.resolve();
      else remaining.push(w);
    }
    this.#waiters = remaining;
  }
}
