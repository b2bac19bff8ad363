/**
 * A replica removed from its queue's group (delete_member, shrink) and a leader removing itself.
 *
 * Chaos seed 214 (2026-11-26T17-33-52-777Z): `delete_member chaos.rej n3` while n1 was down and
 * behind. The removal committed on n2 and n3 (the old configuration's quorum) and n3 destroyed its
 * replica as soon as it applied it; n1 never got the removal, so it still counted n3 a voter. Once
 * n3 was added back, its replica started empty under the same Raft id, and granted n1's vote
 * requests: n1, lacking everything committed while it was down, won with {n1, n3} and overwrote n2.
 * A removed replica's data goes only once every remaining member holds the removal.
 */
import type { RaftGroupLog } from '@styx/raft';
import { describe, expect, it, vi } from 'vitest';
import type { GroupStatus } from '../cluster/queue-rpc-codec.ts';
import { encodeJsonBody, QueueOp } from '../cluster/queue-rpc-codec.ts';
import { silentLogger } from '../logging/logger.ts';
import type { QueueRecord } from '../metadata/metadata-machine.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { QueueApplyResult, QueueCommand } from '../queue/types.ts';
import type { ClusterQueuesHost, QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues } from './cluster-queues.ts';

type Group = RaftGroupLog<QueueCommand, QueueApplyResult>;

const conf = (voters: string[], learners: string[] = []) => ({
  voters,
  votersOutgoing: [],
  learners,
  learnersNext: [],
  autoLeave: false,
});

/** This node is n3; one queue, `chaos.rej`, whose replica here is `actor`. */
function setUp(members: string[]) {
  const actor = {
    groupId: 'g1',
    vhost: '/',
    name: 'chaos.rej',
    isLeader: false,
    leaderId: 'n2',
    ownerIds: () => [],
  } as unknown as QueueActor;
  let record = {
    vhost: '/',
    name: 'chaos.rej',
    groupId: 'g1',
    durable: true,
    members,
  } as unknown as QueueRecord;
  const dropped: string[] = [];
  const started: string[] = [];
  let status: GroupStatus | undefined;
  const statusAsked: string[] = [];
  const host = {
    metadata: {
      queues: () => [record],
      queue: (vhost: string, name: string) =>
        vhost === record.vhost && name === record.name ? record : undefined,
      clusterNode: () => undefined,
    },
    logger: silentLogger(),
    replica: (groupId: string) => (groupId === 'g1' && dropped.length === 0 ? actor : undefined),
    replicas: () => (dropped.length === 0 ? [actor] : []),
    localChannel: () => undefined,
    reassertConsumers: () => {},
    startReplica: async (r: QueueRecord) => {
      started.push(r.groupId);
    },
    dropReplica: async (r: QueueRecord) => {
      dropped.push(r.groupId);
    },
  } as unknown as ClusterQueuesHost;
  const port: QueueClusterPort = {
    nodeId: 'n3',
    queueLink: {
      call: (peer, op) => {
        if (op !== QueueOp.status) return Promise.resolve(new Uint8Array(0));
        statusAsked.push(peer);
        if (status === undefined || peer !== status.leader) return Promise.reject(new Error('not leader'));
        return Promise.resolve(encodeJsonBody(status));
      },
      handle: () => {},
    },
    isDown: () => false,
    peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: undefined }),
    onNodeDown: () => () => {},
    onNodeUp: () => () => {},
  };
  const queues = new ClusterQueues(host, port);
  return {
    queues,
    actor,
    dropped,
    started,
    statusAsked,
    setStatus: (s: GroupStatus) => {
      status = s;
    },
    setMembers: (m: string[]) => {
      record = { ...record, members: m } as QueueRecord;
    },
  };
}

/** Let the status calls and the passes they trigger run. */
async function settle(queues: ClusterQueues): Promise<void> {
  for (let i = 0; i < 5; i++) {
    await queues.reconcileReplicas();
    await new Promise((r) => setImmediate(r));
  }
}

describe('ClusterQueues: a replica removed from its group', () => {
  it('keeps its data until every remaining member holds the removal (seed 214: n1 behind and down)', async () => {
    const t = setUp(['n1', 'n2']);
    // n3 applied its removal at index 100 (committed by n2 and n3, the old configuration's quorum).
    const group = { role: 'removed', membership: conf(['n1', 'n2']), appliedIndex: 100 } as unknown as Group;
    t.queues.registerGroup('g1', group);
    const replicas = (n1Match: number) => [
      { node: 'n2', role: 'leader' as const, match: 105, active: true },
      { node: 'n1', role: 'follower' as const, match: n1Match, active: false },
    ];
    t.setStatus({ leader: 'n2', term: 7, commitIndex: 100, replicas: replicas(40) });
    await settle(t.queues);
    // n1 lacks entries up to 100: with n3's data gone, a fresh n3 added back would vote for it.
    expect(t.dropped).toEqual([]);
    expect(t.statusAsked.length).toBeGreaterThan(0);

    // No leader answers (n2 killed): still kept.
    t.setStatus({ leader: 'nobody', term: 7, commitIndex: 100, replicas: replicas(100) });
    await settle(t.queues);
    expect(t.dropped).toEqual([]);

    // n1 caught up past the removal: now it goes.
    t.setStatus({ leader: 'n2', term: 7, commitIndex: 110, replicas: replicas(100) });
    await settle(t.queues);
    expect(t.dropped).toEqual(['g1']);
    t.queues.stop();
  });

  it('keeps it while a leader that still lists this node answers (its removal not applied there)', async () => {
    const t = setUp(['n1', 'n2']);
    const group = { role: 'removed', membership: conf(['n1', 'n2']), appliedIndex: 100 } as unknown as Group;
    t.queues.registerGroup('g1', group);
    t.setStatus({
      leader: 'n1',
      term: 8,
      commitIndex: 90,
      replicas: [
        { node: 'n1', role: 'leader', match: 120, active: true },
        { node: 'n2', role: 'follower', match: 120, active: true },
        { node: 'n3', role: 'follower', match: 100, active: false },
      ],
    });
    await settle(t.queues);
    expect(t.dropped).toEqual([]);
    t.queues.stop();
  });

  it('added back before its data went: the kept replica carries on (nothing dropped, nothing started)', async () => {
    const t = setUp(['n1', 'n2']);
    const group = { role: 'removed', membership: conf(['n1', 'n2']), appliedIndex: 100 } as unknown as Group;
    t.queues.registerGroup('g1', group);
    t.setStatus({
      leader: 'n2',
      term: 7,
      commitIndex: 100,
      replicas: [
        { node: 'n2', role: 'leader', match: 105, active: true },
        { node: 'n1', role: 'follower', match: 40, active: false },
      ],
    });
    await settle(t.queues);
    t.setMembers(['n1', 'n2', 'n3']);
    await settle(t.queues);
    expect(t.dropped).toEqual([]);
    expect(t.started).toEqual([]);
    t.queues.stop();
  });
});

describe('ClusterQueues: a leader removing itself', () => {
  it('hands its leadership to an up-to-date voter that answers, not the first one listed', () => {
    const t = setUp(['n1', 'n2']);
    (t.actor as { isLeader: boolean }).isLeader = true;
    const transferLeadership = vi.fn();
    const changeMembership = vi.fn(() => Promise.resolve());
    const group = {
      role: 'leader',
      membership: conf(['n3', 'n1', 'n2']),
      appliedIndex: 500,
      progress: () =>
        new Map([
          ['n3', { match: 520, active: true }],
          ['n1', { match: 80, active: false }],
          ['n2', { match: 518, active: true }],
        ]),
      transferLeadership,
      changeMembership,
    } as unknown as Group;
    t.queues.registerGroup('g1', group);
    t.queues.pokeMembership('g1');
    expect(changeMembership).not.toHaveBeenCalled();
    expect(transferLeadership).toHaveBeenCalledWith('n2');
    expect(transferLeadership).not.toHaveBeenCalledWith('n1');
    t.queues.stop();
  });

  it('with no other voter answering, keeps leading (a transfer to a down voter only stalls the queue)', () => {
    const t = setUp(['n1', 'n2']);
    (t.actor as { isLeader: boolean }).isLeader = true;
    const transferLeadership = vi.fn();
    const group = {
      role: 'leader',
      membership: conf(['n3', 'n1', 'n2']),
      appliedIndex: 500,
      progress: () =>
        new Map([
          ['n3', { match: 520, active: true }],
          ['n1', { match: 80, active: false }],
          ['n2', { match: 518, active: false }],
        ]),
      transferLeadership,
      changeMembership: vi.fn(() => Promise.resolve()),
    } as unknown as Group;
    t.queues.registerGroup('g1', group);
    t.queues.pokeMembership('g1');
    expect(transferLeadership).not.toHaveBeenCalled();
    t.queues.stop();
  });
});
