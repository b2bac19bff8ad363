import { describe, expect, it } from 'vitest';
import { seededRandom as random } from '../test-support/seeded-random.ts';
import { OrderedIdIndex } from './ordered-id-index.ts';

function expectSame(index: OrderedIdIndex<string>, map: Map<number, string>): void {
  expect(index.size).toBe(map.size);
  expect([...index.entries()]).toEqual([...map.entries()]);
  expect([...index.keys()]).toEqual([...map.keys()]);
  expect([...index.values()]).toEqual([...map.values()]);
  expect(index.firstKey()).toBe(map.keys().next().value);
}

describe('OrderedIdIndex', () => {
  it('behaves as a Map under random queue-like operations (ascending inserts, head and random deletes, replays)', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rnd = random(seed);
      const index = new OrderedIdIndex<string>();
      const map = new Map<number, string>();
      let next = Math.floor(rnd() * 100);
      for (let step = 0; step < 3000; step++) {
        const r = rnd();
        if (r < 0.45) {
          next += 1 + Math.floor(rnd() * (rnd() < 0.02 ? 5000 : 3)); // log indexes: gaps, rarely wide
          index.set(next, `v${step}`);
          map.set(next, `v${step}`);
        } else if (r < 0.7) {
          const first = map.keys().next().value;
          if (first !== undefined) expect(index.delete(first)).toBe(map.delete(first));
        } else if (r < 0.9) {
          const id = Math.max(0, next - Math.floor(rnd() * 40));
          expect(index.delete(id)).toBe(map.delete(id));
        } else if (r < 0.93) {
          // an id at or below the newest: replaced in place, or (absent) appended last, as a Map does
          const id = Math.max(0, next - Math.floor(rnd() * 40));
          index.set(id, `r${step}`);
          map.set(id, `r${step}`);
        } else if (r < 0.935) {
          index.clear();
          map.clear();
        }
        const probe = Math.max(0, next - Math.floor(rnd() * 60));
        expect(index.get(probe)).toBe(map.get(probe));
        expect(index.has(probe)).toBe(map.has(probe));
        if (step % 97 === 0) expectSame(index, map);
      }
      expectSame(index, map);
    }
  });

  it('keeps a long run with one old entry held from costing a slot per id (falls back to a Map)', () => {
    const index = new OrderedIdIndex<string>();
    index.set(1, 'held');
    for (let id = 2; id < 200_000; id++) {
      index.set(id, 'x');
      index.delete(id);
    }
    expect(index.size).toBe(1);
    expect(index.get(1)).toBe('held');
    expect(index.firstKey()).toBe(1);
    index.set(300_000, 'y');
    expect([...index.keys()]).toEqual([1, 300_000]);
    expect(index.delete(1)).toBe(true);
    expect(index.delete(300_000)).toBe(true);
    expect(index.size).toBe(0);
    expect(index.firstKey()).toBeUndefined();
  });

  it('drains from the head with O(1) first keys, as a FIFO queue does', () => {
    const index = new OrderedIdIndex<number>();
    for (let id = 10; id < 20_010; id += 2) index.set(id, id);
    for (let id = 10; id < 20_010; id += 2) {
      expect(index.firstKey()).toBe(id);
      expect(index.delete(id)).toBe(true);
      expect(index.delete(id)).toBe(false);
    }
    expect(index.size).toBe(0);
  });

  it('sees deletes and appends made while it is iterated, as a Map iterator does', () => {
    const index = new OrderedIdIndex<string>();
    const map = new Map<number, string>();
    for (const id of [3, 4, 6, 9]) {
      index.set(id, `${id}`);
      map.set(id, `${id}`);
    }
    const seen: number[] = [];
    const mapSeen: number[] = [];
    for (const [target, sink] of [
      [index, seen],
      [map, mapSeen],
    ] as const) {
      for (const id of target.keys()) {
        sink.push(id);
        if (id === 4) {
          target.delete(6);
          target.delete(3);
          target.set(12, '12');
        }
        if (id === 9) target.set(2, '2'); // below the newest: appended last
      }
    }
    expect(seen).toEqual(mapSeen);
  });

  it('iterates as a Map does across a fall-back to a Map, deletes and re-inserts included', () => {
    const rnd = random(7);
    for (let round = 0; round < 300; round++) {
      const index = new OrderedIdIndex<string>();
      const map = new Map<number, string>();
      for (let id = 1; id <= 8; id++) {
        index.set(id * 2, `${id}`);
        map.set(id * 2, `${id}`);
      }
      const ops: [number, number][] = [];
      for (let i = 0; i < 6; i++) ops.push([Math.floor(rnd() * 6), 1 + Math.floor(rnd() * 20)]);
      const run = (target: Map<number, string> | OrderedIdIndex<string>): number[] => {
        const seen: number[] = [];
        let i = 0;
        for (const id of target.keys()) {
          seen.push(id);
          const [when, arg] = ops[i++ % ops.length] as [number, number];
          if (when === 0)
            target.set(arg, 's'); // often below the newest: the fall-back
          else if (when === 1) target.delete(arg);
          else if (when === 2) target.set(20 + arg, 'a');
          if (seen.length > 100) break;
        }
        return seen;
      };
      expect(run(index)).toEqual(run(map));
      expect([...index.entries()]).toEqual([...map.entries()]);
    }
  });

  it('refuses ids that are not log indexes and undefined values', () => {
    const index = new OrderedIdIndex<string>();
    expect(() => index.set(-1, 'x')).toThrow(RangeError);
    expect(() => index.set(1.5, 'x')).toThrow(RangeError);
    expect(() => index.set(Number.NaN, 'x')).toThrow(RangeError);
    expect(() => index.set(1, undefined as unknown as string)).toThrow(TypeError);
    expect(index.size).toBe(0);
  });
});
