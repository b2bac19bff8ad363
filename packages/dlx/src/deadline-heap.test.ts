import { describe, expect, it } from 'vitest';
import { DeadlineHeap } from './deadline-heap.ts';

/** A small deterministic PRNG (an LCG), so a failure replays. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 4294967296;
  };
}

describe('DeadlineHeap', () => {
  it('pops pairs by time, then id, under random pushes and pops interleaved', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const random = prng(seed);
      const heap = new DeadlineHeap();
      const model: [number, number][] = [];
      for (let step = 0; step < 2_000; step++) {
        if (random() < 0.6 || model.length === 0) {
          // Few distinct times, so ties on time are common and the id order is exercised.
          const pair: [number, number] = [Math.floor(random() * 20), Math.floor(random() * 1_000)];
          heap.push(pair[0], pair[1]);
          model.push(pair);
        } else {
          model.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
          const [time, id] = model.shift() as [number, number];
          expect([heap.peekTime(), heap.peekId()]).toEqual([time, id]);
          heap.pop();
        }
        expect(heap.size).toBe(model.length);
      }
    }
  });

  it('is empty after popping everything, and after clear', () => {
    const heap = new DeadlineHeap();
    heap.pop();
    expect(heap.peekTime()).toBeUndefined();
    heap.push(5, 1);
    heap.push(3, 2);
    heap.pop();
    heap.pop();
    expect(heap.size).toBe(0);
    expect(heap.peekId()).toBeUndefined();
    heap.push(1, 1);
    heap.clear();
    expect(heap.size).toBe(0);
  });
});
