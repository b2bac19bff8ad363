import { describe, expect, it, vi } from 'vitest';
import type { QueueLinkHandler } from '../cluster/queue-link.ts';
import { QueueOp } from '../cluster/queue-rpc-codec.ts';
import { silentLogger } from '../logging/logger.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { ClusterQueuesHost, QueueClusterPort } from './cluster-queues.ts';
import { ClusterQueues, ownerNodeName } from './cluster-queues.ts';

describe('ownerNodeName', () => {
  it.each([
    // owner ids: `${nodeName}:${run}.${n}/${channel}` (run is base64url: no ':', '/' or '.')
    ['styx-1:AbC-_9.3/7', 'styx-1'],
    ['styx-1:AbC-_9.12/65535', 'styx-1'],
    // node names are free text: colons, dots and slashes in them
    ['host:5672:AbCd.1/1', 'host:5672'],
    ['node.example.com:run.4/2', 'node.example.com'],
    ['rack/1:run.4/2', 'rack/1'],
    ['ñœud-ü:run.1/1', 'ñœud-ü'],
    // connection ids (no channel)
    ['styx-2:run.9', 'styx-2'],
    ['a:b:run.9', 'a:b'],
  ])('%s → %s', (owner, name) => {
    expect(ownerNodeName(owner)).toBe(name);
  });

  it('an id without a node part names itself (a single node’s owners, before clustering)', () => {
    expect(ownerNodeName('conn-1/1')).toBe('conn-1');
    expect(ownerNodeName('plain')).toBe('plain');
  });
});

describe('ClusterQueues: consumers given up while their node was counted down', () => {
  /** One leading replica on this node, holding an owner of node n2; the cluster and link faked. */
  function setUp() {
    const down = new Set<(id: string) => void>();
    const up = new Set<(id: string) => void>();
    const calls: { peer: string; op: number }[] = [];
    let handler: QueueLinkHandler | undefined;
    let failNext = 0;
    let reasserted = 0;
    const lost: string[] = [];
    const actor = {
      groupId: 'g1',
      isLeader: true,
      ownerIds: () => ['n2:run.1/1'],
      ownerLost: (owner: string) => lost.push(owner),
    } as unknown as QueueActor;
    const nodes = [
      { id: 'id-n1', name: 'n1' },
      { id: 'id-n2', name: 'n2' },
    ];
    const host = {
      metadata: { clusterNode: (key: string) => nodes.find((n) => n.id === key || n.name === key) },
      logger: silentLogger(),
      replica: () => undefined,
      replicas: () => [actor],
      localChannel: () => undefined,
      reassertConsumers: () => {
        reasserted++;
      },
      startReplica: async () => {},
      dropReplica: async () => {},
    } as unknown as ClusterQueuesHost;
    const port: QueueClusterPort = {
      nodeId: 'id-n1',
      queueLink: {
        call: (peer, op) => {
          calls.push({ peer, op });
          if (failNext > 0) {
            failNext--;
            return Promise.reject(new Error('link lost'));
          }
          return Promise.resolve(new Uint8Array(0));
        },
        handle: (h) => {
          handler = h;
        },
      },
      isDown: () => false,
      onNodeDown: (listener) => {
        down.add(listener);
        return () => down.delete(listener);
      },
      onNodeUp: (listener) => {
        up.add(listener);
        return () => up.delete(listener);
      },
    };
    const queues = new ClusterQueues(host, port);
    return {
      queues,
      calls,
      lost,
      reasserted: () => reasserted,
      forget: (id: string) => {
        nodes.splice(
          nodes.findIndex((n) => n.id === id),
          1,
        );
      },
      failNext: (n: number) => {
        failNext = n;
      },
      serve: (op: number) => (handler as QueueLinkHandler)(op, '', new Uint8Array(0), 'id-n2'),
      down: (id: string) => {
        for (const l of down) l(id);
      },
      up: (id: string) => {
        for (const l of up) l(id);
      },
    };
  }

  it('tells that node to register its consumers again once it answers, once per give-up', async () => {
    const t = setUp();
    t.up('id-n2'); // nothing was given up: nothing to tell
    expect(t.calls).toEqual([]);
    t.down('id-n2');
    expect(t.lost).toEqual(['n2:run.1/1']);
    t.up('id-n2');
    t.up('id-n2');
    expect(t.calls).toEqual([{ peer: 'id-n2', op: QueueOp.reassert }]);
    t.queues.stop();
  });

  it('tries again while the node is up and the notice is lost', async () => {
    vi.useFakeTimers();
    try {
      const t = setUp();
      t.failNext(2);
      t.down('id-n2');
      t.up('id-n2');
      await vi.advanceTimersByTimeAsync(2_000);
      expect(t.calls.map((c) => c.op)).toEqual([QueueOp.reassert, QueueOp.reassert, QueueOp.reassert]);
      t.queues.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('keeps telling a node that is up, with capped back-off, until it hears; not once it is forgotten', async () => {
    vi.useFakeTimers();
    try {
      const t = setUp();
      t.failNext(30);
      t.down('id-n2');
      t.up('id-n2');
      // 10 tries used to be all it got (5 s): a node that stays unreachable that long kept no consumers.
      await vi.advanceTimersByTimeAsync(120_000);
      expect(t.calls.length).toBeGreaterThan(11);
      expect(t.calls.length).toBeLessThan(25); // backed off: at most one try per 10 s past the first few
      t.failNext(0);
      await vi.advanceTimersByTimeAsync(60_000);
      const told = t.calls.length;
      expect(told).toBeLessThan(31);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(t.calls.length).toBe(told); // heard: no more tries

      const u = setUp();
      u.failNext(100);
      u.down('id-n2');
      u.up('id-n2');
      await vi.advanceTimersByTimeAsync(1_000);
      u.forget('id-n2');
      const before = u.calls.length;
      await vi.advanceTimersByTimeAsync(60_000);
      expect(u.calls.length).toBeLessThanOrEqual(before + 1);
      t.queues.stop();
      u.queues.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('on the told node, registers every local consumer again', async () => {
    const t = setUp();
    await t.serve(QueueOp.reassert);
    expect(t.reasserted()).toBe(1);
    t.queues.stop();
  });
});
