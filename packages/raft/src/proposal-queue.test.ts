import { describe, expect, it } from 'vitest';
import { ProposalQueue } from './proposal-queue.ts';

describe('ProposalQueue', () => {
  it('is first in, first out across compactions', () => {
    const q = new ProposalQueue<number>();
    const out: number[] = [];
    for (let i = 0; i < 5000; i++) {
      q.push(i);
      if (i % 3 !== 0) out.push(q.shift() as number);
    }
    while (q.size > 0) out.push(q.shift() as number);
    expect(out).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(q.shift()).toBeUndefined();
    expect(q.peek()).toBeUndefined();
  });

  it('peeks without removing, and drains what is left in order', () => {
    const q = new ProposalQueue<string>();
    for (const s of ['a', 'b', 'c', 'd']) q.push(s);
    expect(q.shift()).toBe('a');
    expect(q.peek()).toBe('b');
    expect(q.size).toBe(3);
    expect(q.drain()).toEqual(['b', 'c', 'd']);
    expect(q.size).toBe(0);
  });

  it('pops the newest items while they match, never past the oldest live one', () => {
    const q = new ProposalQueue<number>();
    for (let i = 1; i <= 6; i++) q.push(i);
    q.shift();
    expect(q.popNewestWhile((n) => n >= 4)).toEqual([4, 5, 6]);
    expect(q.popNewestWhile(() => true)).toEqual([2, 3]);
    expect(q.size).toBe(0);
  });
});
