/**
 * Proposals waiting for their entries to be applied, oldest first: a FIFO on an array with a moving
 * head, so the hot path (push one per proposal, shift one per applied entry) allocates nothing. The
 * consumed prefix is dropped when the queue empties, or in one splice once it is both large and at
 * least half the array — amortized O(1) per element, never an `Array.shift` per entry.
 */

/** Consumed slots at the front that trigger compaction, once they are also half the array. */
const COMPACT_AFTER = 1024;

export class ProposalQueue<T> {
  #items: T[] = [];
  #head = 0;

  get size(): number {
    return this.#items.length - this.#head;
  }

  push(item: T): void {
    this.#items.push(item);
  }

  /** The oldest item, left in place. */
  peek(): T | undefined {
    return this.#items[this.#head];
  }

  /** Remove and return the oldest item. */
  shift(): T | undefined {
    if (this.#head === this.#items.length) return undefined;
    const item = this.#items[this.#head++] as T;
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head >= COMPACT_AFTER && this.#head * 2 >= this.#items.length) {
      this.#items.splice(0, this.#head);
      this.#head = 0;
    }
    return item;
  }

  /** Remove the newest items while `matches` holds for them; returned oldest first. */
  popNewestWhile(matches: (item: T) => boolean): T[] {
    let keep = this.#items.length;
    while (keep > this.#head && matches(this.#items[keep - 1] as T)) keep--;
    return this.#items.splice(keep);
  }

  /** Remove and return everything, oldest first. */
  drain(): T[] {
    const live = this.#head === 0 ? this.#items : this.#items.slice(this.#head);
    this.#items = [];
    this.#head = 0;
    return live;
  }
}
