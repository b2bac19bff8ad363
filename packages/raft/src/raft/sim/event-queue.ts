/**
 * The simulator's scheduler: a binary min-heap of events ordered by (time, seq). `seq` is the order
 * of scheduling, so events due at the same simulated time run in a deterministic order.
 */
export class EventQueue<T> {
  #times: number[] = [];
  #seqs: number[] = [];
  #items: T[] = [];
  #seq = 0;

  get size(): number {
    return this.#items.length;
  }

  push(time: number, item: T): void {
    const seq = this.#seq++;
    let i = this.#items.length;
    this.#times.push(time);
    this.#seqs.push(seq);
    this.#items.push(item);
    // Sift up.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
  }

  /** Time of the earliest event, or +Infinity when empty. */
  peekTime(): number {
    return this.#items.length > 0 ? (this.#times[0] as number) : Number.POSITIVE_INFINITY;
  }

  /** Remove and return the earliest event. */
  pop(): { time: number; item: T } | undefined {
    const n = this.#items.length;
    if (n === 0) return undefined;
    const time = this.#times[0] as number;
    const item = this.#items[0] as T;
    const lastTime = this.#times.pop() as number;
    const lastSeq = this.#seqs.pop() as number;
    const lastItem = this.#items.pop() as T;
    if (n > 1) {
      this.#times[0] = lastTime;
      this.#seqs[0] = lastSeq;
      this.#items[0] = lastItem;
      // Sift down.
      let i = 0;
      const size = n - 1;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= size) break;
        const right = left + 1;
        const child = right < size && this.#less(right, left) ? right : left;
        if (!this.#less(child, i)) break;
        this.#swap(i, child);
        i = child;
      }
    }
    return { time, item };
  }

  #less(a: number, b: number): boolean {
    const ta = this.#times[a] as number;
    const tb = this.#times[b] as number;
    return ta < tb || (ta === tb && (this.#seqs[a] as number) < (this.#seqs[b] as number));
  }

  #swap(a: number, b: number): void {
    const t = this.#times[a] as number;
    this.#times[a] = this.#times[b] as number;
    this.#times[b] = t;
    const s = this.#seqs[a] as number;
    this.#seqs[a] = this.#seqs[b] as number;
    this.#seqs[b] = s;
    const item = this.#items[a] as T;
    this.#items[a] = this.#items[b] as T;
    this.#items[b] = item;
  }
}
