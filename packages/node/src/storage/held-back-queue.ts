/**
 * The held-back bodies of one group (see LmdbBodyStore), in the order they were held: an array
 * with a head, where a released entry (its `unwritten` cleared: written, deleted or superseded)
 * stays as a stale slot until the head passes it or a sweep drops it. A Set did the same job with
 * a hash of every message object on the way in and out, on every replica's every enqueue.
 *
 * Stale slots still reference their entries (and so their messages): they are swept out once they
 * outnumber the live ones (and are more than a few), so a drained queue keeps no bodies alive here.
 */
export interface HeldEntry {
  /** Set while held back; cleared (by the owner) when the entry is released. */
  readonly unwritten: unknown;
}

/** Stale slots tolerated before a sweep, whatever the live count. */
const SWEEP_MIN_STALE = 1024;

export class HeldBackQueue<T extends HeldEntry> {
  #slots: (T | undefined)[] = [];
  #head = 0;
  #live = 0;

  /** Entries held (not released). */
  get size(): number {
    return this.#live;
  }

  /** Slots kept, live or stale (for tests: bounded by twice the live ones, or a few). */
  get slots(): number {
    return this.#slots.length - this.#head;
  }

  /** Hold `entry` (its `unwritten` set), after every entry held before. */
  add(entry: T): void {
    this.#slots.push(entry);
    this.#live++;
  }

  /** One held entry was released: its owner has just cleared its `unwritten`. */
  released(): void {
    this.#live--;
    const stale = this.#slots.length - this.#head - this.#live;
    if (stale >= SWEEP_MIN_STALE && stale > this.#live) this.#sweep();
  }

  /**
   * Visit the held entries, oldest first, until `visit` returns false. `visit` may release entries
   * (the one visited or others): a sweep it causes replaces the slots, never the ones being read.
   */
  visit(visit: (entry: T) => boolean): void {
    const slots = this.#slots;
    for (let i = this.#head; i < slots.length; i++) {
      const entry = slots[i];
      if (entry === undefined || entry.unwritten === undefined) continue;
      if (!visit(entry)) break;
    }
    if (slots !== this.#slots) return;
    // The released entries at the front are passed for good.
    let head = this.#head;
    while (head < slots.length && (slots[head] as T | undefined)?.unwritten === undefined) {
      slots[head] = undefined;
      head++;
    }
    if (head === slots.length) {
      this.#slots = [];
      this.#head = 0;
    } else {
      this.#head = head;
    }
  }

  #sweep(): void {
    const kept: T[] = [];
    const slots = this.#slots;
    for (let i = this.#head; i < slots.length; i++) {
      const entry = slots[i];
      if (entry !== undefined && entry.unwritten !== undefined) kept.push(entry);
    }
    this.#slots = kept;
    this.#head = 0;
  }
}
