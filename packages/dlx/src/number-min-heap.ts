import { DeadlineHeap } from './deadline-heap.ts';

/**
 * A binary min-heap of numbers: push and pop O(log n), peek O(1), no allocation per operation
 * beyond the arrays' own growth. Used for "smallest id" questions (dedupe eviction and pruning, the
 * lowest pending hand-off). A `DeadlineHeap` whose pairs all carry the same id.
 */
export class NumberMinHeap {
  private readonly heap = new DeadlineHeap();

  get size(): number {
    return this.heap.size;
  }

  /** The smallest number, or undefined when empty. */
  peek(): number | undefined {
    return this.heap.peekTime();
  }

  push(value: number): void {
    this.heap.push(value, 0);
  }

  /** Removes and returns the smallest number, or undefined when empty. */
  pop(): number | undefined {
    const top = this.heap.peekTime();
    this.heap.pop();
    return top;
  }

  /** Replaces the content with `values` (any order), O(n log n). */
  reset(values: Iterable<number>): void {
    this.heap.clear();
    for (const v of values) this.heap.push(v, 0);
  }
}
