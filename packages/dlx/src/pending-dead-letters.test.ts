import { describe, expect, it } from 'vitest';
import type { PendingDeadLetter } from './pending-dead-letters.ts';
import { PendingDeadLetters } from './pending-dead-letters.ts';

function entry(id: number, size = 10): PendingDeadLetter {
  return { id, reason: 'expired', size, deadLetteredAt: 1_000 + id };
}

describe('PendingDeadLetters', () => {
  it('keeps its own count and bytes', () => {
    const p = new PendingDeadLetters({ maxMessages: 10, maxBytes: 1_000 });
    p.add(entry(1, 100));
    p.add(entry(2, 50));
    expect([p.count, p.bytes]).toEqual([2, 150]);
    expect(p.settle(1)).toEqual(entry(1, 100));
    expect([p.count, p.bytes]).toEqual([1, 50]);
    expect(p.has(1)).toBe(false);
    expect(p.get(2)).toEqual(entry(2, 50));
  });

  it('is full at the message cap: publishes are nacked until a settle frees room', () => {
    const p = new PendingDeadLetters({ maxMessages: 2, maxBytes: 1_000_000 });
    p.add(entry(1));
    expect(p.isFull()).toBe(false);
    p.add(entry(2));
    expect(p.isFull()).toBe(true);
    // Dead-lettering never drops: more may become pending past the cap.
    p.add(entry(3));
    expect(p.count).toBe(3);
    p.settle(1);
    expect(p.isFull()).toBe(true);
    p.settle(2);
    expect(p.isFull()).toBe(false);
  });

  it('is full at the byte cap', () => {
    const p = new PendingDeadLetters({ maxMessages: 100, maxBytes: 100 });
    p.add(entry(1, 60));
    expect(p.isFull()).toBe(false);
    p.add(entry(2, 40));
    expect(p.isFull()).toBe(true);
    p.settle(2);
    expect(p.isFull()).toBe(false);
  });

  it('settling twice is a no-op (the settle command is idempotent); adding twice is a bug', () => {
    const p = new PendingDeadLetters();
    p.add(entry(1));
    expect(p.settle(1)).toBeDefined();
    expect(p.settle(1)).toBeUndefined();
    expect(p.bytes).toBe(0);
    p.add(entry(2));
    expect(() => p.add(entry(2))).toThrow(expect.objectContaining({ code: 'DLX_HAND_OFF_STATE' }));
  });

  it('lowestId follows adds in any order and settles', () => {
    const p = new PendingDeadLetters();
    expect(p.lowestId()).toBeUndefined();
    for (const id of [50, 20, 90, 10, 70]) p.add(entry(id));
    expect(p.lowestId()).toBe(10);
    p.settle(10);
    p.settle(50);
    expect(p.lowestId()).toBe(20);
    p.settle(20);
    expect(p.lowestId()).toBe(70);
    p.add(entry(5));
    expect(p.lowestId()).toBe(5);
  });

  it('lowestId stays right across many adds and settles (the lazy heap is compacted)', () => {
    const p = new PendingDeadLetters({ maxMessages: 1_000_000, maxBytes: 1_000_000_000 });
    let next = 1;
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 5; i++) p.add(entry(next++));
      // Settle all but the newest, out of order.
      const ids = [...p.values()].map((e) => e.id).slice(0, -1);
      for (const id of ids.reverse()) p.settle(id);
      expect(p.lowestId()).toBe(next - 1);
    }
    expect(p.count).toBe(1);
  });

  it('values() lists pending messages in the order they were added', () => {
    const p = new PendingDeadLetters();
    for (const id of [3, 1, 2]) p.add(entry(id));
    expect([...p.values()].map((e) => e.id)).toEqual([3, 1, 2]);
  });

  it('snapshots to plain data that survives JSON', () => {
    const p = new PendingDeadLetters({ maxMessages: 5, maxBytes: 100 });
    for (const id of [4, 2, 9]) p.add(entry(id, id));
    p.settle(2);
    const restored = PendingDeadLetters.fromSnapshot(JSON.parse(JSON.stringify(p.toSnapshot())), p.limits);
    expect(restored.toSnapshot()).toEqual(p.toSnapshot());
    expect([restored.count, restored.bytes, restored.lowestId()]).toEqual([2, 13, 4]);
    expect(() => PendingDeadLetters.fromSnapshot({ version: 1, entries: [entry(1), entry(1)] })).toThrow(
      expect.objectContaining({ code: 'DLX_SNAPSHOT_INVALID' }),
    );
  });

  it('validates limits and entries', () => {
    expect(() => new PendingDeadLetters({ maxMessages: 0, maxBytes: 1 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_CONFIG' }),
    );
    const p = new PendingDeadLetters();
    expect(() => p.setLimits({ maxMessages: 1, maxBytes: 0.5 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_CONFIG' }),
    );
    expect(() => p.add({ ...entry(1), size: -1 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_INPUT' }),
    );
    expect(() => p.add({ ...entry(1), reason: 'gone' as never })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_INPUT' }),
    );
  });
});
