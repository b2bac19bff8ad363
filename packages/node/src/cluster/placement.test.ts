import { ReplyCode } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { NamePattern } from '../metadata/name-pattern.ts';
import { seededRandom as rng } from '../test-support/seeded-random.ts';
import {
  type Assignment,
  DEFAULT_QUORUM_GROUP_SIZE,
  growPlan,
  type LeaderTransfer,
  PlacementInputError,
  type PlacementMember,
  parseQueueKey,
  placeReplicas,
  type QueuePlacement,
  QuorumGroupSizeError,
  queueKey,
  rebalanceLeaders,
  shrinkPlan,
} from './placement.ts';

const RUNS = 400;

function int(r: () => number, lo: number, hi: number): number {
  return lo + Math.floor(r() * (hi - lo + 1));
}

function shuffled<T>(r: () => number, xs: readonly T[]): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = int(r, 0, i);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

function randomMembers(r: () => number, maxNodes = 7): PlacementMember[] {
  const n = int(r, 1, maxNodes);
  return Array.from({ length: n }, (_, i) => (r() < 0.25 ? { id: `n${i}`, online: false } : { id: `n${i}` }));
}

/** Random placements over the members plus the odd ghost (a node no longer a member). */
function randomAssignment(r: () => number, members: readonly PlacementMember[], maxQueues = 20): Assignment {
  const ids = [...members.map((m) => m.id), 'ghost'];
  const assignment = new Map<string, QueuePlacement>();
  const queues = int(r, 0, maxQueues);
  for (let q = 0; q < queues; q++) {
    const replicas = shuffled(r, ids).slice(0, int(r, 1, ids.length));
    const leader = r() < 0.85 ? replicas[int(r, 0, replicas.length - 1)] : undefined;
    assignment.set(
      queueKey({ vhost: r() < 0.5 ? '/' : 'v', name: `q${q}` }),
      leader === undefined ? { replicas } : { replicas, leader },
    );
  }
  return assignment;
}

function replicaCounts(members: readonly PlacementMember[], assignment: Assignment): Map<string, number> {
  const counts = new Map(members.map((m) => [m.id, 0]));
  for (const p of assignment.values()) {
    for (const id of p.replicas) if (counts.has(id)) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

function leaderCounts(members: readonly PlacementMember[], assignment: Assignment): Map<string, number> {
  const counts = new Map(members.filter((m) => m.online !== false).map((m) => [m.id, 0]));
  for (const p of assignment.values()) {
    if (p.leader !== undefined && counts.has(p.leader)) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  }
  return counts;
}

function spread(counts: ReadonlyMap<string, number>): number {
  const values = [...counts.values()];
  return values.length === 0 ? 0 : Math.max(...values) - Math.min(...values);
}

function sumOfSquares(counts: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const c of counts.values()) sum += c * c;
  return sum;
}

function applyTransfers(assignment: Assignment, transfers: readonly LeaderTransfer[]): Assignment {
  const next = new Map(assignment);
  for (const t of transfers) {
    const p = next.get(t.queueKey);
    if (p === undefined) throw new Error(`transfer of unknown queue ${t.queueKey}`);
    next.set(t.queueKey, { ...p, leader: t.to });
  }
  return next;
}

/** The least sum of squares of leader counts any choice of leaders among online replicas reaches. */
function bruteForceBest(members: readonly PlacementMember[], assignment: Assignment): number {
  const online = new Set(members.filter((m) => m.online !== false).map((m) => m.id));
  const choices: string[][] = [];
  for (const p of assignment.values()) {
    if (p.leader === undefined || !online.has(p.leader)) continue;
    choices.push([...new Set([p.leader, ...p.replicas.filter((id) => online.has(id))])]);
  }
  let best = Number.POSITIVE_INFINITY;
  const counts = new Map([...online].map((id) => [id, 0]));
  const walk = (i: number): void => {
    if (i === choices.length) {
      best = Math.min(best, sumOfSquares(counts));
      return;
    }
    for (const id of choices[i] ?? []) {
      counts.set(id, (counts.get(id) ?? 0) + 1);
      walk(i + 1);
      counts.set(id, (counts.get(id) ?? 0) - 1);
    }
  };
  walk(0);
  return best;
}

const Q = { vhost: '/', name: 'orders' };

describe('placeReplicas', () => {
  it('places 3 replicas by default, on a fresh cluster, with the leader among them', () => {
    const members = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
    const placed = placeReplicas({ queue: Q, members, assignment: new Map() });
    expect(DEFAULT_QUORUM_GROUP_SIZE).toBe(3);
    expect(placed.replicas).toHaveLength(3);
    expect(placed.replicas[0]).toBe(placed.leader);
  });

  it('takes the cluster size when smaller, and honours x-quorum-initial-group-size', () => {
    const two = [{ id: 'a' }, { id: 'b' }];
    expect(placeReplicas({ queue: Q, members: two, assignment: new Map() }).replicas.sort()).toEqual([
      'a',
      'b',
    ]);
    const five = ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id }));
    expect(placeReplicas({ queue: Q, members: five, assignment: new Map(), size: 5 }).replicas).toHaveLength(
      5,
    );
    expect(placeReplicas({ queue: Q, members: five, assignment: new Map(), size: 99 }).replicas).toHaveLength(
      5,
    );
    expect(placeReplicas({ queue: Q, members: five, assignment: new Map(), size: 1 }).replicas).toHaveLength(
      1,
    );
    expect(
      placeReplicas({ queue: Q, members: five, assignment: new Map(), defaultSize: 2 }).replicas,
    ).toHaveLength(2);
  });

  it('picks the least-loaded nodes, leaders breaking ties (the worked example)', () => {
    const members = ['a', 'b', 'c', 'd'].map((id) => ({ id }));
    const assignment = new Map<string, QueuePlacement>([
      ['x1', { replicas: ['a', 'b'], leader: 'a' }],
      ['x2', { replicas: ['a', 'b', 'c', 'd'], leader: 'a' }],
    ]);
    const placed = placeReplicas({ queue: Q, members, assignment });
    expect([...placed.replicas].sort()).toEqual(['b', 'c', 'd']);
    expect(['b', 'c', 'd']).toContain(placed.leader);
  });

  it('prefers online nodes and leads from an online one', () => {
    const members = [{ id: 'a', online: false }, { id: 'b' }, { id: 'c', online: false }, { id: 'd' }];
    const placed = placeReplicas({ queue: Q, members, assignment: new Map() });
    expect(placed.replicas).toHaveLength(3);
    expect(placed.replicas).toContain('b');
    expect(placed.replicas).toContain('d');
    expect(['b', 'd']).toContain(placed.leader);
  });

  it('ignores the queue’s own entry, so placing again gives the same answer', () => {
    const members = ['a', 'b', 'c', 'd'].map((id) => ({ id }));
    const first = placeReplicas({ queue: Q, members, assignment: new Map() });
    const again = placeReplicas({ queue: Q, members, assignment: new Map([[queueKey(Q), first]]) });
    expect(again).toEqual(first);
  });

  it('spreads equal-load first placements over the nodes by the queue name', () => {
    const members = ['a', 'b', 'c', 'd', 'e', 'f'].map((id) => ({ id }));
    const leaders = new Set<string>();
    for (let i = 0; i < 40; i++) {
      leaders.add(
        placeReplicas({ queue: { vhost: '/', name: `q${i}` }, members, assignment: new Map() }).leader,
      );
    }
    expect(leaders.size).toBe(members.length);
  });

  it('holds its properties over random memberships and assignments', () => {
    for (let seed = 1; seed <= RUNS; seed++) {
      const r = rng(seed);
      const members = randomMembers(r);
      const assignment = randomAssignment(r, members);
      const size = r() < 0.3 ? undefined : int(r, 1, 9);
      const queue = { vhost: '/', name: `new-${seed}` };
      const input =
        size === undefined ? { queue, members, assignment } : { queue, members, assignment, size };
      const placed = placeReplicas(input);
      const ids = members.map((m) => m.id);
      const online = new Set(members.filter((m) => m.online !== false).map((m) => m.id));
      const ctx = `seed ${seed}`;

      expect(new Set(placed.replicas).size, ctx).toBe(placed.replicas.length);
      expect(placed.replicas.length, ctx).toBe(Math.min(size ?? DEFAULT_QUORUM_GROUP_SIZE, members.length));
      for (const id of placed.replicas) expect(ids, ctx).toContain(id);
      expect(placed.replicas[0], ctx).toBe(placed.leader);
      // Online preferred: an offline replica only when every online node is already chosen.
      if (placed.replicas.some((id) => !online.has(id))) {
        for (const id of online) expect(placed.replicas, ctx).toContain(id);
      }
      if (placed.replicas.some((id) => online.has(id))) expect(online.has(placed.leader), ctx).toBe(true);
      // Least loaded: no unchosen online node holds fewer replicas than a chosen online one.
      const counts = replicaCounts(members, assignment);
      const chosenOnline = placed.replicas.filter((id) => online.has(id));
      const unchosenOnline = [...online].filter((id) => !placed.replicas.includes(id));
      for (const c of chosenOnline) {
        for (const u of unchosenOnline)
          expect(counts.get(c) ?? 0, ctx).toBeLessThanOrEqual(counts.get(u) ?? 0);
      }
      // Deterministic, whatever the map's insertion order.
      const reordered = new Map(shuffled(r, [...assignment]));
      expect(placeReplicas({ ...input, assignment: reordered }), ctx).toEqual(placed);
    }
  });

  it('keeps replicas per node within 1 when placing queues in sequence on a fresh cluster', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed);
      const members = Array.from({ length: int(r, 1, 9) }, (_, i) => ({ id: `n${i}` }));
      const assignment = new Map<string, QueuePlacement>();
      const queues = int(r, 1, 60);
      const fixedSize = r() < 0.5 ? undefined : int(r, 1, members.length + 1);
      for (let q = 0; q < queues; q++) {
        const queue = { vhost: '/', name: `q${q}` };
        const size = fixedSize ?? int(r, 1, members.length + 1);
        assignment.set(queueKey(queue), placeReplicas({ queue, members, assignment, size }));
        expect(spread(replicaCounts(members, assignment)), `seed ${seed} queue ${q}`).toBeLessThanOrEqual(1);
      }
    }
  });

  it('keeps leaders near even on a fresh cluster, and within 1 after a rebalance', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const members = Array.from({ length: int(r, 1, 9) }, (_, i) => ({ id: `n${i}` }));
      const assignment = new Map<string, QueuePlacement>();
      const queues = int(r, 1, 60);
      for (let q = 0; q < queues; q++) {
        const queue = { vhost: '/', name: `q${q}` };
        assignment.set(queueKey(queue), placeReplicas({ queue, members, assignment }));
      }
      // Placement alone keeps leaders within 2 of each other; one rebalance brings them within 1.
      expect(spread(leaderCounts(members, assignment)), `seed ${seed}`).toBeLessThanOrEqual(2);
      const balanced = applyTransfers(assignment, rebalanceLeaders({ members, assignment }));
      expect(spread(leaderCounts(members, balanced)), `seed ${seed}`).toBeLessThanOrEqual(1);
    }
  });

  it('refuses a bad x-quorum-initial-group-size with 406 and RabbitMQ’s text', () => {
    const members = [{ id: 'a' }];
    const cases: [number, string][] = [
      [0, '{value_zero,0}'],
      [-2, '{value_negative,-2}'],
      [2.5, '{unacceptable_type,double}'],
      [Number.NaN, '{unacceptable_type,double}'],
      [Number.POSITIVE_INFINITY, '{unacceptable_type,double}'],
    ];
    for (const [size, problem] of cases) {
      const attempt = (): unknown => placeReplicas({ queue: Q, members, assignment: new Map(), size });
      expect(attempt).toThrow(QuorumGroupSizeError);
      expect(attempt).toThrow(
        expect.objectContaining({
          code: 'QUORUM_GROUP_SIZE_INVALID',
          replyCode: ReplyCode.PRECONDITION_FAILED,
          message: `invalid arg 'x-quorum-initial-group-size' for queue 'orders' in vhost '/': ${problem}`,
        }),
      );
    }
    expect(new QuorumGroupSizeError(Q, 0).replyCode).toBe(406);
  });

  it('refuses broken input with PlacementInputError', () => {
    expect(() => placeReplicas({ queue: Q, members: [], assignment: new Map() })).toThrow(
      PlacementInputError,
    );
    expect(() =>
      placeReplicas({ queue: Q, members: [{ id: 'a' }, { id: 'a' }], assignment: new Map() }),
    ).toThrow('cluster member "a" is listed twice');
    expect(() =>
      placeReplicas({ queue: Q, members: [{ id: 'a' }], assignment: new Map(), defaultSize: 0 }),
    ).toThrow(PlacementInputError);
  });
});

describe('rebalanceLeaders', () => {
  it('follows a chain when no single transfer helps (the worked example)', () => {
    const members = ['a', 'b', 'c'].map((id) => ({ id }));
    const assignment = new Map<string, QueuePlacement>([
      ['q1', { replicas: ['a', 'b'], leader: 'a' }],
      ['q2', { replicas: ['a', 'b'], leader: 'a' }],
      ['q3', { replicas: ['b', 'c'], leader: 'b' }],
    ]);
    const transfers = rebalanceLeaders({ members, assignment });
    expect(transfers).toHaveLength(2);
    expect(spread(leaderCounts(members, applyTransfers(assignment, transfers)))).toBe(0);
    expect(transfers).toContainEqual({ queueKey: 'q3', from: 'b', to: 'c' });
  });

  it('gives leaders to a joined node once grow has given it replicas', () => {
    const members = ['a', 'b', 'c'].map((id) => ({ id }));
    let assignment = new Map<string, QueuePlacement>();
    for (let i = 0; i < 8; i++) {
      const queue = { vhost: '/', name: `q${i}` };
      assignment.set(queueKey(queue), placeReplicas({ queue, members, assignment }));
    }
    expect(rebalanceLeaders({ members, assignment })).toEqual([]);
    const joined = [...members, { id: 'd' }];
    for (const { queueKey: key, node } of growPlan({
      node: 'd',
      assignment,
      selector: 'all',
      strategy: 'all',
    })) {
      const p = assignment.get(key);
      if (p !== undefined) assignment.set(key, { ...p, replicas: [...p.replicas, node] });
    }
    const transfers = rebalanceLeaders({ members: joined, assignment });
    expect(transfers.length).toBe(2);
    for (const t of transfers) expect(t.to).toBe('d');
    assignment = new Map(applyTransfers(assignment, transfers));
    expect([...leaderCounts(joined, assignment).values()].sort()).toEqual([2, 2, 2, 2]);
  });

  it('never moves to an offline node, and leaves queues led by offline nodes alone', () => {
    const members = [{ id: 'a' }, { id: 'b', online: false }, { id: 'c' }];
    const assignment = new Map<string, QueuePlacement>([
      ['q1', { replicas: ['a', 'b'], leader: 'a' }],
      ['q2', { replicas: ['a', 'b'], leader: 'a' }],
      ['q3', { replicas: ['a', 'b', 'c'], leader: 'b' }],
      ['q4', { replicas: ['a', 'c'] }],
    ]);
    expect(rebalanceLeaders({ members, assignment })).toEqual([]);
  });

  it('plans a node back from a crash among 10,000 queues: it gets its third, nothing moves twice', () => {
    // What the metadata leader plans when a node of 3 returns: every queue led by the other two.
    const members = ['a', 'b', 'c'].map((id) => ({ id }));
    const assignment = new Map<string, QueuePlacement>();
    for (let i = 0; i < 10_000; i++) {
      assignment.set(`q${String(i).padStart(5, '0')}`, {
        replicas: ['a', 'b', 'c'],
        leader: i % 3 === 0 ? 'c' : 'b',
      });
    }
    const transfers = rebalanceLeaders({ members, assignment });
    expect(new Set(transfers.map((t) => t.queueKey)).size).toBe(transfers.length);
    for (const t of transfers) expect(t.to).toBe('a');
    expect([...leaderCounts(members, applyTransfers(assignment, transfers)).values()].sort()).toEqual([
      3333, 3333, 3334,
    ]);
    expect(transfers).toHaveLength(3333);
  });

  it('converges to the most even leaders the replicas allow, over random assignments', () => {
    for (let seed = 1; seed <= RUNS; seed++) {
      const r = rng(seed * 7919);
      const members = randomMembers(r, 5);
      const assignment = randomAssignment(r, members, 7);
      const transfers = rebalanceLeaders({ members, assignment });
      const ctx = `seed ${seed}`;
      const online = new Set(members.filter((m) => m.online !== false).map((m) => m.id));
      const keys = transfers.map((t) => t.queueKey);
      expect(new Set(keys).size, ctx).toBe(keys.length);
      for (const t of transfers) {
        const p = assignment.get(t.queueKey);
        expect(p?.leader, ctx).toBe(t.from);
        expect(online.has(t.from), ctx).toBe(true);
        expect(p?.replicas, ctx).toContain(t.to);
        expect(online.has(t.to), ctx).toBe(true);
        expect(t.to, ctx).not.toBe(t.from);
      }
      const after = applyTransfers(assignment, transfers);
      expect(rebalanceLeaders({ members, assignment: after }), ctx).toEqual([]);
      const before = leaderCounts(members, assignment);
      const counts = leaderCounts(members, after);
      expect(sumOfSquares(counts), ctx).toBe(bruteForceBest(members, assignment));
      expect(spread(counts), ctx).toBeLessThanOrEqual(spread(before));
      if (transfers.length === 0) expect(sumOfSquares(counts), ctx).toBe(sumOfSquares(before));
      expect(rebalanceLeaders({ members, assignment: new Map(shuffled(r, [...assignment])) }), ctx).toEqual(
        transfers,
      );
    }
  });

  it('evens leaders to within 1 when every online node holds every queue', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const r = rng(seed * 31);
      const members = randomMembers(r);
      const online = members.filter((m) => m.online !== false).map((m) => m.id);
      if (online.length === 0) continue;
      const assignment = new Map<string, QueuePlacement>();
      const queues = int(r, 0, 40);
      for (let q = 0; q < queues; q++) {
        const replicas = members.map((m) => m.id);
        assignment.set(`q${q}`, { replicas, leader: online[int(r, 0, online.length - 1)] ?? '' });
      }
      const after = applyTransfers(assignment, rebalanceLeaders({ members, assignment }));
      expect(spread(leaderCounts(members, after)), `seed ${seed}`).toBeLessThanOrEqual(1);
    }
  });
});

describe('growPlan', () => {
  const assignment = new Map<string, QueuePlacement>([
    [queueKey({ vhost: '/', name: 'orders' }), { replicas: ['a', 'b'], leader: 'a' }],
    [queueKey({ vhost: '/', name: 'orders.dlq' }), { replicas: ['a', 'b', 'c'], leader: 'b' }],
    [queueKey({ vhost: 'shop', name: 'carts' }), { replicas: ['a', 'd'], leader: 'a' }],
    [queueKey({ vhost: 'shop', name: 'orders' }), { replicas: ['b'], leader: 'b' }],
  ]);
  const keys = (changes: readonly { queueKey: string }[]): string[] =>
    changes.map((c) => parseQueueKey(c.queueKey)).map((q) => `${q.vhost}/${q.name}`);

  it('adds the node to every queue lacking it with strategy all', () => {
    const plan = growPlan({ node: 'd', assignment, selector: 'all', strategy: 'all' });
    expect(keys(plan)).toEqual(['//orders', '//orders.dlq', 'shop/orders']);
    for (const c of plan) expect(c.node).toBe('d');
  });

  it('adds only to queues with an even replica count with strategy even', () => {
    expect(keys(growPlan({ node: 'd', assignment, selector: 'all', strategy: 'even' }))).toEqual([
      '//orders',
    ]);
  });

  it('selects by a pattern on the name, or on name and vhost (the linear-time patterns are stateless)', () => {
    const prefix = NamePattern.compile('^orders');
    expect(keys(growPlan({ node: 'd', assignment, selector: prefix, strategy: 'all' }))).toEqual([
      '//orders',
      '//orders.dlq',
      'shop/orders',
    ]);
    expect(keys(growPlan({ node: 'd', assignment, selector: prefix, strategy: 'all' }))).toHaveLength(3);
    const selector = { name: NamePattern.compile('^orders$'), vhost: NamePattern.compile('^shop$') };
    expect(keys(growPlan({ node: 'e', assignment, selector, strategy: 'all' }))).toEqual(['shop/orders']);
  });

  it('refuses an unknown strategy and a malformed key', () => {
    expect(() =>
      growPlan({ node: 'd', assignment, selector: 'all', strategy: 'odd' as unknown as 'all' }),
    ).toThrow(PlacementInputError);
    expect(() =>
      growPlan({ node: 'd', assignment: new Map([['q', { replicas: [] }]]), selector: /q/, strategy: 'all' }),
    ).toThrow('malformed queue key "q"');
  });
});

describe('shrinkPlan', () => {
  it('removes the node’s replicas but never a last replica', () => {
    const assignment = new Map<string, QueuePlacement>([
      ['q1', { replicas: ['a', 'b'], leader: 'a' }],
      ['q2', { replicas: ['a'], leader: 'a' }],
      ['q3', { replicas: ['b', 'c'], leader: 'b' }],
    ]);
    expect(shrinkPlan({ node: 'a', assignment })).toEqual({
      remove: [{ queueKey: 'q1', node: 'a' }],
      skipped: [{ queueKey: 'q2', reason: 'last replica' }],
    });
    expect(shrinkPlan({ node: 'z', assignment })).toEqual({ remove: [], skipped: [] });
  });
});

describe('queueKey', () => {
  it('round-trips names holding any characters', () => {
    for (const q of [Q, { vhost: 'a/b', name: '"x"\u0000y' }, { vhost: '', name: '' }]) {
      expect(parseQueueKey(queueKey(q))).toEqual(q);
    }
    expect(queueKey({ vhost: 'a/', name: 'b' })).not.toBe(queueKey({ vhost: 'a', name: '/b' }));
    expect(() => parseQueueKey('["a"]')).toThrow(PlacementInputError);
  });
});
