import type { ConfState, MemberProgress } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import type { RaftReplicaView } from './metrics-source.ts';
import { raftFigures } from './queue-figures.ts';

function view(
  role: RaftReplicaView['role'],
  voters: string[],
  progress: [string, MemberProgress][],
  commitIndex = 100,
): RaftReplicaView {
  const membership: ConfState = {
    voters,
    votersOutgoing: [],
    learners: [],
    learnersNext: [],
    autoLeave: false,
  };
  return {
    term: 7,
    commitIndex,
    appliedIndex: 98,
    lastWrittenIndex: 101,
    snapshotIndex: 40,
    commitLatencyMs: 3,
    elections: 2,
    preVotes: 3,
    electionsWon: 1,
    role,
    membership,
    progress: () => new Map(progress),
  };
}

const NAMES: Record<string, string> = { id1: 'n1', id2: 'n2', id3: 'n3' };
const nameOf = (id: string): string => NAMES[id] ?? id;

describe('raftFigures', () => {
  it("gives the leader each member's lag behind its commit index, by node name", () => {
    const figures = raftFigures(
      view(
        'leader',
        ['id1', 'id2', 'id3'],
        [
          ['id1', { match: 100, active: true }],
          ['id2', { match: 60, active: true }],
          ['id3', { match: 120, active: false }],
        ],
      ),
      nameOf,
    );
    expect(figures).toEqual({
      term: 7,
      commitIndex: 100,
      appliedIndex: 98,
      lastWrittenIndex: 101,
      snapshotIndex: 40,
      commitLatencyMs: 3,
      elections: 2,
      preVotes: 3,
      electionsWon: 1,
      replicas: [
        { node: 'n1', match: 100, commitLag: 0, online: true },
        { node: 'n2', match: 60, commitLag: 40, online: true },
        // Ahead of the commit index (written, not yet committed): no lag, never negative.
        { node: 'n3', match: 120, commitLag: 0, online: false },
      ],
    });
  });

  it('gives no lag on a follower, nor for a group of one', () => {
    const progress: [string, MemberProgress][] = [['id1', { match: 1, active: true }]];
    expect(raftFigures(view('follower', ['id1', 'id2', 'id3'], progress), nameOf).replicas).toEqual([]);
    expect(raftFigures(view('leader', ['id1'], progress), nameOf).replicas).toEqual([]);
  });
});
