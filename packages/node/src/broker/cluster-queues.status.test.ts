import type { RaftGroupLog } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { ChannelError, Code } from '../errors/amqp-error.ts';
import { silentLogger } from '../logging/logger.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { QueueApplyResult, QueueCommand } from '../queue/types.ts';
import type { ClusterQueuesHost, QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues } from './cluster-queues.ts';

describe('ClusterQueues.status (quorum_status)', () => {
  const record = (durable: boolean): QueueRecord => ({
    vhost: '/',
    name: 'q',
    durable,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: { entries: [] },
    groupId: 'g1',
    members: ['id-n1', 'id-n2'],
  });

  /** A leading replica of g1 on id-n1, its Raft group faked: term 7, applied 40 of 42 committed. */
  function setUp() {
    const actor = { groupId: 'g1', isLeader: true, leaderId: 'id-n1' } as unknown as QueueActor;
    const host = {
      metadata: { clusterNode: () => undefined },
      logger: silentLogger(),
      replica: (groupId: string) => (groupId === 'g1' ? actor : undefined),
      replicas: () => [actor],
      localChannel: () => undefined,
    } as unknown as ClusterQueuesHost;
    const port: QueueClusterPort = {
      nodeId: 'id-n1',
      queueLink: { call: () => Promise.reject(new Error('no link')), handle: () => {} },
      isDown: () => false,
      peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: undefined }),
      onNodeDown: () => () => {},
      onNodeUp: () => () => {},
    };
    const queues = new ClusterQueues(host, port);
    const group = {
      term: 7,
      commitIndex: 42,
      appliedIndex: 40,
      membership: { voters: ['id-n1', 'id-n2'], learners: [] },
      progress: () =>
        new Map([
          ['id-n1', { match: 42, active: true }],
          ['id-n2', { match: 41, active: true }],
        ]),
    } as unknown as RaftGroupLog<QueueCommand, QueueApplyResult>;
    queues.registerGroup('g1', group);
    return queues;
  }

  it("reports the group's Raft term and commit index, not the applied index", async () => {
    const queues = setUp();
    expect(await queues.status(record(true))).toEqual({
      leader: 'id-n1',
      term: 7,
      commitIndex: 42,
      replicas: [
        { node: 'id-n1', role: 'leader', match: 42, active: true },
        { node: 'id-n2', role: 'follower', match: 41, active: true },
      ],
    });
    queues.stop();
  });

  it('refuses a queue that is not replicated (406: the API answers 400) instead of inventing a status', async () => {
    const queues = setUp();
    const error = await queues.status(record(false)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChannelError);
    expect(error).toMatchObject({
      code: Code.PRECONDITION_FAILED,
      message:
        "queue 'q' in vhost '/' is not replicated: it is not durable, so it lives in memory on one node",
    });
    queues.stop();
  });
});
