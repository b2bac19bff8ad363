import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClusterEvent } from './cluster-gossip.ts';
import { ClusterGossip, parseClusterEvent } from './cluster-gossip.ts';
import { LocalCluster } from './test-support/local-cluster.ts';

const WAIT = { timeout: 15_000, interval: 50 };
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('cluster gossip', () => {
  const cluster = new LocalCluster();
  const gossips: ClusterGossip[] = [];
  afterEach(async () => {
    for (const gossip of gossips.splice(0)) gossip.stop();
    await cluster.stop();
  });

  it('carries typed events to every subscribed node, with the publisher as sender', async () => {
    const nodes = await cluster.startMesh(3);
    const [a, b, c] = nodes;
    if (a === undefined || b === undefined || c === undefined) throw new Error('no nodes');
    // A line, not a full mesh: c hears a's events through b.
    await a.transport.connect(b.nodeId);
    await b.transport.connect(c.nodeId);
    const inboxes = nodes.map((n) => {
      const gossip = new ClusterGossip(n.node.services.pubsub, n.logger);
      gossips.push(gossip);
      gossip.start();
      const inbox: [ClusterEvent, string][] = [];
      gossip.subscribe((event, from) => inbox.push([event, from]));
      return { gossip, inbox };
    });
    const [fromA, atB, atC] = inboxes;
    if (fromA === undefined || atB === undefined || atC === undefined) throw new Error('no gossip');
    await vi.waitFor(() => expect(fromA.gossip.subscribers()).toEqual([b.nodeId]), WAIT);
    await vi.waitFor(() => expect(atC.gossip.subscribers()).toEqual([b.nodeId]), WAIT);

    const events: ClusterEvent[] = [
      { kind: 'node-up', nodeId: a.nodeId, address: a.address },
      { kind: 'group-leader', groupId: 'queue/orders', term: 3, leader: a.nodeId },
      { kind: 'metadata-hint', index: 42 },
      { kind: 'node-down', nodeId: c.nodeId },
    ];
    for (const event of events) await fromA.gossip.publish(event);
    for (const inbox of [atB.inbox, atC.inbox]) {
      await vi.waitFor(() => expect(inbox.length).toBe(events.length), WAIT);
      expect(inbox.map(([, from]) => from)).toEqual(events.map(() => a.nodeId));
      expect(inbox.map(([event]) => event).sort((x, y) => x.kind.localeCompare(y.kind))).toEqual(
        [...events].sort((x, y) => x.kind.localeCompare(y.kind)),
      );
    }
    expect(fromA.inbox).toEqual([]);
  });

  it('parses only well-formed events', () => {
    expect(parseClusterEvent(encode({ kind: 'metadata-hint', index: 3 }))).toEqual({
      kind: 'metadata-hint',
      index: 3,
    });
    expect(parseClusterEvent(encode({ kind: 'group-leader', groupId: 'g', term: 1 }))).toEqual({
      kind: 'group-leader',
      groupId: 'g',
      term: 1,
      leader: undefined,
    });
    expect(
      parseClusterEvent(encode({ kind: 'node-up', nodeId: 'n', address: 'h:1', incarnation: 'r1' })),
    ).toEqual({ kind: 'node-up', nodeId: 'n', address: 'h:1', incarnation: 'r1' });
    for (const bad of [
      { kind: 'metadata-hint', index: -1 },
      { kind: 'node-up', nodeId: 'n' },
      { kind: 'node-up', nodeId: 'n', address: 'h:1', incarnation: 7 },
      { kind: 'node-down', nodeId: 5 },
      { kind: 'group-leader', groupId: 'g', term: 1.5 },
      { kind: 'unknown' },
      null,
      [1, 2],
    ]) {
      expect(parseClusterEvent(encode(bad)), JSON.stringify(bad)).toBeUndefined();
    }
    expect(parseClusterEvent(new Uint8Array([0xff, 0xfe]))).toBeUndefined();
    expect(parseClusterEvent(encode({ kind: 'node-down', nodeId: 'x'.repeat(5000) }))).toBeUndefined();
  });
});
