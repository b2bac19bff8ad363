/**
 * A binary min-heap of numbers, array-backed: push and pop O(log n), peek O(1), no allocation per
 * operation beyond the array's own growth. Used for "smallest id" questions (dedupe eviction and
 * pruning, the lowest pending hand-off).
 */
export class NumberMinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The smallest number, or undefined when empty. */
  peek(): number | undefined {
    return this.items[0];
  }

  push(value: number): void {
    const items = this.items;
    let i = items.length;
    items.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = items[parent] as number;
      if (p <= value) break;
      items[i] = p;
      i = parent;
    }
    items[i] = value;
  }

  /** Removes and returns the smallest number, or undefined when empty. */
  pop(): number | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    const n = items.length;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      let child = left;
      if (right < n && (items[right] as number) < (items[left] as number)) child = right;
      const c = items[child] as number;
      if (c >= last) break;
      items[i] = c;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Replaces the content with `values` (any order), O(n log n). */
  reset(values: Iterable<number>): void {
    this.items.length = 0;
    for (const v of values) this.push(v);
  }
}
