import { describe, expect, it } from 'vitest';
import {
  jointCommittedIndex,
  jointVoteResult,
  majorityCommittedIndex,
  majorityVoteResult,
  VoteResult,
} from './quorum.ts';
import { Prng } from './sim/prng.ts';

function acked(map: Record<string, number>): (id: string) => number {
  return (id) => map[id] ?? 0;
}

/** Brute force: the largest index acknowledged by a strict majority. */
function bruteCommitted(voters: readonly string[], map: Record<string, number>): number {
  if (voters.length === 0) return Number.POSITIVE_INFINITY;
  const candidates = [0, ...voters.map((id) => map[id] ?? 0)];
  let best = 0;
  for (const index of candidates) {
    const count = voters.filter((id) => (map[id] ?? 0) >= index).length;
    if (count * 2 > voters.length && index > best) best = index;
  }
  return best;
}

describe('majority quorum', () => {
  it('commits what a majority acknowledged', () => {
    expect(majorityCommittedIndex(['a', 'b', 'c'], acked({ a: 5, b: 3, c: 1 }))).toBe(3);
    expect(majorityCommittedIndex(['a', 'b', 'c', 'd'], acked({ a: 5, b: 4, c: 3, d: 1 }))).toBe(3);
    expect(majorityCommittedIndex(['a'], acked({ a: 7 }))).toBe(7);
    expect(majorityCommittedIndex([], acked({}))).toBe(Number.POSITIVE_INFINITY);
  });

  it('agrees with brute force on random configurations', () => {
    const prng = new Prng(42);
    for (let trial = 0; trial < 500; trial++) {
      const n = prng.between(1, 9);
      const voters = Array.from({ length: n }, (_, i) => `v${i}`);
      const map: Record<string, number> = {};
      for (const id of voters) if (prng.chance(0.8)) map[id] = prng.nextInt(20);
      expect(majorityCommittedIndex(voters, acked(map))).toBe(bruteCommitted(voters, map));
    }
  });

  it('decides votes: won at a majority of grants, lost once a majority is impossible', () => {
    const voters = ['a', 'b', 'c', 'd', 'e'];
    expect(majorityVoteResult(voters, new Map([['a', true]]))).toBe(VoteResult.Pending);
    expect(
      majorityVoteResult(
        voters,
        new Map([
          ['a', true],
          ['b', true],
          ['c', true],
        ]),
      ),
    ).toBe(VoteResult.Won);
    expect(
      majorityVoteResult(
        voters,
        new Map([
          ['a', false],
          ['b', false],
          ['c', false],
        ]),
      ),
    ).toBe(VoteResult.Lost);
    expect(
      majorityVoteResult(
        voters,
        new Map([
          ['x', true],
          ['y', true],
          ['z', true],
        ]),
      ),
    ).toBe(VoteResult.Pending);
    expect(majorityVoteResult([], new Map())).toBe(VoteResult.Won);
  });
});

describe('joint quorum', () => {
  const joint = { incoming: ['a', 'b', 'c'], outgoing: ['c', 'd', 'e'] };

  it('commits only what both halves committed', () => {
    expect(jointCommittedIndex(joint, acked({ a: 9, b: 9, c: 2, d: 2, e: 1 }))).toBe(2);
    expect(jointCommittedIndex(joint, acked({ a: 9, b: 9, c: 9, d: 1, e: 1 }))).toBe(1);
    expect(jointCommittedIndex(joint, acked({ a: 9, b: 1, c: 9, d: 8, e: 1 }))).toBe(8);
    expect(jointCommittedIndex({ incoming: ['a'], outgoing: [] }, acked({ a: 4 }))).toBe(4);
  });

  it('wins a vote only when both halves win, loses when either loses', () => {
    const grant = (...ids: string[]): Map<string, boolean> => new Map(ids.map((id) => [id, true]));
    expect(jointVoteResult(joint, grant('a', 'b'))).toBe(VoteResult.Pending);
    expect(jointVoteResult(joint, grant('a', 'b', 'c', 'd'))).toBe(VoteResult.Won);
    const lost = new Map([
      ['d', false],
      ['e', false],
      ['a', true],
      ['b', true],
    ]);
    expect(jointVoteResult(joint, lost)).toBe(VoteResult.Lost);
  });
});
