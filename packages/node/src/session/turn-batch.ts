/**
 * Writes batched per event-loop turn, for every transport: what a connection queues in one turn
 * goes out together at the end of it (one socket write, one WebSocket message), or at once when
 * `max` items are queued, so a client starts on the first slice of a large burst while the rest is
 * still being made.
 */
export class TurnBatch<T> {
  readonly #max: number;
  readonly #write: (items: T[]) => void;
  #items: T[] = [];
  #scheduled = false;

  /** `write` gets each batch, in order. */
  constructor(max: number, write: (items: T[]) => void) {
    this.#max = max;
    this.#write = write;
  }

  push(item: T): void {
    this.#items.push(item);
    if (this.#items.length >= this.#max) {
      // The scheduled flush (there is one: the batch was not empty) finds what is queued after this.
      this.flush();
      return;
    }
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#atTurnEnd);
    }
  }

  readonly #atTurnEnd = (): void => {
    this.#scheduled = false;
    this.flush();
  };

  /** Write what is queued now. */
  flush(): void {
    const items = this.#items;
    if (items.length === 0) return;
    this.#items = [];
    this.#write(items);
  }
}
