/**
 * A channel's unacked deliveries by delivery tag (channel-core.ts `unacked`). Tags are handed out
 * in increasing order and mostly acked in that order, so the entries live in two arrays in tag
 * order with a head: an ack of the oldest tag is a compare and a store, any other a binary search.
 * A Map keyed by tag hashed every tag on its set, get and delete, and left a hole per delete for
 * its table to be rebuilt over (part of the ~4.5 % "ack lookup" on a consumer's node, issue 28).
 *
 * An entry taken out of order leaves a hole until the head passes it; holes are squeezed out once
 * they outnumber the entries (and 1,024), so the arrays stay within about twice the live count
 * whatever the client's ack order.
 */

/** Holes tolerated before a squeeze, at least. */
const MIN_SQUEEZE = 1024;

export class DeliveryTagWindow<T> {
  #tags: number[] = [];
  /** `undefined` where an entry was taken (a hole). */
  #values: (T | undefined)[] = [];
  /** Index of the oldest live entry (or the end). */
  #head = 0;
  #size = 0;

  /** Live entries. */
  get size(): number {
    return this.#size;
  }

  /** Holds `value` under `tag`, which must be above every tag held before (RangeError if not). */
  set(tag: number, value: T): void {
    const tags = this.#tags;
    if (tags.length > 0 && tag <= (tags[tags.length - 1] as number))
      throw new RangeError(`delivery tag ${tag} is not above the last one held`);
    tags.push(tag);
    this.#values.push(value);
    this.#size++;
  }

  get(tag: number): T | undefined {
    const i = this.#indexOf(tag);
    return i < 0 ? undefined : this.#values[i];
  }

  /** The oldest tag held, if any. */
  first(): number | undefined {
    return this.#head < this.#tags.length ? this.#tags[this.#head] : undefined;
  }

  /** Takes `tag`'s entry out; whether there was one. */
  delete(tag: number): boolean {
    const i = this.#indexOf(tag);
    if (i < 0 || this.#values[i] === undefined) return false;
    this.#values[i] = undefined;
    this.#size--;
    if (i === this.#head) this.#advance();
    else if (this.#tags.length - this.#head - this.#size > Math.max(MIN_SQUEEZE, this.#size)) this.#squeeze();
    return true;
  }

  clear(): void {
    this.#tags = [];
    this.#values = [];
    this.#head = 0;
    this.#size = 0;
  }

  /** Index of `tag` (held or a hole), or -1. */
  #indexOf(tag: number): number {
    const tags = this.#tags;
    let lo = this.#head;
    if (lo < tags.length && tags[lo] === tag) return lo;
    let hi = tags.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const at = tags[mid] as number;
      if (at === tag) return mid;
      if (at < tag) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }

  /** Moves the head past holes; drops the dead prefix once it is most of the arrays. */
  #advance(): void {
    const values = this.#values;
    let head = this.#head;
    while (head < values.length && values[head] === undefined) head++;
    this.#head = head;
    if (head === values.length) {
      this.#tags.length = 0;
      values.length = 0;
      this.#head = 0;
    } else if (head > MIN_SQUEEZE && head * 2 > values.length) {
      this.#squeeze();
    }
  }

  /** Rebuilds the arrays with the live entries only. */
  #squeeze(): void {
    const tags: number[] = [];
    const values: (T | undefined)[] = [];
    for (let i = this.#head; i < this.#tags.length; i++) {
      const value = this.#values[i];
      if (value === undefined) continue;
      tags.push(this.#tags[i] as number);
      values.push(value);
    }
    this.#tags = tags;
    this.#values = values;
    this.#head = 0;
  }
}
