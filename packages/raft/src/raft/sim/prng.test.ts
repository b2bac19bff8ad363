import { describe, expect, it } from 'vitest';
import { Prng } from './prng.ts';

describe('Prng', () => {
  it('is a pure function of its seed', () => {
    const a = new Prng(99);
    const b = new Prng(99);
    const drawsA = Array.from({ length: 50 }, () => a.nextU32());
    const drawsB = Array.from({ length: 50 }, () => b.nextU32());
    expect(drawsA).toEqual(drawsB);
    expect(new Prng(100).nextU32()).not.toBe(new Prng(99).nextU32());
  });

  it('draws in range and roughly uniformly', () => {
    const prng = new Prng(1);
    const counts = new Array<number>(10).fill(0);
    for (let i = 0; i < 100_000; i++) {
      const value = prng.nextInt(10);
      expect(value).toBeGreaterThanOrEqual(0);
      expect(value).toBeLessThan(10);
      counts[value] = (counts[value] ?? 0) + 1;
    }
    for (const count of counts) expect(Math.abs(count - 10_000)).toBeLessThan(600);
  });

  it('forks independent streams', () => {
    const parent = new Prng(5);
    const child = parent.fork();
    expect(child.nextU32()).not.toBe(parent.nextU32());
  });
});
