import { describe, expect, it } from 'vitest';
import type { GroupMembers } from './quorum-critical.ts';
import {
  belowQuorumPlusOne,
  groupLabel,
  isUnderReplicated,
  onlineMembers,
  quorumCriticalGroups,
  quorumOf,
  quorumPlusOne,
} from './quorum-critical.ts';

function queue(name: string, members: string[], online: string[]): GroupMembers {
  return { group: { kind: 'queue', vhost: '/', name }, members, online };
}

function metadata(members: string[], online: string[]): GroupMembers {
  return { group: { kind: 'metadata' }, members, online };
}

const names = (groups: readonly GroupMembers[]): string[] =>
  groups.map((g) => (g.group.kind === 'metadata' ? 'metadata' : g.group.name));

describe('quorumOf / quorumPlusOne', () => {
  it('is a majority, and one more where the group can spare one', () => {
    expect([1, 2, 3, 4, 5, 7].map(quorumOf)).toEqual([1, 2, 2, 3, 3, 4]);
    // 1 and 2 voters can never lose one and keep a quorum: every member is the best they get.
    expect([1, 2, 3, 4, 5, 7].map(quorumPlusOne)).toEqual([1, 2, 3, 4, 4, 5]);
  });
});

describe('quorumCriticalGroups', () => {
  it('reports nothing when every member of every group is online', () => {
    const groups = [
      queue('q1', ['a', 'b', 'c'], ['a', 'b', 'c']),
      metadata(['a', 'b', 'c'], ['a', 'b', 'c']),
    ];
    expect(quorumCriticalGroups('a', groups)).toEqual([]);
  });

  it('reports the queues and the metadata group that one stopped node leaves at the edge', () => {
    const online = ['a', 'b'];
    const groups = [
      queue('q-abc', ['a', 'b', 'c'], online),
      queue('q-bcd', ['b', 'c', 'd'], online), // a is not a member
      queue('q-abcde', ['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'd', 'e']), // 3 of 5 remain
      metadata(['a', 'b', 'c'], online),
    ];
    expect(names(quorumCriticalGroups('a', groups))).toEqual(['q-abc', 'metadata']);
    expect(names(quorumCriticalGroups('d', groups))).toEqual(['q-bcd']);
  });

  it('counts a group of one or two voters critical for each member', () => {
    const groups = [queue('single', ['a'], ['a', 'b']), queue('pair', ['a', 'b'], ['a', 'b'])];
    expect(names(quorumCriticalGroups('a', groups))).toEqual(['single', 'pair']);
    expect(names(quorumCriticalGroups('b', groups))).toEqual(['pair']);
  });

  it('reports a group already without a quorum for its members', () => {
    const groups = [queue('lost', ['a', 'b', 'c'], ['a'])];
    expect(names(quorumCriticalGroups('a', groups))).toEqual(['lost']);
    expect(names(quorumCriticalGroups('b', groups))).toEqual(['lost']);
  });

  it('ignores online nodes that are not members and duplicate ids', () => {
    const groups = [queue('q', ['a', 'b', 'c', 'c'], ['a', 'b', 'x', 'y', 'b'])];
    expect(onlineMembers(groups[0] as GroupMembers)).toBe(2);
    expect(names(quorumCriticalGroups('a', groups))).toEqual(['q']);
  });
});

describe('belowQuorumPlusOne', () => {
  it('lists groups that cannot spare a node yet', () => {
    const groups = [
      queue('healthy', ['a', 'b', 'c'], ['a', 'b', 'c']),
      queue('one-down', ['a', 'b', 'c'], ['a', 'b']),
      queue('five-one-down', ['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'c', 'd']),
      queue('five-two-down', ['a', 'b', 'c', 'd', 'e'], ['a', 'b', 'c']),
      queue('single', ['a'], ['a']),
      queue('pair-one-down', ['a', 'b'], ['a']),
      metadata(['a', 'b', 'c'], ['b', 'c']),
    ];
    expect(names(belowQuorumPlusOne(groups))).toEqual([
      'one-down',
      'five-two-down',
      'pair-one-down',
      'metadata',
    ]);
  });
});

describe('isUnderReplicated', () => {
  it('is true with a member offline or fewer members than the target', () => {
    expect(isUnderReplicated({ members: ['a', 'b', 'c'], online: ['a', 'b', 'c'] }, 3)).toBe(false);
    expect(isUnderReplicated({ members: ['a', 'b', 'c'], online: ['a', 'b'] }, 3)).toBe(true);
    expect(isUnderReplicated({ members: ['a', 'b'], online: ['a', 'b'] }, 3)).toBe(true);
    expect(isUnderReplicated({ members: ['a'], online: ['a'] }, 1)).toBe(false);
  });
});

describe('groupLabel', () => {
  it('names queues and the metadata group', () => {
    expect(groupLabel({ kind: 'queue', vhost: '/', name: 'q' })).toBe("queue 'q' in vhost '/'");
    expect(groupLabel({ kind: 'metadata' })).toBe('the metadata group');
  });
});
