import { InMemoryLog } from '@styx/raft';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EXPIRE_PIPELINE_MS, OWNER_GRACE_MS } from './queue-actor.ts';
import type { Delivery } from './queue-actor-test-support.ts';
import {
  deathOf,
  enqueueCommand,
  FakeTarget,
  GROUP,
  makeActor,
  OWNER,
  RecordingSinks,
  ScriptedLog,
} from './queue-actor-test-support.ts';
import { queueConfig, storedMessage, T0 } from './queue-test-harness.ts';
import type { QueueCommand, QueueConfig } from './types.ts';

/** Dead-letters at-most-once to exchange 'dlx', which routes everything to queue 'dlq'. */
const AT_MOST_ONCE: Partial<QueueConfig> = { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-most-once' };

function withDlq(): { sinks: RecordingSinks; dlq: FakeTarget } {
  const sinks = new RecordingSinks();
  const dlq = new FakeTarget('dlq');
  sinks.exchange('dlx', dlq);
  return { sinks, dlq };
}

/** Each copy the target kept: its newest x-death reason and its body. */
function deadLetterLog(dlq: FakeTarget): [string | undefined, Uint8Array][] {
  return dlq.kept.map((m) => [deathOf(m).reason, m.body]);
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('QueueActor on an in-memory log', () => {
  it('delivers stored bodies to the owner and deletes them once acked', async () => {
    const { sinks: routing, dlq } = withDlq();
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP), AT_MOST_ONCE, {}, routing);
    await actor.open();
    const owner = sinks.owner(OWNER);
    const m1 = storedMessage(3);
    const m2 = storedMessage(4);
    expect(await actor.enqueue(m1, undefined)).toEqual({ type: 'ok' });
    await actor.enqueue(m2, undefined);
    expect(store.size(GROUP)).toBe(2);
    expect(await actor.consume(OWNER, 'ctag', 0, false, false)).toEqual({ type: 'ok' });
    expect(owner.deliveries.map((d) => [d.tag, d.message])).toEqual([
      ['ctag', m1],
      ['ctag', m2],
    ]);
    expect(actor.counts()).toEqual({
      ready: 0,
      unacked: 2,
      readyBytes: 0,
      consumers: 1,
      deadLetterPending: 0,
      deadLetterPendingBytes: 0,
    });
    await actor.settle(OWNER, [owner.deliveries[0]?.id ?? 0]);
    expect(store.size(GROUP)).toBe(1);
    await actor.discard(OWNER, [owner.deliveries[1]?.id ?? 0]);
    expect(store.size(GROUP)).toBe(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(deadLetterLog(dlq)).toEqual([['rejected', m2.body]]);
  });

  it('redelivers returned messages with their delivery count', async () => {
    const { actor, sinks } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const owner = sinks.owner(OWNER);
    await actor.enqueue(storedMessage(), undefined);
    await actor.consume(OWNER, 'ctag', 1, false, false);
    const first = owner.deliveries[0] as Delivery;
    await actor.returnMessages(OWNER, [first.id]);
    expect(owner.deliveries[1]).toMatchObject({ id: first.id, redelivered: true, deliveryCount: 1 });
  });

  it('answers basic.get with the body, deleting it at once for noAck', async () => {
    const { actor, store } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const m1 = storedMessage(5);
    await actor.enqueue(m1, undefined);
    await actor.enqueue(storedMessage(6), undefined);
    const got = await actor.get(OWNER, true);
    expect(got).toMatchObject({ redelivered: false, deliveryCount: 0, messageCount: 1, message: m1 });
    expect(store.size(GROUP)).toBe(1);
    const held = await actor.get(OWNER, false);
    expect(held?.messageCount).toBe(0);
    expect(store.size(GROUP)).toBe(1);
    expect(await actor.get(OWNER, false)).toBeUndefined();
    expect(await actor.purge()).toBe(0);
  });

  it('fires its timer at the deadline and dead-letters the expired messages', async () => {
    const { sinks, dlq } = withDlq();
    const { actor, store } = makeActor(
      new InMemoryLog(GROUP),
      { ...AT_MOST_ONCE, messageTtl: 1000 },
      {},
      sinks,
    );
    await actor.open();
    const m1 = storedMessage(1);
    const m2 = storedMessage(2);
    await actor.enqueue(m1, 100);
    await actor.enqueue(m2, undefined);
    await vi.advanceTimersByTimeAsync(99);
    expect(dlq.received).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(deadLetterLog(dlq)).toEqual([['expired', m1.body]]);
    await vi.advanceTimersByTimeAsync(900);
    expect(deadLetterLog(dlq)).toEqual([
      ['expired', m1.body],
      ['expired', m2.body],
    ]);
    expect(actor.counts().ready).toBe(0);
    expect(store.size(GROUP)).toBe(0);
  });

  it('reports x-expires once the queue has been unused for that long', async () => {
    const { actor, sinks } = makeActor(new InMemoryLog(GROUP), { expires: 5000 });
    await actor.open();
    await vi.advanceTimersByTimeAsync(3000);
    await actor.touch();
    await vi.advanceTimersByTimeAsync(4999);
    expect(sinks.expiredCalls).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(sinks.expiredCalls).toBe(1);
  });

  it('dead-letters a message refused by reject-publish-dlx (at-most-once)', async () => {
    const { sinks, dlq } = withDlq();
    const { actor, store } = makeActor(
      new InMemoryLog(GROUP),
      { ...AT_MOST_ONCE, maxLength: 1, overflow: 'reject-publish-dlx' },
      {},
      sinks,
    );
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    const refused = storedMessage(7);
    expect(await actor.enqueue(refused, undefined)).toEqual({ type: 'rejected', reason: 'maxlen' });
    await vi.advanceTimersByTimeAsync(0);
    expect(deadLetterLog(dlq)).toEqual([['maxlen', refused.body]]);
    expect(store.size(GROUP)).toBe(1);
  });

  it('returns the messages of an owner that no longer resolves', async () => {
    const { actor } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    await actor.consume('gone/1', 'ctag', 0, false, false);
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(0);
    expect(actor.counts()).toMatchObject({ ready: 1, unacked: 0, readyBytes: 10, consumers: 0 });
  });

  it('names the queue when a consume is refused for exclusivity', async () => {
    const { actor } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    await actor.consume(OWNER, 'a', 0, false, true);
    const reply = await actor.consume('conn-2/1', 'b', 0, false, false);
    expect(reply.type).toBe('locked');
    expect(reply.type === 'locked' && reply.text).toMatch(/^queue 'q' in vhost '\/' in exclusive use/);
  });

  it('delete cancels every consumer and drops every body', async () => {
    const { actor, sinks, store } = makeActor(new InMemoryLog(GROUP));
    await actor.open();
    const owner = sinks.owner(OWNER);
    await actor.consume(OWNER, 'ctag', 1, false, false);
    await actor.enqueue(storedMessage(), undefined);
    await actor.enqueue(storedMessage(), undefined);
    await actor.enqueue(storedMessage(), undefined);
    expect(await actor.delete()).toBe(2);
    expect(owner.cancelled).toEqual(['ctag']);
    expect(store.size(GROUP)).toBe(0);
    await expect(actor.enqueue(storedMessage(), undefined)).rejects.toMatchObject({ code: 'LOG_CLOSED' });
  });
});

describe('QueueActor roles and timers', () => {
  it('records the initial config as the first entry of a fresh group', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { maxLength: 3 });
    await actor.open();
    expect(log.proposed).toEqual([{ type: 'setConfig', config: queueConfig({ maxLength: 3 }) }]);
    expect(actor.config().maxLength).toBe(3);
  });

  it('keeps bodies in step on a follower without executing effects', async () => {
    const log = new ScriptedLog('follower');
    const { actor, sinks, store } = makeActor(log);
    const owner = sinks.owner(OWNER);
    await actor.open();
    log.append({ type: 'setConfig', config: queueConfig({ messageTtl: 100 }) });
    log.append(enqueueCommand(storedMessage()));
    log.append({ type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 0, noAck: false, exclusive: false });
    expect(owner.deliveries).toEqual([]);
    expect(store.size(GROUP)).toBe(1);
    log.append({ type: 'settle', owner: OWNER, ids: [2] });
    expect(store.size(GROUP)).toBe(0);
    await vi.advanceTimersByTimeAsync(1000);
    expect(log.proposed).toEqual([]);
  });

  it('re-derives its duties on becoming leader: timer, redeliveries, vanished owners', async () => {
    const log = new ScriptedLog('follower');
    const { sinks: routing, dlq } = withDlq();
    const { actor, sinks } = makeActor(log, {}, {}, routing);
    const owner = sinks.owner(OWNER);
    await actor.open();
    const m1 = storedMessage(1);
    log.append({ type: 'setConfig', config: queueConfig({ ...AT_MOST_ONCE, messageTtl: 500 }) });
    log.append({ type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 1, noAck: false, exclusive: false });
    log.append(enqueueCommand(m1));
    log.append({ type: 'consume', owner: 'gone/1', tag: 'g', prefetch: 1, noAck: false, exclusive: false });
    log.append(enqueueCommand(storedMessage(2)));
    log.append(enqueueCommand(storedMessage(3)));
    expect(actor.counts()).toMatchObject({ ready: 1, unacked: 2 });

    log.setRole('leader');
    expect(owner.deliveries).toEqual([
      { tag: 'ctag', id: 3, redelivered: true, deliveryCount: 0, message: m1 },
    ]);
    await vi.advanceTimersByTimeAsync(0);
    // An owner that does not resolve keeps its messages for the grace (its node may be back).
    expect(log.proposed).toEqual([]);
    expect(actor.counts()).toMatchObject({ ready: 1, unacked: 2, consumers: 2 });

    await vi.advanceTimersByTimeAsync(500);
    expect(log.proposed.map((c) => c.type)).toEqual(['expire']);
    await vi.advanceTimersByTimeAsync(OWNER_GRACE_MS - 500);
    expect(log.proposed).toEqual([{ type: 'expire' }, { type: 'ownerDown', owner: 'gone/1' }]);
    expect(actor.counts()).toMatchObject({ ready: 0, unacked: 1, consumers: 1 });
    expect(dlq.kept.map((m) => deathOf(m).reason)).toEqual(['expired', 'expired']);
  });

  it('stops its timer when it loses leadership', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100 });
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    log.setRole('follower');
    await vi.advanceTimersByTimeAsync(1000);
    expect(log.proposed.map((c) => c.type)).toEqual(['setConfig', 'enqueue']);
  });

  it('does not replay effects while the log replays at open', async () => {
    const history: QueueCommand[] = [
      { type: 'setConfig', config: queueConfig() },
      { type: 'consume', owner: OWNER, tag: 'ctag', prefetch: 0, noAck: false, exclusive: false },
      enqueueCommand(storedMessage()),
    ];
    const log = new ScriptedLog('leader', history);
    const { actor, sinks } = makeActor(log);
    const owner = sinks.owner(OWNER);
    await actor.open();
    // Only the re-derived redelivery, not the replayed original.
    expect(owner.deliveries).toHaveLength(1);
    expect(owner.deliveries[0]).toMatchObject({ id: 3, redelivered: true });
    expect(log.proposed).toEqual([]);
  });

  it('proposes expire again every EXPIRE_PIPELINE_MS while earlier ones wait for their commit, and stops once nothing is due', async () => {
    const { sinks, dlq } = withDlq();
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100, ...AT_MOST_ONCE }, {}, sinks);
    await actor.open();
    await actor.enqueue(storedMessage(1), undefined); // due at +100
    await vi.advanceTimersByTimeAsync(3);
    await actor.enqueue(storedMessage(2), undefined); // due at +103
    await vi.advanceTimersByTimeAsync(30);
    await actor.enqueue(storedMessage(3), undefined); // due at +133
    // From here on commits take long (a loaded node): nothing applies until commitHeld().
    log.holding = true;
    const expires = (): number => log.proposed.filter((c) => c.type === 'expire').length;
    await vi.advanceTimersByTimeAsync(67); // +100: the first is due
    expect(expires()).toBe(1);
    // Within the interval the entry just proposed is fresh enough: no second one yet.
    await vi.advanceTimersByTimeAsync(EXPIRE_PIPELINE_MS - 1);
    expect(expires()).toBe(1);
    // The second message came due at +103 and the only entry (+100) cannot expire it: another.
    await vi.advanceTimersByTimeAsync(1);
    expect(expires()).toBe(2);
    // Still nothing applied, yet the third (due +133) gets an entry within the interval too.
    await vi.advanceTimersByTimeAsync(33); // +138: the third came due at +133
    expect(expires()).toBeGreaterThan(2);
    // One per interval at most, however long the commits take.
    expect(expires()).toBeLessThanOrEqual(1 + Math.ceil(38 / EXPIRE_PIPELINE_MS));
    expect(actor.counts().ready).toBe(3);
    log.holding = false;
    log.commitHeld();
    await vi.advanceTimersByTimeAsync(0);
    expect(actor.counts().ready).toBe(0);
    expect(dlq.kept.map((m) => m.body)).toEqual([
      storedMessage(1).body,
      storedMessage(2).body,
      storedMessage(3).body,
    ]);
    // Nothing due any more: the timer stops proposing.
    const settled = expires();
    await vi.advanceTimersByTimeAsync(10 * EXPIRE_PIPELINE_MS);
    expect(expires()).toBe(settled);
  });

  it('proposes no expire while entries proposed since the deadline will expire what is due', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100 });
    await actor.open();
    await actor.enqueue(storedMessage(1), undefined);
    log.holding = true;
    await vi.advanceTimersByTimeAsync(100);
    expect(log.proposed.filter((c) => c.type === 'expire')).toHaveLength(1);
    // A publisher proposes an entry every millisecond: each expires what is due by its ts.
    for (let i = 0; i < 4 * EXPIRE_PIPELINE_MS; i++) {
      void actor.enqueue(storedMessage(2), undefined);
      await vi.advanceTimersByTimeAsync(1);
    }
    expect(log.proposed.filter((c) => c.type === 'expire')).toHaveLength(1);
    log.holding = false;
    log.commitHeld();
    await vi.advanceTimersByTimeAsync(0);
    expect(actor.counts().ready).toBe(4 * EXPIRE_PIPELINE_MS);
  });

  it('never proposes expire before the deadline when the deadline moves later', async () => {
    const log = new ScriptedLog('leader');
    const { actor } = makeActor(log, { messageTtl: 100 });
    await actor.open();
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(50);
    await actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(10);
    await actor.get(OWNER, true);
    // The timer armed for the first message fires at +100 and re-arms for +150 without proposing.
    await vi.advanceTimersByTimeAsync(40);
    expect(log.proposed.filter((c) => c.type === 'expire')).toEqual([]);
    await vi.advanceTimersByTimeAsync(49);
    expect(log.proposed.filter((c) => c.type === 'expire')).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(log.proposed.filter((c) => c.type === 'expire')).toHaveLength(1);
    expect(actor.counts().ready).toBe(0);
  });
});
