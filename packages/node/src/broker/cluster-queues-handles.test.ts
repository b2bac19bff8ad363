/**
 * `ClusterQueues`' handles (`ClusterQueue`) across the life of a queue: a handle made again for a
 * queue whose old handle still has retries waiting, and handles released when their queue goes.
 */
import { describe, expect, it } from 'vitest';
import { QueueLinkLostError } from '../cluster/queue-link.ts';
import { encodeBinaryAnswer, encodeCommandAnswer, QueueOp } from '../cluster/queue-rpc-codec.ts';
import type { QueueRecord } from '../metadata/metadata-machine.ts';
import { MachineHarness, storedMessage } from '../queue/queue-test-harness.ts';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import { queueRecord } from '../test-support/queue-record.ts';
import type { QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues } from './cluster-queues.ts';
import { quietQueuesHost } from './cluster-queues-test-support.ts';

describe('ClusterQueues: publish dedupe across handles of one queue', () => {
  /** A node with no replica of g1; its link reaches a leader whose queue machine the test holds. */
  function setUp() {
    const leader = new MachineHarness({ deadLetterExchange: undefined });
    const sent: { seq: number; source: string }[] = [];
    /** Publish attempts still to be lost before they reach the leader. */
    const cut = { attempts: 0 };
    const host = quietQueuesHost({
      metadata: { clusterNode: () => undefined, queues: () => [], queue: () => undefined },
    });
    const port: QueueClusterPort = {
      nodeId: 'id-n1',
      queueLink: {
        call: async (peer, op, _group, body) => {
          const command = queueCommandCodec.decode(body as Uint8Array);
          if (command.type === 'enqueue' && command.publishId !== undefined) {
            const { messageId, source } = command.publishId;
            sent.push({ seq: messageId, source });
            if (cut.attempts > 0) {
              cut.attempts--;
              throw new QueueLinkLostError(peer, 'stream closed');
            }
          }
          // No feature flags here: commands go as op 8, answered in binary (op 1 in JSON).
          const answer = op === QueueOp.commandBinary ? encodeBinaryAnswer : encodeCommandAnswer;
          return answer(leader.apply(command).reply, undefined);
        },
        handle: () => {},
      },
      isDown: () => false,
      peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: undefined }),
      onNodeDown: () => () => {},
      onNodeUp: () => () => {},
    };
    return { queues: new ClusterQueues(host, port), leader, sent, cut };
  }

  const RECORD: QueueRecord = queueRecord({ groupId: 'g1', members: ['id-n2', 'id-n3'] });

  it('a retry of an older handle is never answered `duplicate` for a message that was not enqueued', async () => {
    const t = setUp();
    const before = t.queues.handle(RECORD);
    // Its first two attempts (the direct one and the backlog's first round) are lost on the way.
    t.cut.attempts = 2;
    const first = before.enqueue(storedMessage(3), undefined);
    // The replica here was dropped (or the group forgotten) while the queue lives on: the next
    // use makes another handle, whose publish lands while the first waits to be sent again.
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(t.sent).toHaveLength(2);
    t.queues.forgetGroup('g1');
    const after = t.queues.handle(RECORD);
    expect(await after.enqueue(storedMessage(3), undefined)).toEqual({ type: 'ok' });
    const reply = await first;
    // Confirmed (ok or duplicate) means enqueued: both messages are on the queue.
    expect(reply).toEqual({ type: 'ok' });
    expect(t.leader.machine.counts().ready).toBe(2);
    t.queues.stop();
  });
});

describe('ClusterQueues: handles of deleted queues are released', () => {
  /** A node that holds no replica; `live` is its metadata's queues. */
  function setUp() {
    const live: QueueRecord[] = [];
    const host = quietQueuesHost({
      metadata: { clusterNode: () => undefined, queues: () => live, queue: () => undefined },
    });
    const port: QueueClusterPort = {
      nodeId: 'id-n1',
      queueLink: { call: async () => new Uint8Array(0), handle: () => {} },
      isDown: () => false,
      peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: undefined }),
      onNodeDown: () => () => {},
      onNodeUp: () => () => {},
    };
    return { queues: new ClusterQueues(host, port), live };
  }

  const replyQueue = (n: number): QueueRecord => ({
    vhost: '/',
    name: `amq.gen-${n}`,
    durable: false,
    exclusiveOwner: undefined,
    autoDelete: true,
    arguments: { entries: [] },
    groupId: `g-${n}`,
    members: ['id-n2'],
  });

  it('a queue’s deletion applied here releases its handle (reply and auto-delete queue churn)', () => {
    const t = setUp();
    for (let n = 0; n < 1_000; n++) {
      const record = replyQueue(n);
      t.queues.handle(record);
      t.queues.queueDeleted(record.groupId);
    }
    expect(t.queues.handleCount).toBe(0);
    t.queues.stop();
  });

  it('a metadata snapshot that no longer has a queue releases its handle at the next reconcile', async () => {
    const t = setUp();
    const kept = replyQueue(0);
    t.live.push(kept);
    const first = t.queues.handle(kept);
    for (let n = 1; n <= 100; n++) t.queues.handle(replyQueue(n));
    expect(t.queues.handleCount).toBe(101);
    await t.queues.reconcileReplicas();
    expect(t.queues.handleCount).toBe(1);
    // The live queue keeps its handle (one per queue for as long as it exists).
    expect(t.queues.handle(kept)).toBe(first);
    t.queues.stop();
  });
});
