import { describe, expect, it } from 'vitest';
import { QueueMachine } from './queue-machine.ts';
import {
  deadLettered,
  deliveredIds,
  deliveries,
  HARNESS_CONFIG,
  MachineHarness,
  queueConfig,
  storedMessage,
  T0,
  timerOf,
} from './queue-test-harness.ts';

const A = 'conn-a/1';
const B = 'conn-b/1';

describe('QueueMachine delivery', () => {
  it('delivers in FIFO order', () => {
    const h = new MachineHarness();
    const ids = h.enqueueMany(3);
    const result = h.consume(A, 'c1');
    expect(deliveredIds(result)).toEqual(ids);
    expect(deliveries(result).every((d) => d.owner === A && d.tag === 'c1' && !d.redelivered)).toBe(true);
    expect(h.machine.counts()).toEqual({
      ready: 0,
      unacked: 3,
      readyBytes: 0,
      consumers: 1,
      deadLetterPending: 0,
      deadLetterPendingBytes: 0,
    });
  });

  it('gives message ids equal to the enqueue log index', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    h.apply({ type: 'touch' });
    const result = h.enqueue();
    expect(deliveredIds(result)).toEqual([3]);
  });

  it('round-robins between consumers with credit', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    h.consume(B, 'c2');
    const tags: string[] = [];
    for (let i = 0; i < 4; i++) tags.push(...deliveries(h.enqueue()).map((d) => d.tag));
    expect(tags).toEqual(['c1', 'c2', 'c1', 'c2']);
  });

  it('hands the backlog to whichever consumer regains credit', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { prefetch: 1 });
    h.consume(B, 'c2', { prefetch: 1 });
    const [first, second] = h.enqueueMany(2);
    const [third, fourth] = h.enqueueMany(2);
    expect(h.machine.counts().ready).toBe(2);
    const afterB = h.apply({ type: 'settle', owner: B, ids: [second as number] });
    expect(deliveries(afterB).map((d) => [d.tag, d.id])).toEqual([['c2', third]]);
    const afterA = h.apply({ type: 'settle', owner: A, ids: [first as number] });
    expect(deliveries(afterA).map((d) => [d.tag, d.id])).toEqual([['c1', fourth]]);
  });

  it('respects prefetch credit and resumes on ack', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { prefetch: 2 });
    const ids = h.enqueueMany(5);
    expect(h.machine.counts()).toMatchObject({ ready: 3, unacked: 2 });
    const result = h.apply({ type: 'settle', owner: A, ids: [ids[0] as number] });
    expect(deliveredIds(result)).toEqual([ids[2]]);
    expect(result.removed).toEqual([ids[0]]);
    expect(h.machine.counts()).toMatchObject({ ready: 2, unacked: 2 });
  });

  it('skips a consumer without credit in the round robin', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { prefetch: 1 });
    h.consume(B, 'c2');
    const tags: string[] = [];
    for (let i = 0; i < 4; i++) tags.push(...deliveries(h.enqueue()).map((d) => d.tag));
    expect(tags).toEqual(['c1', 'c2', 'c2', 'c2']);
  });

  it('removes noAck deliveries at once and ignores prefetch for them', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { noAck: true, prefetch: 1 });
    const first = h.enqueue();
    const second = h.enqueue();
    expect(deliveredIds(first)).toEqual([2]);
    expect(first.removed).toEqual([2]);
    expect(deliveredIds(second)).toEqual([3]);
    expect(h.machine.counts()).toEqual({
      ready: 0,
      unacked: 0,
      readyBytes: 0,
      consumers: 1,
      deadLetterPending: 0,
      deadLetterPendingBytes: 0,
    });
  });

  it('stops delivering to a cancelled consumer but keeps its unacked messages with the owner', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    const [id] = h.enqueueMany(1);
    h.apply({ type: 'cancel', owner: A, tag: 'c1' });
    expect(h.machine.counts()).toMatchObject({ consumers: 0, unacked: 1 });
    expect(deliveredIds(h.enqueue())).toEqual([]);
    const acked = h.apply({ type: 'settle', owner: A, ids: [id as number] });
    expect(acked.removed).toEqual([id]);
    expect(h.machine.counts()).toMatchObject({ unacked: 0, ready: 1 });
  });

  it('ignores settles of ids the owner does not hold', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    const [id] = h.enqueueMany(1);
    const result = h.apply({ type: 'settle', owner: B, ids: [id as number, 999] });
    expect(result.removed).toEqual([]);
    expect(h.machine.counts().unacked).toBe(1);
  });
});

describe('QueueMachine return, discard and delivery counts', () => {
  it('redelivers a returned message before other ready messages, redelivered, count + 1', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { prefetch: 1 });
    const [first, second] = h.enqueueMany(2);
    const result = h.apply({ type: 'return', owner: A, ids: [first as number] });
    const [redelivery] = deliveries(result);
    expect(redelivery).toMatchObject({ id: first, redelivered: true, deliveryCount: 1 });
    expect(h.machine.counts().ready).toBe(1);
    const next = h.apply({ type: 'settle', owner: A, ids: [first as number] });
    expect(deliveries(next)[0]).toMatchObject({ id: second, redelivered: false, deliveryCount: 0 });
  });

  it('serves returned messages first in get as well', () => {
    const h = new MachineHarness();
    const [first, second] = h.enqueueMany(2);
    h.apply({ type: 'get', owner: A, noAck: false });
    h.apply({ type: 'get', owner: A, noAck: false });
    h.apply({ type: 'return', owner: A, ids: [second as number, first as number] });
    const got = h.apply({ type: 'get', owner: A, noAck: true });
    expect(got.reply).toMatchObject({ type: 'got', id: second, redelivered: true, deliveryCount: 1 });
  });

  it('discards with reason rejected', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    const [id] = h.enqueueMany(1);
    const result = h.apply({ type: 'discard', owner: A, ids: [id as number] });
    expect(deadLettered(result, 'rejected')).toEqual([id]);
    expect(result.removed).toEqual([id]);
    expect(h.machine.removalTotals().rejected).toBe(1);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 0 });
  });

  it.each([0, 1, 3])('delivery limit %i allows limit + 1 deliveries', (limit) => {
    const h = new MachineHarness({ deliveryLimit: limit });
    let result = h.consume(A, 'c1');
    result = h.enqueue();
    const id = h.index;
    let deliveriesSeen = deliveredIds(result).length;
    for (let round = 0; round < 10; round++) {
      result = h.apply({ type: 'return', owner: A, ids: [id] });
      if (deadLettered(result, 'delivery_limit').length > 0) break;
      deliveriesSeen += deliveredIds(result).length;
      expect(deliveries(result)[0]?.deliveryCount).toBe(round + 1);
    }
    expect(deliveriesSeen).toBe(limit + 1);
    expect(deadLettered(result, 'delivery_limit')).toEqual([id]);
    expect(result.removed).toEqual([id]);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 0 });
  });
});

describe('QueueMachine basic.get', () => {
  it('answers empty on an empty queue', () => {
    const h = new MachineHarness();
    expect(h.apply({ type: 'get', owner: A, noAck: false }).reply).toEqual({ type: 'empty' });
  });

  it('takes the head with the ready count left; noAck removes it', () => {
    const h = new MachineHarness();
    const [first, second] = h.enqueueMany(2);
    const got = h.apply({ type: 'get', owner: A, noAck: true });
    expect(got.reply).toEqual({
      type: 'got',
      id: first,
      redelivered: false,
      deliveryCount: 0,
      messageCount: 1,
    });
    expect(got.removed).toEqual([first]);
    const acked = h.apply({ type: 'get', owner: A, noAck: false });
    expect(acked.reply).toMatchObject({ id: second, messageCount: 0 });
    expect(acked.removed).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 1 });
    expect(h.apply({ type: 'settle', owner: A, ids: [second as number] }).removed).toEqual([second]);
  });
});

describe('QueueMachine exclusive consumers', () => {
  it('refuses an exclusive consume while others consume', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1');
    expect(h.consume(B, 'c2', { exclusive: true }).reply.type).toBe('locked');
    expect(h.machine.consumerCount()).toBe(1);
  });

  it('refuses any consume while an exclusive consumer exists, and allows it after cancel', () => {
    const h = new MachineHarness();
    h.consume(A, 'c1', { exclusive: true });
    expect(h.consume(B, 'c2').reply.type).toBe('locked');
    expect(h.consume(A, 'c3').reply.type).toBe('locked');
    h.apply({ type: 'cancel', owner: A, tag: 'c1' });
    expect(h.consume(B, 'c2').reply.type).toBe('ok');
  });
});

describe('QueueMachine TTL', () => {
  it('expires by the queue TTL at enqueue ts + TTL, with a timer for the earliest', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    const first = h.enqueue();
    expect(timerOf(first)).toBe(T0 + 100);
    h.advance(40);
    expect(timerOf(h.enqueue())).toBeUndefined();
    h.advance(59);
    expect(deadLettered(h.apply({ type: 'expire' }))).toEqual([]);
    h.advance(1);
    const expired = h.apply({ type: 'expire' });
    expect(deadLettered(expired, 'expired')).toEqual([1]);
    expect(expired.removed).toEqual([1]);
    expect(timerOf(expired)).toBe(T0 + 140);
    h.advance(40);
    const last = h.apply({ type: 'expire' });
    expect(deadLettered(last, 'expired')).toEqual([2]);
    expect(timerOf(last)).toBe('cancel');
    expect(h.machine.removalTotals().expired).toBe(2);
  });

  it('uses the per-message TTL, and the smaller of both', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.enqueue(10, 30);
    h.enqueue(10, 500);
    h.enqueue(10);
    h.advance(30);
    expect(deadLettered(h.apply({ type: 'expire' }))).toEqual([1]);
    h.advance(70);
    expect(deadLettered(h.apply({ type: 'expire' }))).toEqual([2, 3]);
  });

  it('uses the per-message TTL alone when the queue has none', () => {
    const h = new MachineHarness();
    h.enqueue(10, 50);
    h.enqueue(10);
    h.advance(50);
    expect(deadLettered(h.apply({ type: 'expire' }), 'expired')).toEqual([1]);
    expect(h.machine.counts().ready).toBe(1);
    expect(h.machine.nextDeadline()).toBeUndefined();
  });

  it('expires independently of position: 100 short-lived messages behind a long-lived one', () => {
    const h = new MachineHarness();
    h.enqueue(10, 60_000);
    const shortIds = h.enqueueMany(100, 10, 50);
    h.advance(50);
    const result = h.apply({ type: 'expire' });
    expect(deadLettered(result, 'expired')).toEqual(shortIds);
    expect(h.machine.counts().ready).toBe(1);
    expect(timerOf(result)).toBe(T0 + 60_000);
  });

  it('expires a TTL 0 message at once unless a waiting consumer takes it', () => {
    const h = new MachineHarness();
    const dropped = h.enqueue(10, 0);
    expect(deadLettered(dropped, 'expired')).toEqual([1]);
    expect(h.machine.counts().ready).toBe(0);
    h.consume(A, 'c1');
    const taken = h.enqueue(10, 0);
    expect(deliveredIds(taken)).toEqual([3]);
    expect(deadLettered(taken)).toEqual([]);
  });

  it('expires a TTL 0 message queued behind others even with a consumer attached', () => {
    const h = new MachineHarness({ messageTtl: 0 });
    h.consume(A, 'c1', { prefetch: 1 });
    const first = h.enqueue();
    expect(deliveredIds(first)).toEqual([2]);
    const second = h.enqueue();
    expect(deadLettered(second, 'expired')).toEqual([3]);
  });

  it('does not expire unacked messages; they expire when they come back, at once if overdue', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.consume(A, 'c1');
    h.enqueue();
    h.advance(500);
    expect(deadLettered(h.apply({ type: 'expire' }))).toEqual([]);
    expect(h.machine.counts().unacked).toBe(1);
    h.apply({ type: 'cancel', owner: A, tag: 'c1' });
    const back = h.apply({ type: 'return', owner: A, ids: [2] });
    expect(deadLettered(back, 'expired')).toEqual([2]);
    expect(deliveredIds(back)).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 0 });
  });

  it('keeps a returned message that is not yet due and expires it on time', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.enqueue();
    h.apply({ type: 'get', owner: A, noAck: false });
    h.advance(50);
    const back = h.apply({ type: 'return', owner: A, ids: [1] });
    expect(timerOf(back)).toBe(T0 + 100);
    h.advance(50);
    expect(deadLettered(h.apply({ type: 'expire' }), 'expired')).toEqual([1]);
  });

  it('tells how late each expired message was at the entry that expired it, and nothing otherwise', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.enqueue();
    h.advance(30);
    h.enqueue(10, 20); // due at T0 + 50
    h.enqueue();
    h.advance(99); // T0 + 129: the first two are due, by 29 and 79 ms; the third at T0 + 130
    const late = h.apply({ type: 'expire' });
    expect(late.effects.filter((e) => e.type === 'expired')).toEqual([
      { type: 'expired', overdueMs: [79, 29], at: T0 + 129 },
    ]);
    h.advance(1);
    const onTime = h.apply({ type: 'expire' });
    expect(onTime.effects.filter((e) => e.type === 'expired')).toEqual([
      { type: 'expired', overdueMs: [0], at: T0 + 130 },
    ]);
    // Nothing expired (rejected without a DLX, acked, or no message due): no effect.
    expect(h.enqueue().effects.some((e) => e.type === 'expired')).toBe(false);
    expect(h.apply({ type: 'expire' }).effects.some((e) => e.type === 'expired')).toBe(false);
  });

  it('times an overdue message that comes back from its deadline, not from its return', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.consume(A, 'c1');
    h.enqueue();
    h.advance(340);
    h.apply({ type: 'cancel', owner: A, tag: 'c1' });
    const back = h.apply({ type: 'return', owner: A, ids: [2] });
    expect(back.effects.filter((e) => e.type === 'expired')).toEqual([
      { type: 'expired', overdueMs: [240], at: T0 + 340 },
    ]);
  });

  it('never delivers a due message even if the timer has not fired yet', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    h.enqueue();
    h.advance(100);
    const result = h.consume(A, 'c1');
    expect(deliveredIds(result)).toEqual([]);
    expect(deadLettered(result, 'expired')).toEqual([1]);
  });
});

describe('QueueMachine length limits', () => {
  it('drop-head by count drops the oldest with reason maxlen', () => {
    const h = new MachineHarness({ maxLength: 2 });
    h.enqueueMany(2);
    const third = h.enqueue();
    expect(third.reply.type).toBe('ok');
    expect(deadLettered(third, 'maxlen')).toEqual([1]);
    expect(h.machine.counts().ready).toBe(2);
  });

  it('drop-head by bytes drops until the ready bytes fit', () => {
    const h = new MachineHarness({ maxLengthBytes: 100 });
    h.enqueue(40);
    h.enqueue(40);
    const big = h.enqueue(70);
    expect(deadLettered(big, 'maxlen')).toEqual([1, 2]);
    expect(h.machine.counts()).toMatchObject({ ready: 1, readyBytes: 70 });
    const tooBig = h.enqueue(200);
    expect(deadLettered(tooBig, 'maxlen')).toEqual([3, 4]);
    expect(h.machine.counts().ready).toBe(0);
  });

  it('drop-head counts only ready messages', () => {
    const h = new MachineHarness({ maxLength: 1 });
    h.consume(A, 'c1', { prefetch: 2 });
    h.enqueueMany(3);
    expect(h.machine.counts()).toMatchObject({ ready: 1, unacked: 2 });
    expect(deadLettered(h.enqueue(), 'maxlen')).toEqual([4]);
  });

  it('reject-publish refuses by count without dead-lettering', () => {
    const h = new MachineHarness({ maxLength: 1, overflow: 'reject-publish' });
    expect(h.enqueue().reply.type).toBe('ok');
    const refused = h.enqueue();
    expect(refused.reply).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(refused.effects).toEqual([]);
    expect(refused.removed).toEqual([]);
    expect(h.machine.counts().ready).toBe(1);
  });

  it('reject-publish refuses by bytes', () => {
    const h = new MachineHarness({ maxLengthBytes: 100, overflow: 'reject-publish' });
    expect(h.enqueue(60).reply.type).toBe('ok');
    expect(h.enqueue(41).reply.type).toBe('rejected');
    expect(h.enqueue(40).reply.type).toBe('ok');
    expect(h.machine.counts().readyBytes).toBe(100);
  });

  it('reject-publish-dlx refuses and dead-letters the refused message itself', () => {
    const h = new MachineHarness({ maxLength: 1, overflow: 'reject-publish-dlx' });
    h.enqueue();
    const message = storedMessage(5, 'refused');
    const refused = h.apply({ type: 'enqueue', size: 5, ttl: undefined, message });
    expect(refused.reply.type).toBe('rejected');
    expect(refused.effects).toEqual([
      { type: 'deadLetterRejected', index: 2, reason: 'maxlen', message, deadLetteredAt: T0 },
    ]);
    expect(refused.removed).toEqual([]);
    expect(h.machine.removalTotals().maxlen).toBe(1);
  });

  it('accepts a message a waiting consumer takes at once, even at x-max-length 0', () => {
    const h = new MachineHarness({ maxLength: 0, overflow: 'reject-publish' });
    expect(h.enqueue().reply.type).toBe('rejected');
    h.consume(A, 'c1', { prefetch: 1 });
    const taken = h.enqueue();
    expect(taken.reply.type).toBe('ok');
    expect(deliveredIds(taken)).toEqual([3]);
    expect(h.enqueue().reply.type).toBe('rejected');
  });
});

describe('QueueMachine x-expires', () => {
  it('arms the timer at last use + expires and pushes it back on touch, get and consume', () => {
    const h = new MachineHarness({ expires: 1000 });
    expect(timerOf(h.apply({ type: 'touch' }))).toBe(T0 + 1000);
    h.advance(300);
    expect(timerOf(h.apply({ type: 'touch' }))).toBe(T0 + 1300);
    h.advance(100);
    expect(timerOf(h.apply({ type: 'get', owner: A, noAck: true }))).toBe(T0 + 1400);
    h.advance(100);
    expect(timerOf(h.consume(A, 'c1'))).toBe('cancel');
    h.advance(5000);
    expect(h.apply({ type: 'expire' }).effects).toEqual([]);
    expect(timerOf(h.apply({ type: 'cancel', owner: A, tag: 'c1' }))).toBe(T0 + 6500);
  });

  it('does not count an enqueue as use, and expires the queue without dead-lettering', () => {
    const h = new MachineHarness({ expires: 1000 });
    h.apply({ type: 'touch' });
    h.advance(500);
    h.enqueue();
    h.advance(499);
    expect(h.apply({ type: 'expire' }).effects).toEqual([]);
    h.advance(1);
    const expired = h.apply({ type: 'expire' });
    expect(expired.effects).toEqual([{ type: 'queueExpired' }, { type: 'cancelTimer' }]);
    expect(expired.removed).toEqual([]);
    expect(h.machine.isQueueExpired()).toBe(true);
    h.advance(5000);
    expect(h.apply({ type: 'expire' }).effects).toEqual([]);
  });

  it('shares the timer with message expiry: the earlier deadline wins', () => {
    const h = new MachineHarness({ expires: 1000, messageTtl: 300 });
    expect(timerOf(h.enqueue())).toBe(T0 + 300);
    h.advance(300);
    const expired = h.apply({ type: 'expire' });
    expect(deadLettered(expired, 'expired')).toEqual([1]);
    expect(timerOf(expired)).toBe(T0 + 1000);
  });
});

describe('QueueMachine ownerDown, purge, setConfig', () => {
  it('ownerDown removes the consumers and returns unacked messages in id order to the others', () => {
    const h = new MachineHarness();
    h.consume(A, 'a1', { prefetch: 3 });
    const ids = h.enqueueMany(3);
    h.apply({ type: 'return', owner: A, ids: [ids[0] as number] });
    h.consume(B, 'b1');
    const result = h.apply({ type: 'ownerDown', owner: A });
    expect(deliveries(result).map((d) => [d.tag, d.id, d.deliveryCount])).toEqual([
      ['b1', ids[0], 2],
      ['b1', ids[1], 1],
      ['b1', ids[2], 1],
    ]);
    expect(deliveries(result).every((d) => d.redelivered)).toBe(true);
    expect(h.machine.counts()).toMatchObject({ consumers: 1, unacked: 3, ready: 0 });
    expect(h.machine.ownerIds()).toEqual([B]);
  });

  it('ownerDown applies the delivery limit', () => {
    const h = new MachineHarness({ deliveryLimit: 0 });
    h.consume(A, 'a1');
    h.enqueueMany(2);
    const result = h.apply({ type: 'ownerDown', owner: A });
    expect(deadLettered(result, 'delivery_limit')).toEqual([2, 3]);
    expect(h.machine.counts()).toEqual({
      ready: 0,
      unacked: 0,
      readyBytes: 0,
      consumers: 0,
      deadLetterPending: 0,
      deadLetterPendingBytes: 0,
    });
  });

  it('purge removes ready messages only, without dead-lettering', () => {
    const h = new MachineHarness({ messageTtl: 1000 });
    h.consume(A, 'a1', { prefetch: 1 });
    h.enqueueMany(4);
    const result = h.apply({ type: 'purge' });
    expect(result.reply).toEqual({ type: 'purged', count: 3 });
    expect(result.removed).toEqual([3, 4, 5]);
    expect(deadLettered(result)).toEqual([]);
    expect(timerOf(result)).toBe('cancel');
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 1, readyBytes: 0 });
  });

  it('setConfig applies a lower max length at once', () => {
    const h = new MachineHarness();
    h.enqueueMany(5);
    const result = h.apply({ type: 'setConfig', config: { ...HARNESS_CONFIG, maxLength: 2 } });
    expect(deadLettered(result, 'maxlen')).toEqual([1, 2, 3]);
    expect(h.machine.counts().ready).toBe(2);
  });

  it('setConfig applies a new TTL to queued messages and re-arms the timer', () => {
    const h = new MachineHarness();
    h.enqueue();
    h.advance(100);
    h.enqueue();
    h.advance(50);
    const result = h.apply({ type: 'setConfig', config: { ...HARNESS_CONFIG, messageTtl: 120 } });
    expect(deadLettered(result, 'expired')).toEqual([1]);
    expect(timerOf(result)).toBe(T0 + 220);
    const cleared = h.apply({ type: 'setConfig', config: queueConfig() });
    expect(timerOf(cleared)).toBe('cancel');
  });
});

describe('QueueMachine remove (by id, for a redrive)', () => {
  it('removes the ready messages named, anywhere in the queue, without dead-lettering', () => {
    const h = new MachineHarness({ messageTtl: 1000 });
    const ids = h.enqueueMany(5);
    const result = h.apply({ type: 'remove', ids: [ids[3] as number, ids[1] as number] });
    expect(result.reply).toEqual({ type: 'removed', ids: [ids[3], ids[1]] });
    expect(result.removed).toEqual([ids[3], ids[1]]);
    expect(deadLettered(result)).toEqual([]);
    expect(h.machine.counts()).toMatchObject({ ready: 3, readyBytes: 30 });
    // The rest are delivered in their order, the removed ones never.
    expect(deliveredIds(h.consume(A, 'a1'))).toEqual([ids[0], ids[2], ids[4]]);
  });

  it('leaves unacked, unknown and already removed ids alone, and removes returned ones', () => {
    const h = new MachineHarness();
    const ids = h.enqueueMany(3);
    h.consume(A, 'a1', { prefetch: 2 });
    // A holds ids[0] and ids[1]; with its consumer cancelled, ids[0] comes back to the returned
    // list (and stays ready), ids[1] stays unacked.
    h.apply({ type: 'cancel', owner: A, tag: 'a1' });
    h.apply({ type: 'return', owner: A, ids: [ids[0] as number] });
    const result = h.apply({
      type: 'remove',
      ids: [ids[0] as number, ids[1] as number, ids[2] as number, 999],
    });
    expect(result.reply).toEqual({ type: 'removed', ids: [ids[0], ids[2]] });
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 1 });
    expect(h.machine.heldBy(ids[1] as number)).toBe(A);
    const again = h.apply({ type: 'remove', ids: [ids[0] as number] });
    expect(again.reply).toEqual({ type: 'removed', ids: [] });
    expect(again.removed).toEqual([]);
  });

  it('drops a removed message from the expiry index (it never expires later)', () => {
    const h = new MachineHarness({ messageTtl: 100 });
    const ids = h.enqueueMany(2);
    const result = h.apply({ type: 'remove', ids: [ids[0] as number, ids[1] as number] });
    expect(timerOf(result)).toBe('cancel');
    h.advance(500);
    expect(deadLettered(h.apply({ type: 'expire' }))).toEqual([]);
  });

  it('replays to the same state on another replica and through a snapshot', () => {
    const a = new MachineHarness();
    const b = new MachineHarness();
    for (const h of [a, b]) {
      h.enqueueMany(4);
      h.apply({ type: 'remove', ids: [2, 4] });
    }
    expect(a.machine.snapshot()).toStrictEqual(b.machine.snapshot());
    const restored = new QueueMachine();
    restored.restore(a.machine.snapshot(), { index: a.index, term: 1, ts: a.ts });
    expect(restored.counts()).toEqual(a.machine.counts());
    expect([...restored.liveIds()]).toEqual([1, 3]);
  });
});

describe('QueueMachine results', () => {
  it('returns one shared result when nothing happens', () => {
    const h = new MachineHarness();
    const a = h.enqueue();
    const b = h.enqueue();
    expect(a).toBe(b);
    expect(a).toEqual({ reply: { type: 'ok' }, effects: [], removed: [] });
  });

  it('emits no timer effect when the earliest deadline does not change', () => {
    const h = new MachineHarness({ messageTtl: 1000 });
    expect(timerOf(h.enqueue())).toBe(T0 + 1000);
    h.advance(10);
    expect(h.enqueue().effects).toEqual([]);
  });

  it('groups dead-letters per reason in one apply', () => {
    const h = new MachineHarness();
    h.consume(A, 'a1');
    h.enqueueMany(3);
    const result = h.apply({ type: 'discard', owner: A, ids: [2, 3, 4] });
    expect(result.effects).toEqual([
      { type: 'deadLetter', ids: [2, 3, 4], reason: 'rejected', deadLetteredAt: T0 },
    ]);
  });

  it('starts from the config it is given', () => {
    const machine = new QueueMachine(queueConfig({ maxLength: 7 }));
    expect(machine.currentConfig().maxLength).toBe(7);
  });
});
