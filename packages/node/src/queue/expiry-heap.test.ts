import { describe, expect, it } from 'vitest';
import type { HeapItem } from './expiry-heap.ts';
import { ExpiryHeap } from './expiry-heap.ts';

function item(id: number, expiresAt: number): HeapItem {
  return { id, expiresAt, heapIndex: -1 };
}

function drain(heap: ExpiryHeap<HeapItem>): number[] {
  const ids: number[] = [];
  for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
    heap.remove(top);
    ids.push(top.id);
  }
  return ids;
}

describe('ExpiryHeap', () => {
  it('orders by expiry, then by id', () => {
    const heap = new ExpiryHeap<HeapItem>();
    for (const [id, at] of [
      [5, 30],
      [2, 10],
      [9, 10],
      [1, 50],
      [4, 20],
    ] as const) {
      heap.push(item(id, at));
    }
    expect(drain(heap)).toEqual([2, 9, 4, 5, 1]);
  });

  it('matches a sorted reference under random pushes and removals', () => {
    let seed = 42;
    const random = (bound: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % bound;
    };
    const heap = new ExpiryHeap<HeapItem>();
    const live: HeapItem[] = [];
    for (let step = 0; step < 5000; step++) {
      if (live.length === 0 || random(3) > 0) {
        const it = item(step, random(500));
        heap.push(it);
        live.push(it);
      } else {
        const [removed] = live.splice(random(live.length), 1);
        heap.remove(removed as HeapItem);
        expect((removed as HeapItem).heapIndex).toBe(-1);
      }
      let expected: HeapItem | undefined;
      for (const candidate of live) {
        if (
          expected === undefined ||
          candidate.expiresAt < expected.expiresAt ||
          (candidate.expiresAt === expected.expiresAt && candidate.id < expected.id)
        ) {
          expected = candidate;
        }
      }
      expect(heap.peek()).toBe(expected);
    }
    expect(heap.size).toBe(live.length);
  });

  it('rebuilds from a list and ignores removal of an item it does not hold', () => {
    const heap = new ExpiryHeap<HeapItem>();
    const items = [item(3, 3), item(1, 1), item(2, 2)];
    heap.rebuild(items);
    heap.remove(item(7, 0));
    expect(drain(heap)).toEqual([1, 2, 3]);
  });
});
