import { describe, expect, it } from 'vitest';
import { NumberMinHeap } from './number-min-heap.ts';

describe('NumberMinHeap', () => {
  it('pops in ascending order, duplicates included', () => {
    const heap = new NumberMinHeap();
    const values = [5, 3, 9, 1, 3, 7, 0, 12, 8, 2];
    for (const v of values) heap.push(v);
    expect(heap.size).toBe(values.length);
    expect(heap.peek()).toBe(0);
    const out: number[] = [];
    for (let v = heap.pop(); v !== undefined; v = heap.pop()) out.push(v);
    expect(out).toEqual(values.slice().sort((a, b) => a - b));
    expect(heap.peek()).toBeUndefined();
  });

  it('interleaves pushes and pops, and resets', () => {
    const heap = new NumberMinHeap();
    heap.push(4);
    heap.push(2);
    expect(heap.pop()).toBe(2);
    heap.push(1);
    heap.push(3);
    expect([heap.pop(), heap.pop(), heap.pop(), heap.pop()]).toEqual([1, 3, 4, undefined]);
    heap.reset([9, 6, 7]);
    expect([heap.size, heap.pop()]).toEqual([3, 6]);
  });
});
