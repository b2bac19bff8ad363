import { describe, expect, it } from 'vitest';
import { HeldBackQueue } from './held-back-queue.ts';

interface Entry {
  readonly id: number;
  unwritten: Uint8Array | undefined;
}

const BYTES = new Uint8Array(1);

function held(ids: readonly number[]): { queue: HeldBackQueue<Entry>; entries: Entry[] } {
  const queue = new HeldBackQueue<Entry>();
  const entries = ids.map((id) => ({ id, unwritten: BYTES }));
  for (const entry of entries) queue.add(entry);
  return { queue, entries };
}

function release(queue: HeldBackQueue<Entry>, entry: Entry): void {
  entry.unwritten = undefined;
  queue.released();
}

function visitedIds(queue: HeldBackQueue<Entry>, stopAfter = Number.POSITIVE_INFINITY): number[] {
  const ids: number[] = [];
  queue.visit((entry) => {
    if (ids.length >= stopAfter) return false;
    ids.push(entry.id);
    return true;
  });
  return ids;
}

describe('HeldBackQueue', () => {
  it('visits the held entries in the order they were held, skipping released ones, until told to stop', () => {
    const { queue, entries } = held([5, 1, 9, 3]);
    release(queue, entries[1] as Entry);
    expect(queue.size).toBe(3);
    expect(visitedIds(queue)).toEqual([5, 9, 3]);
    expect(visitedIds(queue, 2)).toEqual([5, 9]);
    // Visiting changes nothing by itself.
    expect(visitedIds(queue)).toEqual([5, 9, 3]);
  });

  it('lets the visitor release the visited entry and later ones; the front it released is dropped', () => {
    const { queue, entries } = held([1, 2, 3, 4, 5]);
    queue.visit((entry) => {
      release(queue, entry);
      if (entry.id === 1) release(queue, entries[3] as Entry); // a later one (id 4), not visited then
      return entry.id < 2;
    });
    expect(queue.size).toBe(2);
    expect(visitedIds(queue)).toEqual([3, 5]);
    expect(queue.slots).toBe(3); // 3, the stale 4 and 5: the released front (1, 2) is gone
  });

  it('keeps at most about twice the live entries, or a few, whatever order they are released in', () => {
    const count = 20_000;
    const { queue, entries } = held(Array.from({ length: count }, (_, i) => i));
    // Release all but every 100th, from the back (the head never moves): sweeps must bound the slots.
    for (let i = count - 1; i >= 0; i--) {
      if (i % 100 !== 0) release(queue, entries[i] as Entry);
      expect(queue.slots).toBeLessThanOrEqual(2 * queue.size + 1024);
    }
    expect(queue.size).toBe(count / 100);
    expect(visitedIds(queue)).toEqual(Array.from({ length: count / 100 }, (_, i) => i * 100));
    for (const entry of entries) if (entry.unwritten !== undefined) release(queue, entry);
    expect(queue.size).toBe(0);
    expect(queue.slots).toBeLessThanOrEqual(1024);
    expect(visitedIds(queue)).toEqual([]);
    expect(queue.slots).toBe(0);
  });

  it('takes new entries after a sweep, behind the ones kept', () => {
    const { queue, entries } = held(Array.from({ length: 3000 }, (_, i) => i));
    for (const entry of entries.slice(0, 2999)) release(queue, entry);
    queue.add({ id: 7000, unwritten: BYTES });
    expect(visitedIds(queue)).toEqual([2999, 7000]);
  });
});
