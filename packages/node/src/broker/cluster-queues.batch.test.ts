import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeBatch, decodeBatchAnswer, encodeBatch, encodeGroup } from '../cluster/queue-batch-codec.ts';
import type { QueueLinkHandler } from '../cluster/queue-link.ts';
import { QueueLinkFrameError, QueueLinkLostError } from '../cluster/queue-link.ts';
import { decodeDelivery, encodeCancelled, encodeDelivery, QueueOp } from '../cluster/queue-rpc-codec.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { StoredMessage } from '../queue/types.ts';
import { sampleMessage } from '../storage/test-support/storage-fixtures.ts';
import type { ChannelSink, QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues } from './cluster-queues.ts';
import { quietQueuesHost } from './cluster-queues-test-support.ts';
import { RESEND_DELAY_MS } from './remote-owner-sink.ts';

// A leader's deliveries to a channel on another node, batched per turn (feature flag
// batched_remote_sends), on both sides of ClusterQueues: what it hands the queue link, and what it
// does with a batch that arrives. The link is faked (remote-send-batches.test.ts runs the real one).

/** An owner on node n2 (run `run1`) and one on this node n1. */
const REMOTE_OWNER = 'n2:run1.1/1';
const LOCAL_OWNER = 'n1:run0.1/1';
const GROUP = 'g1';
const EMPTY = new Uint8Array(0);

/** One call the fake link was given, its body in one piece. */
interface Call {
  readonly peer: string;
  readonly op: number;
  readonly body: Uint8Array;
}

function joined(body: Uint8Array | readonly Uint8Array[]): Uint8Array {
  if (body instanceof Uint8Array) return body;
  const out = new Uint8Array(body.reduce((n, p) => n + p.byteLength, 0));
  let pos = 0;
  for (const part of body) {
    out.set(part, pos);
    pos += part.byteLength;
  }
  return out;
}

/** A delivery as it reached the other side: its id and redelivered flag. */
function sent(body: Uint8Array): { id: number; redelivered: boolean } {
  const d = decodeDelivery(body);
  return { id: d.id, redelivered: d.redelivered };
}

/** What the calls carried, sends of batches unpacked, in order. */
function deliveries(calls: readonly Call[]): { id: number; redelivered: boolean }[] {
  return calls.flatMap((c) =>
    c.op === QueueOp.batch ? decodeBatch(c.body).map((s) => sent(s.body)) : [sent(c.body)],
  );
}

function setUp(batchFlag: boolean) {
  const calls: Call[] = [];
  let failNext = 0;
  let handler: QueueLinkHandler | undefined;
  const delivered: { tag: string; id: number; redelivered: boolean; queue: string }[] = [];
  const cancelled: string[] = [];
  const channel: ChannelSink = {
    deliver: (queue: QueueHandle, tag: string, id: number, redelivered: boolean) =>
      delivered.push({ tag, id, redelivered, queue: queue.name }),
    consumerCancelled: (_queue: QueueHandle, tag: string) => cancelled.push(tag),
  };
  const record = { vhost: '/', name: 'q1', groupId: GROUP, arguments: { entries: [] } };
  const nodes = [
    { id: 'id-n1', name: 'n1' },
    { id: 'id-n2', name: 'n2' },
  ];
  const host = quietQueuesHost({
    metadata: {
      clusterNode: (key: string) => nodes.find((n) => n.id === key || n.name === key),
      queue: () => record,
      queues: () => [record],
      policyFor: () => undefined,
    },
    localChannel: (owner: string) => (owner === LOCAL_OWNER ? channel : undefined),
  });
  const port: QueueClusterPort = {
    nodeId: 'id-n1',
    queueLink: {
      call: (peer, op, _group, body) => {
        const bytes = joined(body);
        calls.push({ peer, op, body: bytes });
        if (failNext > 0) {
          failNext--;
          return Promise.reject(new QueueLinkLostError(peer, 'stream closed'));
        }
        if (op !== QueueOp.batch) return Promise.resolve(EMPTY);
        // Every send taken: [u32 count] and a 0 per send.
        const count = decodeBatch(bytes).length;
        const answer = new Uint8Array(4 + count);
        new DataView(answer.buffer).setUint32(0, count);
        return Promise.resolve(answer);
      },
      handle: (h) => {
        handler = h;
      },
    },
    isDown: () => false,
    peerStatus: () => ({ suspected: false, unreachableMs: 0, incarnation: 'run1' }),
    featureFlags: {
      isEnabled: (name) => name !== 'batched_remote_sends' || batchFlag,
      isSupported: () => true,
    },
    onNodeDown: () => () => {},
    onNodeUp: () => () => {},
  };
  const queues = new ClusterQueues(host, port);
  const actor = {
    groupId: GROUP,
    vhost: '/',
    name: 'q1',
    isLeader: true,
    returnMessages: async () => {},
  } as unknown as QueueActor;
  const message: StoredMessage = sampleMessage(64);
  return {
    queues,
    calls,
    delivered,
    cancelled,
    failNext: (n: number) => {
      failNext = n;
    },
    /** `count` deliveries to the remote owner, ids from `first`, in this turn. */
    deliver: (count: number, first = 1) => {
      const sink = queues.resolveOwner(REMOTE_OWNER);
      if (sink === undefined) throw new Error('no sink for the remote owner');
      for (let i = 0; i < count; i++) sink.deliver(actor, 'ctag', first + i, false, 0, message);
    },
    serve: (op: number, body: Uint8Array) => (handler as QueueLinkHandler)(op, GROUP, body, 'id-n2'),
    message,
  };
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('ClusterQueues: deliveries to another node’s channel, batched per turn', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('with batched_remote_sends enabled, a turn’s 300 deliveries to one node go as one call, in order', async () => {
    const t = setUp(true);
    t.deliver(300);
    await flush();
    expect(t.calls.map((c) => [c.peer, c.op])).toEqual([['id-n2', QueueOp.batch]]);
    expect(deliveries(t.calls)).toEqual(
      Array.from({ length: 300 }, (_, i) => ({ id: i + 1, redelivered: false })),
    );
    // The next turn's deliveries: another call.
    t.deliver(2, 301);
    await flush();
    expect(t.calls).toHaveLength(2);
    t.queues.stop();
  });

  it('while the flag is off (a member of an older build), each delivery is a call of its own, as before', async () => {
    const t = setUp(false);
    t.deliver(5);
    await flush();
    expect(t.calls.map((c) => c.op)).toEqual(Array(5).fill(QueueOp.deliver));
    expect(deliveries(t.calls).map((d) => d.id)).toEqual([1, 2, 3, 4, 5]);
    t.queues.stop();
  });

  it('a lost batch goes again whole, in order, every delivery marked redelivered; later ones wait behind it', async () => {
    const t = setUp(true);
    t.failNext(1);
    t.deliver(50);
    await flush();
    expect(t.calls).toHaveLength(1);
    t.deliver(10, 51); // made while the first batch is being recovered: held behind it
    await flush();
    expect(t.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(RESEND_DELAY_MS);
    await flush();
    const again = deliveries(t.calls.slice(1));
    expect(again.map((d) => d.id)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(again.slice(0, 50).every((d) => d.redelivered)).toBe(true);
    expect(again.slice(50).every((d) => !d.redelivered)).toBe(true);
    expect(t.calls.slice(1).every((c) => c.op === QueueOp.batch)).toBe(true);
    t.queues.stop();
  });

  it('runs a batch that arrives in order: deliveries and cancellations to its channels, a gone owner and an unknown op refused alone', async () => {
    const t = setUp(true);
    const delivery = (owner: string, id: number, redelivered: boolean) =>
      encodeDelivery(owner, 'ctag', id, redelivered, redelivered ? 1 : 0, t.message);
    const sends = [
      { op: QueueOp.deliver, group: GROUP, body: delivery(LOCAL_OWNER, 1, false) },
      { op: QueueOp.deliver, group: GROUP, body: delivery(LOCAL_OWNER, 2, true) },
      { op: QueueOp.deliver, group: GROUP, body: delivery(REMOTE_OWNER, 3, false) },
      { op: QueueOp.cancelled, group: GROUP, body: encodeCancelled(LOCAL_OWNER, 'ctag') },
      { op: 42, group: GROUP, body: EMPTY },
      { op: QueueOp.deliver, group: GROUP, body: delivery(LOCAL_OWNER, 4, false) },
    ];
    const body = joined(
      encodeBatch(
        sends,
        sends.map((s) => encodeGroup(s.group)),
      ),
    );
    const answer = decodeBatchAnswer((await t.serve(QueueOp.batch, body)) as Uint8Array, sends.length);
    expect(answer.map((o) => (o.ok ? 'ok' : o.code))).toEqual([
      'ok',
      'ok',
      'OWNER_GONE',
      'ok',
      'UNKNOWN_MESSAGE',
      'ok',
    ]);
    expect(t.delivered).toEqual([
      { tag: 'ctag', id: 1, redelivered: false, queue: 'q1' },
      { tag: 'ctag', id: 2, redelivered: true, queue: 'q1' },
      { tag: 'ctag', id: 4, redelivered: false, queue: 'q1' },
    ]);
    expect(t.cancelled).toEqual(['ctag']);
    t.queues.stop();
  });

  it('a batch that does not decode, or carries a delivery that does not, is refused whole (its stream closes)', () => {
    const t = setUp(true);
    expect(() => t.serve(QueueOp.batch, Uint8Array.of(0, 0, 0, 5, 1))).toThrow(QueueLinkFrameError);
    const broken = [{ op: QueueOp.deliver, group: GROUP, body: Uint8Array.of(0, 9, 1) }];
    const body = joined(encodeBatch(broken, [encodeGroup(GROUP)]));
    expect(() => t.serve(QueueOp.batch, body)).toThrow(QueueLinkFrameError);
    expect(t.delivered).toEqual([]);
    t.queues.stop();
  });
});
