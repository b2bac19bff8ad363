import { invariant } from './errors.ts';

/**
 * The append messages in flight to one follower, oldest first: a ring buffer of (last index of the
 * message, data bytes of the message). An acknowledgement up to index i frees every message ending
 * at or before i. The buffer grows lazily up to `maxMessages`, so an idle follower of one of
 * thousands of groups costs a few words.
 *
 * Invariants: count <= maxMessages; `bytes` is the sum of the bytes of the held messages;
 * indexes are strictly increasing from oldest to newest.
 */
export class Inflights {
  readonly maxMessages: number;
  /** 0 = no byte bound. */
  readonly maxBytes: number;
  #indexes: number[] = [];
  #sizes: number[] = [];
  #start = 0;
  #count = 0;
  #bytes = 0;

  constructor(maxMessages: number, maxBytes: number) {
    this.maxMessages = maxMessages;
    this.maxBytes = maxBytes;
  }

  get count(): number {
    return this.#count;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /** Whether no more messages may be sent: the message or byte bound is reached. */
  full(): boolean {
    return this.#count >= this.maxMessages || (this.maxBytes > 0 && this.#bytes >= this.maxBytes);
  }

  /** Record a message ending at `index` carrying `bytes` of entry data. */
  add(index: number, bytes: number): void {
    invariant(this.#count < this.maxMessages, 'inflights: add while full');
    const capacity = this.#indexes.length;
    if (this.#count === capacity) this.#grow();
    const cap = this.#indexes.length;
    let at = this.#start + this.#count;
    if (at >= cap) at -= cap;
    if (this.#count > 0) {
      let lastAt = at - 1;
      if (lastAt < 0) lastAt += cap;
      invariant((this.#indexes[lastAt] as number) < index, 'inflights: indexes must increase');
    }
    this.#indexes[at] = index;
    this.#sizes[at] = bytes;
    this.#count++;
    this.#bytes += bytes;
  }

  /** Free every message whose last index is <= `index`. */
  freeLE(index: number): void {
    const cap = this.#indexes.length;
    while (this.#count > 0) {
      const at = this.#start;
      if ((this.#indexes[at] as number) > index) break;
      this.#bytes -= this.#sizes[at] as number;
      this.#count--;
      this.#start = at + 1 === cap ? 0 : at + 1;
    }
    if (this.#count === 0) this.#start = 0;
  }

  reset(): void {
    this.#start = 0;
    this.#count = 0;
    this.#bytes = 0;
  }

  #grow(): void {
    const oldCap = this.#indexes.length;
    const newCap = Math.min(this.maxMessages, Math.max(4, oldCap * 2));
    const indexes: number[] = new Array(newCap);
    const sizes: number[] = new Array(newCap);
    for (let k = 0; k < this.#count; k++) {
      let at = this.#start + k;
      if (at >= oldCap) at -= oldCap;
      indexes[k] = this.#indexes[at] as number;
      sizes[k] = this.#sizes[at] as number;
    }
    this.#indexes = indexes;
    this.#sizes = sizes;
    this.#start = 0;
  }
}
