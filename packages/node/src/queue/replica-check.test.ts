import { describe, expect, it } from 'vitest';
import type {
  ReplicaCheck,
  ReplicaContentView,
  ReplicaRaftPosition,
  ReplicaReport,
} from './replica-check.ts';
import { liveIdsDigest, queueVerdict, replicaReport } from './replica-check.ts';
import type { QueueCounts } from './types.ts';

const FOLLOWER: ReplicaRaftPosition = { role: 'follower', term: 3, appliedIndex: 20, commitIndex: 21 };

function counts(ready: number, unacked = 0, deadLetterPending = 0): QueueCounts {
  return { ready, unacked, readyBytes: 0, consumers: 0, deadLetterPending, deadLetterPendingBytes: 0 };
}

/** A replica holding `ids`, with bodies for all but `lost`. */
function view(ids: number[], queueCounts: QueueCounts, lost: number[] = []): ReplicaContentView {
  return { counts: queueCounts, liveIds: () => ids, hasBody: (id) => !lost.includes(id) };
}

const names = (id: string): string => id.replace('id-', 'styx-');

describe('liveIdsDigest', () => {
  it('depends on the set of ids, not their order', () => {
    expect(liveIdsDigest([3, 1, 2])).toBe(liveIdsDigest([1, 2, 3]));
    expect(liveIdsDigest([1, 2, 3])).toMatch(/^[0-9a-f]{16}$/);
  });

  it('tells different sets apart, the empty set included', () => {
    const digests = new Set([[], [1], [2], [1, 2], [1, 2, 3], [2 ** 40, 7]].map((ids) => liveIdsDigest(ids)));
    expect(digests.size).toBe(6);
  });
});

describe('replicaReport', () => {
  it('counts ready + unacked + pending dead-letters and digests the live ids', () => {
    const report = replicaReport('id-1', FOLLOWER, view([5, 6, 7, 9], counts(2, 1, 1)));
    expect(report).toEqual({
      nodeId: 'id-1',
      online: true,
      ...FOLLOWER,
      messages: 4,
      liveIds: 4,
      digest: liveIdsDigest([5, 6, 7, 9]),
      missingBodies: 0,
      missingBodyIds: [],
    });
  });

  it('lists the live messages whose body is missing, the first five in id order', () => {
    const ids = [1, 2, 3, 4, 5, 6, 7, 8];
    const report = replicaReport('id-1', FOLLOWER, view(ids, counts(8), [8, 7, 6, 5, 3, 1]));
    expect(report.missingBodies).toBe(6);
    expect(report.missingBodyIds).toEqual([1, 3, 5, 6, 7]);
  });
});

describe('queueVerdict', () => {
  const healthy = (nodeId: string, overrides: Partial<ReplicaReport> = {}): ReplicaReport => ({
    ...replicaReport(nodeId, FOLLOWER, view([11, 12], counts(2))),
    ...overrides,
  });

  it('is ok when every replica answered, holds its bodies and agrees with the others', () => {
    const replicas = [healthy('id-1', { role: 'leader' }), healthy('id-2'), healthy('id-3')];
    expect(queueVerdict(replicas, names)).toEqual({ status: 'ok', ok: true, problems: [] });
  });

  it('is not compared (not ok, no problem) when a replica is at an index no other replica is at', () => {
    // The replica behind cannot be compared: a shorter log prefix may hold other messages.
    const lagging = replicaReport('id-3', { ...FOLLOWER, appliedIndex: 18 }, view([11], counts(1)));
    const replicas = [healthy('id-1', { role: 'leader' }), healthy('id-2'), lagging];
    expect(queueVerdict(replicas, names)).toEqual({
      status: 'not_compared',
      ok: false,
      problems: [],
      notCompared: {
        reason:
          'the replicas were not at one applied index (styx-1 at 20, styx-2 at 20, styx-3 at 18): ' +
          'styx-3 could not be compared with any other replica',
        appliedIndexes: [
          { nodeId: 'id-1', appliedIndex: 20 },
          { nodeId: 'id-2', appliedIndex: 20 },
          { nodeId: 'id-3', appliedIndex: 18 },
        ],
      },
    });
    // Every replica at an index of its own: none compared.
    const apart = [healthy('id-1', { appliedIndex: 21 }), healthy('id-2'), lagging];
    expect(queueVerdict(apart, names).notCompared?.reason).toMatch(/: styx-1, styx-2, styx-3 could not be/);
    // One replica alone (a node alone's queue: index unknown) has nothing to be compared with.
    expect(queueVerdict([healthy('id-1', { appliedIndex: null })], names).status).toBe('ok');
  });

  it('fails on a replica missing bodies, naming it and the first ids', () => {
    const missing = replicaReport('id-2', FOLLOWER, view([11, 12], counts(2), [12]));
    expect(queueVerdict([healthy('id-1'), missing], names)).toEqual({
      status: 'failed',
      ok: false,
      problems: ['styx-2 holds 1 live message(s) whose body is missing from its body store (first ids: 12)'],
    });
  });

  it('fails when replicas at the same applied index disagree on count or digest', () => {
    const other = replicaReport('id-2', FOLLOWER, view([11, 13], counts(2)));
    const fewer = replicaReport('id-3', FOLLOWER, view([11], counts(1)));
    const verdict = queueVerdict([healthy('id-1'), other, fewer], names);
    expect(verdict.ok).toBe(false);
    expect(verdict.problems).toEqual([
      'replicas at applied index 20 disagree on their messages: ' +
        `styx-1 has 2 (2 ids, digest ${liveIdsDigest([11, 12])}); ` +
        `styx-2 has 2 (2 ids, digest ${liveIdsDigest([11, 13])}); ` +
        `styx-3 has 1 (1 ids, digest ${liveIdsDigest([11])})`,
    ]);
  });

  it('fails when replicas at the same applied index disagree on their dedupe window (a replicated parameter)', () => {
    const verdict = queueVerdict(
      [healthy('id-1', { dedupeWindow: 4096 }), healthy('id-2', { dedupeWindow: 1024 }), healthy('id-3')],
      names,
    );
    expect(verdict.problems).toEqual([
      'replicas at applied index 20 disagree on their dedupe window: styx-1 4096; styx-2 1024',
    ]);
    // A report without it (a node of an older build) is not compared on it; at other indexes, neither.
    const mixed = [
      healthy('id-1', { dedupeWindow: 4096 }),
      healthy('id-2'),
      healthy('id-3', { dedupeWindow: 4096 }),
    ];
    expect(queueVerdict(mixed, names).ok).toBe(true);
    const behind = healthy('id-2', { dedupeWindow: 1024, appliedIndex: 19 });
    expect(queueVerdict([healthy('id-1', { dedupeWindow: 4096 }), behind], names).problems).toEqual([]);
    const reported = replicaReport('id-1', FOLLOWER, { ...view([1], counts(1)), dedupeWindow: 4096 });
    expect(reported.dedupeWindow).toBe(4096);
  });

  it('fails when a replica did not answer: the check could not verify it', () => {
    const unreachable: ReplicaCheck = { nodeId: 'id-3', online: false, error: 'no answer within 5000 ms' };
    expect(queueVerdict([healthy('id-1'), healthy('id-2'), unreachable], names)).toEqual({
      status: 'failed',
      ok: false,
      problems: ['the replica on styx-3 could not be checked: no answer within 5000 ms'],
    });
  });

  it("fails when a replica's count drifted from its own live ids", () => {
    const drifted = replicaReport('id-1', FOLLOWER, view([11, 12], counts(3)));
    expect(queueVerdict([drifted], names).problems).toEqual([
      'styx-1 counts 3 message(s) but holds 2 live message id(s)',
    ]);
  });

  it('fails with no replicas at all', () => {
    expect(queueVerdict([], names)).toEqual({
      status: 'failed',
      ok: false,
      problems: ['the queue has no replicas to check'],
    });
  });
});
