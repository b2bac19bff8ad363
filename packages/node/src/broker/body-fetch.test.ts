import { describe, expect, it } from 'vitest';
import { FeatureFlagDisabledError, QUEUE_BODY_REPAIR_FLAG } from '../cluster/feature-flags.ts';
import { InMemoryBodyStore } from '../queue/body-store.ts';
import type { StoredMessage } from '../queue/types.ts';
import {
  ClusterBodySource,
  decodeBodyAnswer,
  decodeBodyRequest,
  encodeBodyAnswer,
  encodeBodyRequest,
  MAX_ANSWER_BODY_BYTES,
  RPC_QUEUE_BODIES,
  serveBodies,
} from './body-fetch.ts';

function message(n: number, size = 16): StoredMessage {
  return {
    exchange: 'ex',
    routingKey: `m${n}`,
    properties: {},
    body: new Uint8Array(size).fill(n),
    bcc: undefined,
  };
}

type Handler = (payload: Uint8Array, from: string) => Promise<Uint8Array>;

/**
 * Nodes on one fake RPC: each serves `queue.bodies` from its own store; `down` ones do not answer.
 * The feature flag `queue_body_repair` is enabled unless `flagDisabled`; `older` nodes' builds lack it.
 */
class FakeNodes {
  readonly handlers = new Map<string, Handler>();
  readonly down = new Set<string>();
  readonly older = new Set<string>();
  flagDisabled = false;
  node(nodeId: string) {
    return {
      nodeId,
      featureFlags: {
        isEnabled: (name: string) => name === QUEUE_BODY_REPAIR_FLAG && !this.flagDisabled,
        isSupported: (name: string) => name === QUEUE_BODY_REPAIR_FLAG && !this.older.has(nodeId),
      },
      handleRpc: (kind: string, handler: Handler) => {
        expect(kind).toBe(RPC_QUEUE_BODIES);
        this.handlers.set(nodeId, handler);
      },
      callRpc: async (peer: string, _kind: string, payload: Uint8Array): Promise<Uint8Array> => {
        const handler = this.handlers.get(peer);
        if (handler === undefined || this.down.has(peer)) throw new Error(`${peer} unreachable`);
        return handler(payload, nodeId);
      },
    };
  }
}

function replicaNode(nodes: FakeNodes, id: string, applied: number, bodies: readonly number[], size = 16) {
  const store = new InMemoryBodyStore();
  for (const n of bodies) store.put('g', n, message(n, size));
  serveBodies(nodes.node(id), (groupId) => (groupId === 'g' ? { appliedIndex: applied } : undefined), store);
  return store;
}

describe('queue.bodies codec', () => {
  it('round-trips requests and answers', () => {
    expect(decodeBodyRequest(encodeBodyRequest({ groupId: 'vh/q/7', ids: [1, 300, 2 ** 40] }))).toEqual({
      groupId: 'vh/q/7',
      ids: [1, 300, 2 ** 40],
    });
    const answer = { complete: false, applied: 99, bodies: [{ id: 5, encoding: new Uint8Array([1, 2, 3]) }] };
    const decoded = decodeBodyAnswer(encodeBodyAnswer(answer));
    expect(decoded.complete).toBe(false);
    expect(decoded.applied).toBe(99);
    expect(decoded.bodies.map((b) => [b.id, [...b.encoding]])).toEqual([[5, [1, 2, 3]]]);
  });

  it('refuses malformed bytes, unknown formats and oversized id lists with an error, not a crash', () => {
    const good = encodeBodyRequest({ groupId: 'g', ids: [1, 2] });
    expect(() => decodeBodyRequest(good.subarray(0, good.length - 1))).toThrow();
    expect(() => decodeBodyRequest(Buffer.concat([good, Buffer.from([0])]))).toThrow(/trailing/);
    expect(() => decodeBodyRequest(Buffer.from([9]))).toThrow(/format/);
    expect(() =>
      decodeBodyRequest(encodeBodyRequest({ groupId: 'g', ids: new Array(1000).fill(1) })),
    ).toThrow(/at most/);
    expect(() => decodeBodyAnswer(Buffer.from([1, 1, 5, 200]))).toThrow();
  });
});

describe('ClusterBodySource', () => {
  it('gathers bodies from whichever replica has them', async () => {
    const nodes = new FakeNodes();
    replicaNode(nodes, 'n2', 10, [1, 2]);
    replicaNode(nodes, 'n3', 10, [3]);
    const source = new ClusterBodySource(nodes.node('n1'), () => ['n1', 'n2', 'n3']);
    const { found, lost } = await source.fetch('g', [1, 3, 4]);
    expect([...found.keys()].sort()).toEqual([1, 3]);
    expect(found.get(3)?.routingKey).toBe('m3');
    // 4 is applied (10 >= 4) on both and held by neither: lost everywhere.
    expect(lost).toEqual([4]);
  });

  it('calls nothing lost while a replica is unreachable, or has not applied the message yet', async () => {
    const nodes = new FakeNodes();
    replicaNode(nodes, 'n2', 10, []);
    replicaNode(nodes, 'n3', 3, []);
    const source = new ClusterBodySource(nodes.node('n1'), () => ['n1', 'n2', 'n3']);
    // n3 applied only up to 3: it may still get 5's body from its log.
    expect((await source.fetch('g', [2, 5])).lost).toEqual([2]);
    nodes.down.add('n3');
    expect((await source.fetch('g', [2, 5])).lost).toEqual([]);
  });

  it('asks nothing while the feature flag is not enabled cluster-wide, and resumes once it is', async () => {
    const nodes = new FakeNodes();
    replicaNode(nodes, 'n2', 10, [1]);
    const source = new ClusterBodySource(nodes.node('n1'), () => ['n1', 'n2']);
    nodes.flagDisabled = true;
    await expect(source.fetch('g', [1])).rejects.toBeInstanceOf(FeatureFlagDisabledError);
    await expect(source.fetch('g', [1])).rejects.toThrow(/queue_body_repair/);
    nodes.flagDisabled = false;
    expect([...(await source.fetch('g', [1])).found.keys()]).toEqual([1]);
  });

  it('is not served by a build without the feature flag (an older node)', () => {
    const nodes = new FakeNodes();
    nodes.older.add('n2');
    replicaNode(nodes, 'n2', 10, [1]);
    expect(nodes.handlers.has('n2')).toBe(false);
  });

  it('refuses a verdict while the group members are unknown here', async () => {
    const nodes = new FakeNodes();
    const source = new ClusterBodySource(nodes.node('n1'), () => []);
    await expect(source.fetch('g', [1])).rejects.toThrow(/not known/);
  });

  it('treats a group with no other replica as lost at once', async () => {
    const nodes = new FakeNodes();
    const source = new ClusterBodySource(nodes.node('n1'), () => ['n1']);
    expect((await source.fetch('g', [7])).lost).toEqual([7]);
  });

  it('cuts a large answer short and then proves nothing about what it left out', async () => {
    const nodes = new FakeNodes();
    const big = Math.floor(MAX_ANSWER_BODY_BYTES / 2);
    replicaNode(nodes, 'n2', 10, [1, 2, 3], big);
    const source = new ClusterBodySource(nodes.node('n1'), () => ['n1', 'n2']);
    const first = await source.fetch('g', [1, 2, 3, 4]);
    expect(first.found.size).toBeLessThan(3);
    expect(first.lost).toEqual([]);
  });

  it('answers an error for a group it holds no replica of', async () => {
    const nodes = new FakeNodes();
    replicaNode(nodes, 'n2', 10, [1]);
    const handler = nodes.handlers.get('n2') as Handler;
    await expect(handler(encodeBodyRequest({ groupId: 'other', ids: [1] }), 'n1')).rejects.toThrow(
      /no replica/,
    );
    await expect(handler(Buffer.from([1, 200]), 'n1')).rejects.toThrow();
  });
});
