import type { RaftGroupLog } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import { ChannelError } from '../errors/amqp-error.ts';
import { silentLogger } from '../logging/logger.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord } from '../metadata/types.ts';
import { InMemoryBodyStore } from '../queue/body-store.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import { liveIdsDigest } from '../queue/replica-check.ts';
import type { QueueApplyResult, QueueCommand, QueueCounts } from '../queue/types.ts';
import type { QueueCheckRpc } from './queue-checks.ts';
import { ALIGN_ATTEMPTS, QUEUE_CHECK_RPC, QueueChecks } from './queue-checks.ts';

const NODES = ['id-1', 'id-2', 'id-3'];

function record(name: string, overrides: Partial<QueueRecord> = {}): QueueRecord {
  return {
    vhost: '/',
    name,
    durable: true,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: { entries: [] },
    groupId: `g-${name}`,
    members: NODES,
    ...overrides,
  };
}

function counts(ready: number): QueueCounts {
  return { ready, unacked: 0, readyBytes: 0, consumers: 0, deadLetterPending: 0, deadLetterPendingBytes: 0 };
}

/** One node's replica of a group: its live ids, Raft position and body store. */
interface FakeReplica {
  ids: number[];
  applied: number;
  role?: 'leader' | 'follower';
}

/**
 * Three nodes' QueueChecks, their RPCs wired to each other through a hub; `replicas` sets what
 * each node holds (`node → groupId → replica`), `down` the nodes whose calls fail.
 */
function cluster() {
  const handlers = new Map<string, (payload: Uint8Array, from: string) => Promise<Uint8Array>>();
  const replicas = new Map<string, Map<string, FakeReplica>>(NODES.map((n) => [n, new Map()]));
  const bodies = new Map(NODES.map((n) => [n, new InMemoryBodyStore()]));
  const down = new Set<string>();
  const garbled = new Set<string>();
  let calls = 0;
  const metadata = {
    clusterNodes: () => NODES.map((id) => ({ id, name: id.replace('id-', 'styx-') })),
  } as unknown as MetadataMachine;
  const checks = new Map<string, QueueChecks>();
  for (const self of NODES) {
    const rpc: QueueCheckRpc = {
      handleRpc: (kind, handler) => {
        expect(kind).toBe(QUEUE_CHECK_RPC);
        handlers.set(self, handler);
      },
      callRpc: async (peer, _kind, payload) => {
        calls++;
        if (down.has(peer)) throw new Error(`queue-check call to ${peer} got no answer within 5000 ms`);
        if (!handlers.has(peer)) throw new Error(`no route to ${peer}`);
        if (garbled.has(peer)) return new TextEncoder().encode('{"g-orders": {"role": 7}}');
        return (handlers.get(peer) as (p: Uint8Array, f: string) => Promise<Uint8Array>)(payload, self);
      },
    };
    const local = replicas.get(self) as Map<string, FakeReplica>;
    checks.set(
      self,
      new QueueChecks({
        selfId: self,
        selfName: self.replace('id-', 'styx-'),
        metadata,
        logger: silentLogger(),
        bodyStore: bodies.get(self),
        membersOf: (r) => r.members ?? [],
        replica: (groupId) => {
          const replica = local.get(groupId);
          if (replica === undefined) return undefined;
          return {
            isLeader: replica.role === 'leader',
            counts: () => counts(replica.ids.length),
            liveIds: () => replica.ids,
            dedupeWindow: () => 1024,
          } as unknown as QueueActor;
        },
        group: (groupId) => {
          const replica = local.get(groupId);
          if (replica === undefined) return undefined;
          return {
            role: replica.role ?? 'follower',
            term: 2,
            appliedIndex: replica.applied,
            commitIndex: replica.applied,
            membership: { voters: NODES, learners: [] },
          } as unknown as RaftGroupLog<QueueCommand, QueueApplyResult>;
        },
        cluster: rpc,
      }),
    );
  }
  /** Every node holds `ids` of `name` at applied index `applied`, with their bodies. */
  const hold = (name: string, ids: number[], applied: number): void => {
    for (const node of NODES) {
      replicas
        .get(node)
        ?.set(`g-${name}`, { ids: [...ids], applied, role: node === 'id-1' ? 'leader' : 'follower' });
      for (const id of ids)
        bodies.get(node)?.put(`g-${name}`, id, {
          exchange: '',
          routingKey: name,
          properties: {},
          body: new Uint8Array(1),
          bcc: undefined,
        });
    }
  };
  return {
    on: (node: string) => checks.get(node) as QueueChecks,
    replica: (node: string, name: string) => replicas.get(node)?.get(`g-${name}`) as FakeReplica,
    bodies: (node: string) => bodies.get(node) as InMemoryBodyStore,
    down,
    garbled,
    calls: () => calls,
    hold,
  };
}

describe('QueueChecks', () => {
  it("reports every member's replica and passes when they agree", async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    const [report] = await c.on('id-2').check([record('orders')]);
    expect(report).toMatchObject({ vhost: '/', name: 'orders', ok: true, problems: [] });
    expect(report?.replicas).toEqual(
      NODES.map((nodeId) => ({
        nodeId,
        node: nodeId.replace('id-', 'styx-'),
        online: true,
        role: nodeId === 'id-1' ? 'leader' : 'follower',
        term: 2,
        appliedIndex: 9,
        commitIndex: 9,
        messages: 3,
        liveIds: 3,
        digest: liveIdsDigest([3, 4, 5]),
        missingBodies: 0,
        missingBodyIds: [],
        dedupeWindow: 1024,
      })),
    );
  });

  it('fails on a replica missing a body on its node', async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    c.bodies('id-3').delete('g-orders', 4);
    const [report] = await c.on('id-1').check([record('orders')]);
    expect(report?.ok).toBe(false);
    expect(report?.problems).toEqual([
      'styx-3 holds 1 live message(s) whose body is missing from its body store (first ids: 4)',
    ]);
  });

  it('fails on replicas at the same applied index that disagree', async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    c.replica('id-2', 'orders').ids = [3, 4];
    const [report] = await c.on('id-1').check([record('orders')]);
    expect(report?.ok).toBe(false);
    expect(report?.problems[0]).toMatch(
      /^replicas at applied index 9 disagree on their messages: styx-1 has 3/,
    );
  });

  it('fails, saying why, when a member does not answer, answers garbage or runs no replica', async () => {
    const c = cluster();
    c.hold('orders', [3], 9);
    c.down.add('id-2');
    c.garbled.add('id-3');
    const [report] = await c.on('id-1').check([record('orders', { members: [...NODES, 'id-4'] })]);
    expect(report?.ok).toBe(false);
    expect(report?.replicas.map((r) => [r.node, r.online])).toEqual([
      ['styx-1', true],
      ['styx-2', false],
      ['styx-3', false],
      ['id-4', false],
    ]);
    expect(report?.problems).toEqual([
      'the replica on styx-2 could not be checked: queue-check call to id-2 got no answer within 5000 ms',
      'the replica on styx-3 could not be checked: malformed queue check answer for group g-orders',
      'the replica on id-4 could not be checked: no route to id-4',
    ]);
  });

  it('asks again while the replicas are at different applied indexes, and compares them once aligned', async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    const lagging = c.replica('id-3', 'orders');
    lagging.applied = 8;
    lagging.ids = [3, 4];
    const first = c.on('id-1').check([record('orders')]);
    // The follower catches up before the second round: all three are then compared.
    setTimeout(() => {
      lagging.applied = 9;
      lagging.ids = [3, 4, 5];
    }, 50);
    const [report] = await first;
    expect(report?.ok).toBe(true);
    expect(report?.replicas.map((r) => (r.online ? r.appliedIndex : null))).toEqual([9, 9, 9]);
  });

  it('answers not compared, after a bounded number of attempts, when the replicas never line up', async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    c.hold('idle', [1], 4);
    // The leader applies a new entry before each time it is asked (a queue under steady
    // publishing): its followers are never at its index.
    let leaderApplied = 9;
    Object.defineProperty(c.replica('id-1', 'orders'), 'applied', { get: () => ++leaderApplied });
    const [report, idle] = await c.on('id-2').check([record('orders'), record('idle')]);
    expect(report).toMatchObject({
      name: 'orders',
      status: 'not_compared',
      ok: false,
      problems: [],
      attempts: ALIGN_ATTEMPTS,
    });
    const seen = report?.notCompared?.appliedIndexes.map((r) => [r.node, r.appliedIndex]);
    expect(seen?.slice(1)).toEqual([
      ['styx-2', 9],
      ['styx-3', 9],
    ]);
    expect(seen?.[0]?.[1]).toBeGreaterThan(9);
    expect(report?.notCompared?.reason).toMatch(
      new RegExp(
        `^the replicas were not at one applied index \\(styx-1 at \\d+, styx-2 at 9, styx-3 at 9\\): ` +
          `styx-1 could not be compared with any other replica \\(asked ${ALIGN_ATTEMPTS} time\\(s\\)\\)$`,
      ),
    );
    // The idle queue aligned at once: asked once, compared, ok.
    expect(idle).toMatchObject({ name: 'idle', status: 'ok', ok: true, attempts: 1 });
    // Bounded: each of the 3 nodes asked once per attempt (the idle queue rode along the first).
    expect(c.calls()).toBe(2 * ALIGN_ATTEMPTS);
  });

  it('reports a mismatch as failed even where other replicas were not compared', async () => {
    const c = cluster();
    c.hold('orders', [3, 4, 5], 9);
    c.replica('id-2', 'orders').ids = [3, 4];
    c.replica('id-3', 'orders').applied = 8;
    const [report] = await c.on('id-1').check([record('orders')]);
    expect(report).toMatchObject({ status: 'failed', ok: false, attempts: ALIGN_ATTEMPTS });
    expect(report?.notCompared).toBeUndefined();
    expect(report?.problems[0]).toMatch(/^replicas at applied index 9 disagree on their messages/);
  });

  it('asks each node once for every queue checked', async () => {
    const c = cluster();
    c.hold('a', [1], 2);
    c.hold('b', [1, 2], 3);
    const reports = await c.on('id-1').check([record('a'), record('b')]);
    expect(reports.map((r) => [r.name, r.ok])).toEqual([
      ['a', true],
      ['b', true],
    ]);
    expect(c.calls()).toBe(2);
  });

  it('refuses a queue that is not replicated, and leaves it out of a list', async () => {
    const c = cluster();
    c.hold('orders', [1], 2);
    const scratch = record('scratch', { durable: false });
    expect(c.on('id-1').refusal(scratch)).toBeInstanceOf(ChannelError);
    expect(c.on('id-1').refusal(record('orders'))).toBeUndefined();
    expect((await c.on('id-1').check([scratch, record('orders')])).map((r) => r.name)).toEqual(['orders']);
  });
});
