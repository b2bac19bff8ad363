/**
 * The delivery counts of the messages a channel settled lately, per message id, for one queue
 * incarnation (channel-core.ts `settledIds`): bounded, the oldest forgotten first.
 *
 * Two generations of Maps rather than one Map trimmed by its oldest key: V8 leaves a hole in a
 * Map's table for every deleted entry until the table is rebuilt, and `keys().next()` walks past
 * all of them — with a FIFO of a few thousand ids that was ~2 µs per ack, 10 % of an ack's cost.
 * Here an insert is one `set`; when the young generation is full it becomes the old one and the
 * previous old one is dropped whole, so between `capacity / 2` and `capacity` of the most recent
 * settles are remembered.
 */
export class SettledMemory {
  readonly #half: number;
  #young = new Map<number, number>();
  #old = new Map<number, number>();

  /** Remembers at most `capacity` ids (at least half of it once that many were settled). */
  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 2) {
      throw new RangeError(`capacity must be an integer >= 2, got ${capacity}`);
    }
    this.#half = capacity >> 1;
  }

  /** The highest delivery count remembered for `id`, if any. */
  get(id: number): number | undefined {
    // The young generation is the newer: a count in it is never lower than one in the old.
    return this.#young.get(id) ?? this.#old.get(id);
  }

  /** Remembers that `id` was settled at `deliveryCount`, unless a count as high is remembered. */
  remember(id: number, deliveryCount: number): void {
    const known = this.get(id);
    if (known !== undefined && known >= deliveryCount) return;
    if (this.#young.size >= this.#half && !this.#young.has(id)) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(id, deliveryCount);
  }

  /** Ids remembered now (for tests and bounds). */
  get size(): number {
    let n = this.#young.size;
    for (const id of this.#old.keys()) if (!this.#young.has(id)) n++;
    return n;
  }
}
