/**
 * The queue's index by expiry: a binary min-heap keyed by (expiresAt, id) whose items remember
 * their own position (`heapIndex`), so any item can be removed in O(log n) when it is delivered,
 * purged or dropped. No lazy deletion, hence no stale entries: the heap holds exactly the ready
 * messages that have a finite expiry, and its size is bounded by the queue's.
 *
 * The key includes the id so the order is total: messages due at the same ms come out in id
 * order on every replica, whatever the heap's internal layout (which differs after a restore).
 */
export interface HeapItem {
  readonly id: number;
  /** ms since the epoch; must be finite while the item is in the heap. */
  expiresAt: number;
  /** Position in the heap's array, -1 when not in a heap. */
  heapIndex: number;
}

export class ExpiryHeap<T extends HeapItem> {
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  /** The item that expires first, or undefined when empty. */
  peek(): T | undefined {
    return this.items[0];
  }

  push(item: T): void {
    const index = this.items.length;
    this.items.push(item);
    item.heapIndex = index;
    this.siftUp(index);
  }

  /** Remove `item` if it is in the heap. */
  remove(item: T): void {
    const index = item.heapIndex;
    if (index < 0) return;
    item.heapIndex = -1;
    const last = this.items.pop() as T;
    if (last === item) return;
    this.items[index] = last;
    last.heapIndex = index;
    // The moved item may belong above or below its new slot.
    this.siftUp(index);
    this.siftDown(last.heapIndex);
  }

  /** Drop every item. */
  clear(): void {
    for (const item of this.items) item.heapIndex = -1;
    this.items.length = 0;
  }

  /** Replace the contents with `items` (O(n) heapify); used after the TTL changes or a restore. */
  rebuild(items: Iterable<T>): void {
    this.clear();
    for (const item of items) {
      item.heapIndex = this.items.length;
      this.items.push(item);
    }
    for (let i = (this.items.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  private siftUp(index: number): void {
    const { items } = this;
    const item = items[index] as T;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = items[parentIndex] as T;
      if (!before(item, parent)) break;
      items[index] = parent;
      parent.heapIndex = index;
      index = parentIndex;
    }
    items[index] = item;
    item.heapIndex = index;
  }

  private siftDown(index: number): void {
    const { items } = this;
    const length = items.length;
    const item = items[index] as T;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      let child = left;
      let childItem = items[left] as T;
      if (right < length) {
        const rightItem = items[right] as T;
        if (before(rightItem, childItem)) {
          child = right;
          childItem = rightItem;
        }
      }
      if (!before(childItem, item)) break;
      items[index] = childItem;
      childItem.heapIndex = index;
      index = child;
    }
    items[index] = item;
    item.heapIndex = index;
  }
}

function before(a: HeapItem, b: HeapItem): boolean {
  return a.expiresAt < b.expiresAt || (a.expiresAt === b.expiresAt && a.id < b.id);
}
