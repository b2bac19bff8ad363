import { describe, expect, it } from 'vitest';
import { QueueSnapshotError } from './errors.ts';
import { QueueMachine } from './queue-machine.ts';
import {
  deadLettered,
  deliveredIds,
  HARNESS_CONFIG,
  handedOff,
  MachineHarness,
  storedMessage,
  T0,
} from './queue-test-harness.ts';
import type { QueueConfig, RemovalTotals } from './types.ts';

const A = 'conn-a/1';
const ALO: Partial<QueueConfig> = { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-least-once' };
const ZERO: RemovalTotals = { rejected: 0, delivery_limit: 0, expired: 0, maxlen: 0 };

function totals(partial: Partial<RemovalTotals>): RemovalTotals {
  return { ...ZERO, ...partial };
}

describe('at-least-once dead-lettering: every trigger makes the message pending', () => {
  it('reject / nack without requeue → rejected, with the entry ts as its time', () => {
    const h = new MachineHarness(ALO);
    h.consume(A, 'c');
    const [id] = h.enqueueMany(1, 7);
    h.advance(1234);
    const result = h.apply({ type: 'discard', owner: A, ids: [id as number] });
    expect(handedOff(result)).toEqual([id]);
    expect(deadLettered(result)).toEqual([]);
    // The body stays until the hand-off settles.
    expect(result.removed).toEqual([]);
    expect(h.machine.pendingDeadLetter(id as number)).toEqual({
      id,
      reason: 'rejected',
      size: 7,
      deadLetteredAt: T0 + 1234,
    });
    expect(h.machine.counts()).toMatchObject({
      ready: 0,
      unacked: 0,
      deadLetterPending: 1,
      deadLetterPendingBytes: 7,
    });
    expect(h.machine.removalTotals()).toEqual(totals({ rejected: 1 }));
  });

  it('TTL → expired', () => {
    const h = new MachineHarness({ ...ALO, messageTtl: 100 });
    const [id] = h.enqueueMany(1);
    h.advance(100);
    const result = h.apply({ type: 'expire' });
    expect(handedOff(result)).toEqual([id]);
    expect(h.machine.pendingDeadLetter(id as number)?.reason).toBe('expired');
    expect(h.machine.pendingDeadLetter(id as number)?.deadLetteredAt).toBe(T0 + 100);
  });

  it('drop-head overflow → maxlen', () => {
    const h = new MachineHarness({ ...ALO, maxLength: 2 });
    h.enqueueMany(2);
    const result = h.enqueue();
    expect(handedOff(result)).toEqual([1]);
    expect(h.machine.pendingDeadLetter(1)?.reason).toBe('maxlen');
    expect(h.machine.counts()).toMatchObject({ ready: 2, deadLetterPending: 1 });
  });

  it('reject-publish-dlx → the refused publish itself, pending under its entry index; the publisher is refused', () => {
    const h = new MachineHarness({ ...ALO, maxLength: 1, overflow: 'reject-publish-dlx' });
    h.enqueue();
    const result = h.apply({ type: 'enqueue', size: 5, ttl: undefined, message: storedMessage(5) });
    expect(result.reply).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(handedOff(result)).toEqual([2]);
    expect(h.machine.isPendingDeadLetter(2)).toBe(true);
    expect(h.machine.pendingDeadLetter(2)).toMatchObject({ reason: 'maxlen', size: 5 });
    expect(h.machine.counts()).toMatchObject({ ready: 1, deadLetterPending: 1, deadLetterPendingBytes: 5 });
  });

  it.each([
    ['nack with requeue', 'return'],
    ['channel closed / connection lost', 'ownerDown'],
  ] as const)('delivery limit → delivery_limit, counting every return (%s)', (_name, how) => {
    const h = new MachineHarness({ ...ALO, deliveryLimit: 1 });
    h.consume(A, 'c');
    const [id] = h.enqueueMany(1);
    const back = () =>
      h.apply(
        how === 'return'
          ? { type: 'return', owner: A, ids: [id as number] }
          : { type: 'ownerDown', owner: A },
      );
    expect(handedOff(back())).toEqual([]);
    if (how === 'ownerDown') h.consume(A, 'c');
    const result = back();
    expect(handedOff(result)).toEqual([id]);
    expect(h.machine.pendingDeadLetter(id as number)?.reason).toBe('delivery_limit');
  });

  it('emits one hand-off effect per apply, before the expiry timing and the timer effect', () => {
    const h = new MachineHarness({ ...ALO, messageTtl: 10 });
    h.consume(A, 'c', { prefetch: 2 });
    const [a, b, c, d] = h.enqueueMany(4);
    h.advance(10);
    // c and d expire (ready) as the entry is applied; a and b are unacked and rejected by it.
    const result = h.apply({ type: 'discard', owner: A, ids: [a as number, b as number] });
    const types = result.effects.map((e) => e.type);
    expect(types.filter((t) => t === 'deadLetterHandOff')).toHaveLength(1);
    expect(types.slice(types.indexOf('deadLetterHandOff'))).toEqual([
      'deadLetterHandOff',
      'expired',
      'cancelTimer',
    ]);
    expect(handedOff(result)).toEqual([c, d, a, b]);
    expect(h.machine.pendingDeadLetter(a as number)?.reason).toBe('rejected');
    expect(h.machine.pendingDeadLetter(c as number)?.reason).toBe('expired');
  });
});

describe('pending messages are neither ready nor unacked', () => {
  it('are never delivered, got, purged or expired', () => {
    const h = new MachineHarness({ ...ALO, messageTtl: 50 });
    h.consume(A, 'c', { prefetch: 1 });
    const [id] = h.enqueueMany(1);
    h.apply({ type: 'discard', owner: A, ids: [id as number] });
    expect(h.apply({ type: 'get', owner: 'o/2', noAck: true }).reply).toEqual({ type: 'empty' });
    expect(h.apply({ type: 'purge' }).reply).toEqual({ type: 'purged', count: 0 });
    h.advance(1000);
    const result = h.apply({ type: 'expire' });
    expect(handedOff(result)).toEqual([]);
    expect(deliveredIds(result)).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 0, deadLetterPending: 1 });
  });

  it('do not count towards x-max-length', () => {
    const h = new MachineHarness({ ...ALO, maxLength: 1, overflow: 'reject-publish' });
    h.consume(A, 'c', { prefetch: 1 });
    h.enqueue();
    h.apply({ type: 'discard', owner: A, ids: [2] });
    h.apply({ type: 'cancel', owner: A, tag: 'c' });
    expect(h.enqueue().reply.type).toBe('ok');
  });
});

describe('the pending cap: back-pressure, not loss', () => {
  it('refuses publishes while the count cap is reached, accepts them again after a settle', () => {
    const h = new MachineHarness(ALO, T0, { pendingLimits: { maxMessages: 2, maxBytes: 1_000_000 } });
    h.consume(A, 'c');
    h.enqueueMany(3);
    h.apply({ type: 'discard', owner: A, ids: [2, 3] });
    const refused = h.enqueue();
    expect(refused.reply).toEqual({ type: 'rejected', reason: 'dead-letter-backlog' });
    expect(refused.removed).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ unacked: 1, deadLetterPending: 2 });
    // A message already in the queue still dead-letters past the cap: never dropped.
    const more = h.apply({ type: 'discard', owner: A, ids: [4] });
    expect(handedOff(more)).toEqual([4]);
    expect(h.machine.counts().deadLetterPending).toBe(3);
    h.apply({ type: 'deadLetterSettled', ids: [2, 3] });
    expect(h.enqueue().reply.type).toBe('ok');
  });

  it('refuses publishes once the pending bytes reach the cap', () => {
    const h = new MachineHarness(ALO, T0, { pendingLimits: { maxMessages: 100, maxBytes: 50 } });
    h.consume(A, 'c');
    h.enqueue(50);
    h.apply({ type: 'discard', owner: A, ids: [2] });
    expect(h.enqueue(1).reply).toEqual({ type: 'rejected', reason: 'dead-letter-backlog' });
  });

  it('refuses hand-offs too (the source keeps them and retries)', () => {
    const h = new MachineHarness(ALO, T0, { pendingLimits: { maxMessages: 1, maxBytes: 1_000 } });
    h.consume(A, 'c');
    h.enqueue();
    h.apply({ type: 'discard', owner: A, ids: [2] });
    const handOff = { source: 'src', messageId: 9, horizon: 9 };
    expect(h.enqueue(10, undefined, handOff).reply.type).toBe('rejected');
    h.apply({ type: 'deadLetterSettled', ids: [2] });
    // Not recorded as seen while refused: the retry is enqueued.
    expect(h.enqueue(10, undefined, handOff).reply.type).toBe('ok');
  });
});

describe('deadLetterSettled', () => {
  it('forgets the messages, lists them for body deletion, counts them; settling again is a no-op', () => {
    const h = new MachineHarness(ALO);
    h.consume(A, 'c');
    h.enqueueMany(2, 4);
    h.apply({ type: 'discard', owner: A, ids: [2, 3] });
    const result = h.apply({ type: 'deadLetterSettled', ids: [3, 99] });
    expect(result.removed).toEqual([3]);
    expect(h.machine.counts()).toMatchObject({ deadLetterPending: 1, deadLetterPendingBytes: 4 });
    expect(h.machine.deadLetterTotals().deadLettered).toEqual(totals({ rejected: 1 }));
    const again = h.apply({ type: 'deadLetterSettled', ids: [3] });
    expect(again.removed).toEqual([]);
    expect(h.machine.deadLetterTotals().deadLettered).toEqual(totals({ rejected: 1 }));
  });
});

describe('other strategies', () => {
  it('at-most-once: a deadLetter effect with the entry ts, bodies deleted, counted at once', () => {
    const h = new MachineHarness({ deadLetterExchange: 'dlx', deadLetterStrategy: 'at-most-once' });
    h.consume(A, 'c');
    h.enqueueMany(1);
    h.advance(5);
    const result = h.apply({ type: 'discard', owner: A, ids: [2] });
    expect(result.effects).toEqual([
      { type: 'deadLetter', ids: [2], reason: 'rejected', deadLetteredAt: T0 + 5 },
    ]);
    expect(result.removed).toEqual([2]);
    expect(h.machine.deadLetterTotals().deadLettered).toEqual(totals({ rejected: 1 }));
    expect(h.machine.counts().deadLetterPending).toBe(0);
  });

  it('no DLX: dropped without an effect, counted per reason', () => {
    const h = new MachineHarness({ deadLetterExchange: undefined, messageTtl: 10, maxLength: 1 });
    h.consume(A, 'c', { prefetch: 1 });
    // 2 is delivered, 3 dropped by 4 (drop-head), 4 stays ready.
    h.enqueueMany(3);
    h.apply({ type: 'cancel', owner: A, tag: 'c' });
    h.apply({ type: 'discard', owner: A, ids: [2] });
    h.advance(10);
    const result = h.apply({ type: 'expire' });
    expect(result.effects.filter((e) => e.type.startsWith('deadLetter'))).toEqual([]);
    expect(h.machine.deadLetterTotals()).toEqual({
      deadLettered: ZERO,
      droppedNoDlx: totals({ rejected: 1, maxlen: 1, expired: 1 }),
      duplicatesDropped: 0,
    });
  });

  it('no DLX with reject-publish-dlx: refused and counted, nothing dead-lettered', () => {
    const h = new MachineHarness({
      deadLetterExchange: undefined,
      maxLength: 0,
      overflow: 'reject-publish-dlx',
    });
    const result = h.enqueue();
    expect(result.reply.type).toBe('rejected');
    expect(result.effects).toEqual([]);
    expect(h.machine.deadLetterTotals().droppedNoDlx).toEqual(totals({ maxlen: 1 }));
  });
});

describe('config changes with messages pending', () => {
  function withPending(): MachineHarness {
    const h = new MachineHarness(ALO);
    h.consume(A, 'c');
    h.enqueueMany(2);
    h.apply({ type: 'discard', owner: A, ids: [2] });
    h.apply({ type: 'return', owner: A, ids: [3] });
    h.apply({ type: 'cancel', owner: A, tag: 'c' });
    return h;
  }

  it('switching to at-most-once publishes them at once', () => {
    const h = withPending();
    h.advance(7);
    const result = h.apply({
      type: 'setConfig',
      config: { ...HARNESS_CONFIG, deadLetterStrategy: 'at-most-once' },
    });
    expect(result.effects).toContainEqual({
      type: 'deadLetter',
      ids: [2],
      reason: 'rejected',
      deadLetteredAt: h.ts,
    });
    expect(result.removed).toEqual([2]);
    expect(h.machine.counts().deadLetterPending).toBe(0);
  });

  it('removing the DLX drops them, counted', () => {
    const h = withPending();
    const result = h.apply({
      type: 'setConfig',
      config: { ...HARNESS_CONFIG, deadLetterExchange: undefined, deadLetterStrategy: 'at-least-once' },
    });
    expect(result.removed).toEqual([2]);
    expect(h.machine.deadLetterTotals().droppedNoDlx).toEqual(totals({ rejected: 1 }));
  });

  it('changing the DLX or DLK keeps them pending', () => {
    const h = withPending();
    const result = h.apply({
      type: 'setConfig',
      config: { ...HARNESS_CONFIG, ...ALO, deadLetterExchange: 'other', deadLetterRoutingKey: 'k' },
    });
    expect(result.removed).toEqual([]);
    expect(h.machine.counts().deadLetterPending).toBe(1);
  });
});

describe('hand-off dedupe at the target', () => {
  const handOff = (messageId: number, horizon = 0, source = 'src#1') => ({ source, messageId, horizon });

  it('enqueues a hand-off once; the same id again is confirmed as a duplicate and not enqueued', () => {
    const h = new MachineHarness();
    expect(h.enqueue(10, undefined, handOff(5)).reply).toEqual({ type: 'ok' });
    const again = h.enqueue(10, undefined, handOff(5));
    expect(again.reply).toEqual({ type: 'duplicate' });
    expect(again.removed).toEqual([]);
    expect(h.machine.counts().ready).toBe(1);
    // Another source with the same message id is another message.
    expect(h.enqueue(10, undefined, handOff(5, 0, 'src#2')).reply).toEqual({ type: 'ok' });
    expect(h.machine.deadLetterTotals().duplicatesDropped).toBe(1);
  });

  it('drops ids below the horizon a later hand-off carried', () => {
    const h = new MachineHarness();
    h.enqueue(10, undefined, handOff(3));
    h.enqueue(10, undefined, handOff(9, 8));
    expect(h.enqueue(10, undefined, handOff(4)).reply).toEqual({ type: 'duplicate' });
    expect(h.machine.dedupeState().watermark('src#1')).toBe(7);
  });

  it('a hand-off refused by overflow is not recorded (its retry is enqueued) and never dead-lettered here', () => {
    const h = new MachineHarness({ ...ALO, maxLength: 0, overflow: 'reject-publish-dlx' });
    const refused = h.enqueue(10, undefined, handOff(1));
    expect(refused.reply).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(refused.effects).toEqual([]);
    expect(h.machine.counts().deadLetterPending).toBe(0);
    h.consume(A, 'c');
    expect(h.enqueue(10, undefined, handOff(1)).reply).toEqual({ type: 'ok' });
  });
});

describe('snapshots with dead-letter state', () => {
  function busy(): MachineHarness {
    const h = new MachineHarness(ALO, T0, { pendingLimits: { maxMessages: 10, maxBytes: 1000 } });
    h.consume(A, 'c', { prefetch: 2 });
    h.enqueueMany(3, 6);
    h.advance(3);
    h.apply({ type: 'discard', owner: A, ids: [2] });
    h.enqueue(4, undefined, { source: 'other#1', messageId: 40, horizon: 30 });
    h.apply({ type: 'deadLetterSettled', ids: [] });
    return h;
  }

  it('restores pending messages, counters and dedupe state', () => {
    const h = busy();
    const bytes = h.machine.snapshot();
    const restored = new QueueMachine(undefined, { pendingLimits: { maxMessages: 10, maxBytes: 1000 } });
    restored.restore(bytes, { index: h.index, term: 1, ts: h.ts });
    expect(restored.snapshot()).toEqual(bytes);
    expect(restored.counts()).toEqual(h.machine.counts());
    expect(restored.recount()).toEqual(restored.counts());
    expect([...restored.pendingDeadLetters()]).toEqual([...h.machine.pendingDeadLetters()]);
    expect(restored.deadLetterTotals()).toEqual(h.machine.deadLetterTotals());
    expect(restored.lowestLiveId()).toBe(h.machine.lowestLiveId());
    const duplicate = restored.apply(
      {
        type: 'enqueue',
        size: 4,
        ttl: undefined,
        message: storedMessage(4),
        handOff: { source: 'other#1', messageId: 40, horizon: 30 },
      },
      { index: h.index + 1, term: 1, ts: h.ts },
    );
    expect(duplicate.reply).toEqual({ type: 'duplicate' });
  });

  it('still restores a version 1 snapshot (no dead-letter state)', () => {
    const h = new MachineHarness(HARNESS_CONFIG);
    h.enqueueMany(2);
    const v2 = h.machine.snapshot();
    // The version 1 layout is version 2's without its dead-letter tail: 4 + 4 counters, the
    // duplicate count, no pending, no dedupe source — 11 one-byte varints.
    const v1 = new Uint8Array(v2.subarray(0, v2.length - 11));
    v1[0] = 1;
    const restored = new QueueMachine();
    restored.restore(v1, { index: 2, term: 1, ts: T0 });
    expect(restored.counts()).toEqual(h.machine.counts());
    expect(() =>
      restored.restore(new Uint8Array([3, ...v1.subarray(1)]), { index: 2, term: 1, ts: T0 }),
    ).toThrow(QueueSnapshotError);
  });
});

describe('lowestLiveId: the dedupe horizon a source sends', () => {
  it('is the smallest id held, queued or pending, also after a restore', () => {
    const h = new MachineHarness(ALO);
    expect(h.machine.lowestLiveId()).toBeUndefined();
    h.consume(A, 'c', { prefetch: 1 });
    h.enqueueMany(3);
    expect(h.machine.lowestLiveId()).toBe(2);
    h.apply({ type: 'discard', owner: A, ids: [2] });
    expect(h.machine.lowestLiveId()).toBe(2);
    h.apply({ type: 'deadLetterSettled', ids: [2] });
    expect(h.machine.lowestLiveId()).toBe(3);
    // 3 is unacked now, 4 ready: a restore reads unacked before ready, yet keeps id order.
    h.apply({ type: 'settle', owner: A, ids: [3] });
    h.apply({ type: 'return', owner: A, ids: [4] });
    const restored = new QueueMachine();
    restored.restore(h.machine.snapshot(), { index: h.index, term: 1, ts: h.ts });
    expect(restored.lowestLiveId()).toBe(h.machine.lowestLiveId());
  });
});
