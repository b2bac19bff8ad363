import { describe, expect, it } from 'vitest';
import { SettledMemory } from './settled-memory.ts';

describe('SettledMemory', () => {
  it('remembers the highest delivery count settled for an id', () => {
    const m = new SettledMemory(8);
    expect(m.get(1)).toBeUndefined();
    m.remember(1, 0);
    expect(m.get(1)).toBe(0);
    m.remember(1, 2);
    expect(m.get(1)).toBe(2);
    m.remember(1, 1); // a lower count never replaces a higher one
    expect(m.get(1)).toBe(2);
  });

  it('keeps at least the latest half of its capacity and at most its capacity, forgetting the oldest first', () => {
    const m = new SettledMemory(8);
    for (let id = 1; id <= 100; id++) {
      m.remember(id, 0);
      expect(m.size).toBeLessThanOrEqual(8);
      expect(m.size).toBeGreaterThanOrEqual(Math.min(id, 4));
      for (let back = 0; back < 4 && id - back >= 1; back++) expect(m.get(id - back)).toBe(0);
    }
    expect(m.get(1)).toBeUndefined();
    expect(m.get(90)).toBeUndefined();
  });

  it('a count raised in the young generation wins over the old one, and survives a turnover', () => {
    const m = new SettledMemory(4);
    m.remember(1, 0);
    m.remember(2, 0); // young full: 1 and 2 become old on the next new id
    m.remember(3, 0);
    m.remember(1, 5); // raised: now young
    expect(m.get(1)).toBe(5);
    m.remember(4, 0); // young (3, 1) full → old; the old (1@0, 2) dropped
    expect(m.get(1)).toBe(5);
    expect(m.get(2)).toBeUndefined();
  });

  it('refuses a capacity it cannot split in two generations', () => {
    expect(() => new SettledMemory(1)).toThrow(RangeError);
    expect(() => new SettledMemory(2.5)).toThrow(RangeError);
  });
});
