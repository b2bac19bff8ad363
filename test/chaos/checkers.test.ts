import { describe, expect, it } from 'vitest';
import type { CheckTopology } from './checkers.ts';
import {
  checkAll,
  checkDeadLetters,
  checkOrder,
  checkRedelivered,
  checkReplicas,
  checkTotalQueue,
  formatOp,
  windowFor,
} from './checkers.ts';
import type { DeathRecord, Intent, Op, OpInput } from './history.ts';

// Each checker is shown to pass a correct history and to fail each way it claims to catch, on small
// hand-written histories: a checker that cannot fail proves nothing about the broker.

const TOPOLOGY: CheckTopology = {
  deadLetterQueues: { rej: 'rej.dlq', ttl: 'ttl.dlq' },
  orderedQueues: ['work', 'rej'],
};

/** A tiny history builder: each call appends one op, 10 ms after the previous. */
function history() {
  const ops: Op[] = [];
  const add = (input: OpInput): typeof api => {
    ops.push({ index: ops.length, time: ops.length * 10, ...input });
    return api;
  };
  const api = {
    ops,
    publish(
      id: string,
      queue: string,
      outcome: 'ok' | 'fail' | 'unknown' | null,
      intent: Intent = 'ack',
      channel?: number,
    ) {
      const process = id.split(':')[0] as string;
      add({
        type: 'invoke',
        f: 'publish',
        process,
        queue,
        id,
        intent,
        ...(channel === undefined ? {} : { channel }),
      });
      return outcome === null ? api : add({ type: outcome, f: 'publish', process, queue, id, intent });
    },
    deliver(id: string, queue: string, extra: { redelivered?: boolean; death?: DeathRecord | null } = {}) {
      return add({
        type: 'ok',
        f: 'deliver',
        process: `c-${queue}`,
        queue,
        id,
        redelivered: false,
        ...extra,
      });
    },
    ack(id: string, queue: string) {
      return add({ type: 'ok', f: 'ack', process: `c-${queue}`, queue, id });
    },
    consume(id: string, queue: string, extra: { redelivered?: boolean; death?: DeathRecord | null } = {}) {
      return api.deliver(id, queue, extra).ack(id, queue);
    },
    reject(id: string, queue: string) {
      return add({ type: 'ok', f: 'reject', process: `c-${queue}`, queue, id });
    },
    fault(kind: string) {
      return add({ type: 'info', f: 'fault', process: 'nemesis', value: { n: 1, kind } });
    },
    heal() {
      return add({ type: 'info', f: 'heal', process: 'nemesis', value: { n: 1, kind: 'kill' } });
    },
  };
  return api;
}

const death = (queue: string, reason: string, overrides: Partial<DeathRecord> = {}): DeathRecord => ({
  queue,
  reason,
  count: 1,
  exchange: '',
  routingKeys: [queue],
  firstQueue: queue,
  firstReason: reason,
  entries: 1,
  ...overrides,
});

describe('total queue', () => {
  it('holds when every confirmed message is consumed, and failed or unknown ones may be missing', () => {
    const h = history()
      .publish('p1:0', 'work', 'ok')
      .publish('p1:1', 'work', 'fail')
      .publish('p1:2', 'work', 'unknown')
      .publish('p1:3', 'work', 'unknown')
      .consume('p1:0', 'work')
      .consume('p1:3', 'work');
    const result = checkTotalQueue(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts).toMatchObject({ confirmed: 1, failed: 1, unknown: 2, unknownConsumed: 1, lost: 0 });
  });

  it('fails on a confirmed message never consumed (lost), and on one delivered but never acked', () => {
    const h = history()
      .publish('p1:0', 'work', 'ok')
      .publish('p1:1', 'work', 'ok')
      .publish('p1:2', 'work', 'ok')
      .consume('p1:0', 'work')
      .deliver('p1:2', 'work');
    const result = checkTotalQueue(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.counts.lost).toBe(2);
    expect(result.problems.map((p) => [p.kind, p.id])).toEqual([
      ['lost', 'p1:1'],
      ['lost', 'p1:2'],
    ]);
  });

  it('counts a message consumed from its dead-letter queue as consumed', () => {
    const h = history().publish('p1:0', 'rej', 'ok', 'reject').deliver('p1:0', 'rej').reject('p1:0', 'rej');
    h.consume('p1:0', 'rej.dlq', { death: death('rej', 'rejected') });
    expect(checkTotalQueue(h.ops, TOPOLOGY).valid).toBe(true);
  });

  it('fails on a message nobody published, and on one delivered from a queue it was never sent to', () => {
    const h = history()
      .publish('p1:0', 'work', 'ok')
      .consume('p1:0', 'work')
      .consume('ghost:7', 'work')
      .publish('p1:1', 'work', 'ok')
      .consume('p1:1', 'rej');
    const result = checkTotalQueue(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.counts.unexpected).toBe(2);
    expect(result.problems.map((p) => p.detail)).toEqual([
      'delivered, but no publisher ever sent this id',
      'published to work but delivered from rej',
    ]);
  });

  it('counts duplicates without failing, and tells those that came back after an ack', () => {
    const h = history()
      .publish('p1:0', 'work', 'ok')
      .consume('p1:0', 'work')
      .consume('p1:0', 'work', { redelivered: true })
      .publish('p1:1', 'work', 'ok')
      .deliver('p1:1', 'work')
      .deliver('p1:1', 'work', { redelivered: true })
      .ack('p1:1', 'work');
    const result = checkTotalQueue(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts).toMatchObject({ duplicates: 1, redeliveredAfterAck: 1, redeliveries: 2 });
  });

  it('reports a nacked publish that was delivered anyway, without calling it unexpected', () => {
    const h = history().publish('p1:0', 'work', 'fail').consume('p1:0', 'work');
    const result = checkTotalQueue(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts.nackedButDelivered).toBe(1);
  });
});

describe('dead letters', () => {
  it('holds when every rejected and expired message is in its DLQ with a right x-death', () => {
    const h = history()
      .publish('pr:0', 'rej', 'ok', 'reject')
      .publish('pr:1', 'rej', 'ok', 'ack')
      .publish('pt:0', 'ttl', 'ok', 'expire')
      .deliver('pr:0', 'rej')
      .reject('pr:0', 'rej')
      .consume('pr:1', 'rej')
      .consume('pr:0', 'rej.dlq', { death: death('rej', 'rejected') })
      .consume('pt:0', 'ttl.dlq', { death: death('ttl', 'expired') });
    const result = checkDeadLetters(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts).toMatchObject({ expected: 2, deadLettered: 2, missing: 0 });
  });

  it('fails on a confirmed rejected message that never reached its DLQ', () => {
    const h = history().publish('pr:0', 'rej', 'ok', 'reject').deliver('pr:0', 'rej').reject('pr:0', 'rej');
    const result = checkDeadLetters(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.problems[0]).toMatchObject({ kind: 'missing-dead-letter', id: 'pr:0' });
  });

  it('fails on an expired message that reached the wrong DLQ', () => {
    const h = history()
      .publish('pt:0', 'ttl', 'ok', 'expire')
      .consume('pt:0', 'rej.dlq', { death: death('ttl', 'expired') });
    expect(checkDeadLetters(h.ops, TOPOLOGY).problems.map((p) => p.kind)).toContain('missing-dead-letter');
  });

  it.each([
    ['no header', null, 'no x-death header'],
    ['the wrong queue', death('work', 'rejected'), 'x-death queue work, expected rej'],
    ['the wrong reason', death('rej', 'expired'), 'x-death reason expired, expected rejected'],
    ['a zero count', death('rej', 'rejected', { count: 0 }), 'x-death count 0'],
    [
      'routing keys without the source',
      death('rej', 'rejected', { routingKeys: ['x'] }),
      'x-death routing-keys ["x"] lack rej',
    ],
    [
      'a wrong first-death queue',
      death('rej', 'rejected', { firstQueue: 'other' }),
      'x-first-death-queue other',
    ],
  ])('fails on an x-death with %s', (_name, record, detail) => {
    const h = history()
      .publish('pr:0', 'rej', 'ok', 'reject')
      .deliver('pr:0', 'rej')
      .reject('pr:0', 'rej')
      .consume('pr:0', 'rej.dlq', { death: record });
    const result = checkDeadLetters(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.problems).toEqual([expect.objectContaining({ kind: 'bad-x-death', detail })]);
  });

  it('fails on a message meant to be acked that was dead-lettered', () => {
    const h = history()
      .publish('pr:0', 'rej', 'ok', 'ack')
      .consume('pr:0', 'rej.dlq', { death: death('rej', 'rejected') });
    expect(checkDeadLetters(h.ops, TOPOLOGY).problems[0]).toMatchObject({ kind: 'unexpected-dead-letter' });
  });
});

describe('order', () => {
  it('holds for publish order per publisher, interleaved publishers and gaps', () => {
    const h = history();
    for (const id of ['a:0', 'b:0', 'a:1', 'a:3', 'b:1', 'b:5'])
      h.publish(id, 'work', 'ok').consume(id, 'work');
    expect(checkOrder(h.ops, TOPOLOGY).valid).toBe(true);
  });

  it('fails on a first delivery that overtakes an earlier publish', () => {
    const h = history().consume('a:0', 'work').consume('a:2', 'work').consume('a:1', 'work');
    const result = checkOrder(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.problems[0]).toMatchObject({ kind: 'out-of-order', id: 'a:1', otherId: 'a:2' });
  });

  it('allows redeliveries and repeats out of order, but not a fresh message behind them', () => {
    const ok = history()
      .consume('a:0', 'work')
      .deliver('a:1', 'work')
      .consume('a:2', 'work')
      .consume('a:1', 'work', { redelivered: true })
      .consume('a:0', 'work')
      .consume('a:3', 'work');
    expect(checkOrder(ok.ops, TOPOLOGY).valid).toBe(true);
    const bad = history()
      .consume('a:0', 'work')
      .consume('a:3', 'work', { redelivered: true })
      .consume('a:5', 'work');
    bad.consume('a:4', 'work');
    expect(checkOrder(bad.ops, TOPOLOGY).counts.outOfOrder).toBe(1);
  });

  it('compares messages of one channel only: a publish left behind by a dead channel may land late', () => {
    const published = () =>
      history()
        .publish('a:1', 'work', 'unknown', 'ack', 1)
        .publish('a:2', 'work', 'ok', 'ack', 2)
        .publish('a:3', 'work', 'ok', 'ack', 2);
    const across = published().consume('a:2', 'work').consume('a:1', 'work').consume('a:3', 'work');
    expect(checkOrder(across.ops, TOPOLOGY).valid).toBe(true);
    const within = published().consume('a:3', 'work').consume('a:2', 'work');
    expect(checkOrder(within.ops, TOPOLOGY).problems).toEqual([
      expect.objectContaining({ id: 'a:2', otherId: 'a:3' }),
    ]);
  });

  it('does not check queues outside the topology (a DLQ fed by a hand-off)', () => {
    const h = history().consume('a:2', 'rej.dlq').consume('a:1', 'rej.dlq');
    expect(checkOrder(h.ops, TOPOLOGY).valid).toBe(true);
  });
});

describe('redelivery flag', () => {
  it('holds when every delivery after the first of a message from a queue is marked redelivered', () => {
    const h = history()
      .publish('p:0', 'work', 'ok')
      .publish('p:1', 'work', 'ok')
      .deliver('p:0', 'work')
      .deliver('p:1', 'work')
      .consume('p:0', 'work', { redelivered: true })
      .consume('p:1', 'work', { redelivered: true })
      .consume('p:1', 'work', { redelivered: true });
    const result = checkRedelivered(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts).toMatchObject({ deliveredAgain: 3, flagged: 3, unflagged: 0 });
  });

  it('fails on a message delivered again from the same queue without the flag, whoever got it', () => {
    const h = history().publish('p:0', 'work', 'ok').deliver('p:0', 'work').consume('p:0', 'work');
    // The final sweep (process drain) counts as much as the workload's consumers.
    h.publish('p:1', 'work', 'ok').deliver('p:1', 'work');
    h.ops.push({
      index: h.ops.length,
      time: 1_000,
      type: 'ok',
      f: 'deliver',
      process: 'drain',
      queue: 'work',
      id: 'p:1',
      redelivered: false,
    });
    const result = checkRedelivered(h.ops, TOPOLOGY);
    expect(result.valid).toBe(false);
    expect(result.problems.map((p) => [p.kind, p.id, p.queue])).toEqual([
      ['redelivered-unflagged', 'p:0', 'work'],
      ['redelivered-unflagged', 'p:1', 'work'],
    ]);
    expect(result.problems[1]?.detail).toContain('by drain');
    // Even when the first delivery was acked (an ack lost with its connection brings it back).
    const afterAck = history().publish('p:0', 'work', 'ok').consume('p:0', 'work').consume('p:0', 'work');
    expect(checkRedelivered(afterAck.ops, TOPOLOGY).valid).toBe(false);
  });

  it('counts, not fails, a first delivery of a message in another queue and a second dead-letter copy', () => {
    const h = history()
      .publish('p:0', 'rej', 'ok', 'reject')
      .deliver('p:0', 'rej')
      .reject('p:0', 'rej')
      .consume('p:0', 'rej.dlq', { death: death('rej', 'rejected') })
      .consume('p:0', 'rej.dlq', { death: death('rej', 'rejected') });
    const result = checkRedelivered(h.ops, TOPOLOGY);
    expect(result.valid).toBe(true);
    expect(result.counts).toMatchObject({ deliveredAgain: 1, dlqUnflaggedCopies: 1, unflagged: 0 });
  });

  it('is one of the checks every run makes', () => {
    const h = history().publish('p:0', 'work', 'ok').deliver('p:0', 'work').consume('p:0', 'work');
    const redelivery = checkAll(h.ops, TOPOLOGY).find((c) => c.checker === 'redelivery');
    expect(redelivery?.valid).toBe(false);
  });
});

describe('replica check', () => {
  const answer = (value: unknown): Op => ({
    index: 0,
    time: 0,
    type: 'info',
    f: 'replica-check',
    process: 'harness',
    value,
  });

  it('holds when every node answered ok, and counts a 404 (no such endpoint) as unavailable', () => {
    const ok = checkReplicas([answer({ node: 'n1', status: 200, ok: true, bad: [] })]);
    expect(ok).toMatchObject({ valid: true, counts: { nodes: 1, ok: 1, unavailable: 0 } });
    const missing = checkReplicas([answer({ node: 'n1', status: 404, error: 'not found' })]);
    expect(missing).toMatchObject({ valid: true, counts: { nodes: 1, ok: 0, unavailable: 1 } });
    expect(checkReplicas([]).counts.nodes).toBe(0);
  });

  it('fails on a node that says a queue is not ok, and on one that did not answer', () => {
    const bad = checkReplicas([
      answer({
        node: 'n2',
        status: 503,
        ok: false,
        bad: [{ vhost: '/', name: 'chaos.work.1', problems: ['n3 is a learner', 'n3 is behind'] }],
      }),
      answer({ node: 'n3', status: 0, error: 'ECONNREFUSED' }),
    ]);
    expect(bad.valid).toBe(false);
    expect(bad.problems.map((p) => [p.kind, p.queue ?? '', p.detail])).toEqual([
      ['replica-not-ok', 'chaos.work.1', 'n2 (HTTP 503): n3 is a learner; n3 is behind'],
      ['replica-check-failed', '', 'n3: HTTP 0 ECONNREFUSED'],
    ]);
  });
});

describe('history window', () => {
  it('shows the problem message, its neighbours and the faults around it, nothing else', () => {
    const h = history();
    for (let i = 0; i < 20; i++) h.publish(`p:${i}`, 'work', 'ok');
    h.fault('kill');
    for (let i = 0; i < 20; i++) if (i !== 7) h.consume(`p:${i}`, 'work');
    h.heal();
    const problem = checkTotalQueue(h.ops, TOPOLOGY).problems[0];
    expect(problem).toMatchObject({ kind: 'lost', id: 'p:7' });
    const window = windowFor(h.ops, problem as NonNullable<typeof problem>);
    const ids = new Set(window.flatMap((op) => (op.id === undefined ? [] : [op.id])));
    expect([...ids].sort()).toEqual(['p:6', 'p:7', 'p:8']);
    expect(window.map((op) => op.f)).toContain('fault');
    expect(formatOp(window.find((op) => op.id === 'p:7') as Op)).toMatch(
      /^0\.\d+s #\d+ p invoke publish work p:7/,
    );
  });
});
