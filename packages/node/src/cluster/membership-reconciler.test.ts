import type { ConfState, MemberProgress } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { MAX_METADATA_VOTERS, nextMembershipChange } from './membership-reconciler.ts';

function conf(voters: string[], learners: string[] = []): ConfState {
  return { voters, votersOutgoing: [], learners, learnersNext: [], autoLeave: false };
}

function progress(entries: Record<string, [match: number, active: boolean]>): Map<string, MemberProgress> {
  return new Map(Object.entries(entries).map(([id, [match, active]]) => [id, { match, active }]));
}

const members = (...ids: string[]) => ids.map((id) => ({ id }));

describe('nextMembershipChange', () => {
  it('adds a new member as a learner first', () => {
    const change = nextMembershipChange({
      members: members('a', 'b'),
      conf: conf(['a']),
      progress: progress({ a: [10, true] }),
      appliedIndex: 10,
      maxVoters: MAX_METADATA_VOTERS,
    });
    expect(change).toEqual({ type: 'addLearner', nodeId: 'b' });
  });

  it('promotes a learner only once it is caught up and active', () => {
    const input = { members: members('a', 'b'), conf: conf(['a'], ['b']), appliedIndex: 10, maxVoters: 5 };
    expect(nextMembershipChange({ ...input, progress: progress({ a: [10, true], b: [9, true] }) })).toBe(
      undefined,
    );
    expect(nextMembershipChange({ ...input, progress: progress({ a: [10, true], b: [10, false] }) })).toBe(
      undefined,
    );
    expect(nextMembershipChange({ ...input, progress: progress({ a: [10, true], b: [10, true] }) })).toEqual({
      type: 'addVoter',
      nodeId: 'b',
    });
  });

  it('keeps members beyond the voter bound as learners, oldest members voting', () => {
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    const all = Object.fromEntries(ids.map((id) => [id, [10, true] as [number, boolean]]));
    const change = nextMembershipChange({
      members: members(...ids),
      conf: conf(['a', 'b', 'c', 'd', 'e'], ['f']),
      progress: progress(all),
      appliedIndex: 10,
      maxVoters: MAX_METADATA_VOTERS,
    });
    expect(change).toBe(undefined);
    const promote = nextMembershipChange({
      members: members(...ids),
      conf: conf(['a', 'b', 'c', 'd'], ['f', 'e']),
      progress: progress(all),
      appliedIndex: 10,
      maxVoters: MAX_METADATA_VOTERS,
    });
    expect(promote).toEqual({ type: 'addVoter', nodeId: 'e' });
  });

  it('removes the replica of a forgotten node, learners before voters, never the last voter', () => {
    const base = { progress: progress({}), appliedIndex: 10, maxVoters: 5 };
    expect(nextMembershipChange({ ...base, members: members('a'), conf: conf(['a', 'b'], ['c']) })).toEqual({
      type: 'remove',
      nodeId: 'c',
    });
    expect(nextMembershipChange({ ...base, members: members('a'), conf: conf(['a', 'b']) })).toEqual({
      type: 'remove',
      nodeId: 'b',
    });
    expect(nextMembershipChange({ ...base, members: members('z'), conf: conf(['a']) })).toEqual({
      type: 'addLearner',
      nodeId: 'z',
    });
  });

  it('changes nothing when the group matches the members', () => {
    expect(
      nextMembershipChange({
        members: members('a', 'b', 'c'),
        conf: conf(['a', 'b', 'c']),
        progress: progress({ a: [5, true], b: [5, true], c: [5, true] }),
        appliedIndex: 5,
        maxVoters: 5,
      }),
    ).toBe(undefined);
  });
});
