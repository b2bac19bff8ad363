import { describe, expect, it } from 'vitest';
import type { VoterProgress } from './handover-target.ts';
import { handOverTarget } from './handover-target.ts';

function progress(entries: Record<string, [match: number, active: boolean]>): Map<string, VoterProgress> {
  return new Map(Object.entries(entries).map(([id, [match, active]]) => [id, { match, active }]));
}

describe('handOverTarget', () => {
  const voters = ['a', 'b', 'c', 'd'];
  const pr = progress({ a: [130, true], b: [90, true], c: [100, true], d: [120, false] });

  it('picks the active voter furthest along, never itself', () => {
    expect(handOverTarget({ self: 'a', voters, progress: pr, eligible: () => true })).toBe('c');
  });

  it('skips voters that may not lead (drained, or leaving the group)', () => {
    expect(handOverTarget({ self: 'a', voters, progress: pr, eligible: (id) => id !== 'c' })).toBe('b');
  });

  it('gives ties to the first voter and answers undefined when nobody answers', () => {
    const tie = progress({ b: [5, true], c: [5, true] });
    expect(handOverTarget({ self: 'a', voters, progress: tie, eligible: () => true })).toBe('b');
    const silent = progress({ b: [5, false], c: [9, false] });
    expect(handOverTarget({ self: 'a', voters, progress: silent, eligible: () => true })).toBeUndefined();
    expect(handOverTarget({ self: 'a', voters: ['a'], progress: pr, eligible: () => true })).toBeUndefined();
  });
});
