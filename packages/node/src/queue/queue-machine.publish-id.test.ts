import type { HandOffId } from '@styx/dlx';
import { describe, expect, it } from 'vitest';
import { QueueMachine } from './queue-machine.ts';
import {
  deadLettered,
  deliveredIds,
  handedOff,
  MachineHarness,
  storedMessage,
} from './queue-test-harness.ts';
import type { QueueApplyResult, QueueConfig } from './types.ts';

const NO_DLX: Partial<QueueConfig> = { deadLetterExchange: undefined };
const AT_MOST_ONCE: Partial<QueueConfig> = { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-most-once' };
const AT_LEAST_ONCE: Partial<QueueConfig> = {
  deadLetterExchange: 'dlx',
  deadLetterStrategy: 'at-least-once',
};

/** A publish forwarded by node run `source`. */
function publish(
  h: MachineHarness,
  messageId: number,
  horizon = messageId,
  source = 'p.run-1',
  size = 10,
): QueueApplyResult {
  const publishId: HandOffId = { source, messageId, horizon };
  return h.apply({ type: 'enqueue', size, ttl: undefined, message: storedMessage(size), publishId });
}

/** A publish from a queue handle that numbers its publishes without gaps (`ordered`). */
function orderedPublish(
  h: MachineHarness,
  messageId: number,
  horizon: number,
  body = messageId,
): QueueApplyResult {
  const publishId: HandOffId = { source: 'p.handle-1', messageId, horizon };
  return h.apply({
    type: 'enqueue',
    size: 10,
    ttl: undefined,
    message: storedMessage(10, `m${body}`),
    publishId,
    ordered: true,
  });
}

/** Dead-letter effects of one apply, at-most-once: the refused publishes copied out. */
function refusedCopies(result: QueueApplyResult): number {
  return result.effects.filter((e) => e.type === 'deadLetterRejected').length;
}

describe('QueueMachine: publish ids', () => {
  it('answers a publish id seen before with duplicate and enqueues it once', () => {
    const h = new MachineHarness(NO_DLX);
    expect(publish(h, 1).reply).toEqual({ type: 'ok' });
    expect(publish(h, 1).reply).toEqual({ type: 'duplicate' });
    expect(h.machine.counts().ready).toBe(1);
    expect(h.machine.deadLetterTotals().duplicatesDropped).toBe(1);
    // A duplicate stores nothing: no message for its entry.
    h.consume('conn/1', 'c');
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 1 });
  });

  it('tells sources apart, and forgets ids below the horizon only as duplicates', () => {
    const h = new MachineHarness(NO_DLX);
    expect(publish(h, 5, 5, 'p.a').reply.type).toBe('ok');
    expect(publish(h, 5, 5, 'p.b').reply.type).toBe('ok'); // another node run
    expect(publish(h, 7, 5, 'p.a').reply.type).toBe('ok');
    expect(publish(h, 6, 5, 'p.a').reply.type).toBe('ok'); // out of order, still new
    expect(publish(h, 5, 5, 'p.a').reply.type).toBe('duplicate');
    // The horizon moved past 5 and 6: they can never come again, and count as duplicates.
    expect(publish(h, 9, 8, 'p.a').reply.type).toBe('ok');
    expect(publish(h, 6, 8, 'p.a').reply.type).toBe('duplicate');
    expect(h.machine.counts().ready).toBe(5);
  });

  it('a duplicate is dropped before delivery: a waiting consumer gets the message once', () => {
    const h = new MachineHarness(NO_DLX);
    h.consume('conn/1', 'c');
    expect(deliveredIds(publish(h, 1))).toHaveLength(1);
    expect(deliveredIds(publish(h, 1))).toEqual([]);
  });

  it('remembers publish ids across a snapshot', () => {
    const h = new MachineHarness(NO_DLX);
    publish(h, 3);
    const restored = new QueueMachine(h.machine.currentConfig());
    restored.restore(h.machine.snapshot(), { index: h.index, term: 1, ts: h.ts });
    const result = restored.apply(
      {
        type: 'enqueue',
        size: 10,
        ttl: undefined,
        message: storedMessage(10),
        publishId: { source: 'p.run-1', messageId: 3, horizon: 3 },
      },
      { index: h.index + 1, term: 1, ts: h.ts },
    );
    expect(result.reply).toEqual({ type: 'duplicate' });
    expect(restored.counts().ready).toBe(1);
  });

  it('a publish refused by reject-publish-dlx is dead-lettered even with a publish id (at-most-once)', () => {
    const h = new MachineHarness({ ...AT_MOST_ONCE, maxLength: 1, overflow: 'reject-publish-dlx' });
    publish(h, 1);
    const refused = publish(h, 2);
    expect(refused.reply).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(refusedCopies(refused)).toBe(1);
    expect(h.machine.deadLetterTotals().deadLettered.maxlen).toBe(1);
    expect(h.machine.counts().ready).toBe(1);
  });

  it('a publish refused by reject-publish-dlx is dead-lettered even with a publish id (at-least-once)', () => {
    const h = new MachineHarness({ ...AT_LEAST_ONCE, maxLength: 1, overflow: 'reject-publish-dlx' });
    publish(h, 1);
    const refused = publish(h, 2);
    expect(refused.reply).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(handedOff(refused)).toEqual([h.index]);
    expect(h.machine.isPendingDeadLetter(h.index)).toBe(true);
  });

  it('a hand-off refused by reject-publish-dlx is still not dead-lettered (its source retries)', () => {
    const h = new MachineHarness({ ...AT_MOST_ONCE, maxLength: 1, overflow: 'reject-publish-dlx' });
    publish(h, 1);
    const refused = h.apply({
      type: 'enqueue',
      size: 10,
      ttl: undefined,
      message: storedMessage(10),
      handOff: { source: 'other-q#1', messageId: 1, horizon: 1 },
    });
    expect(refused.reply.type).toBe('rejected');
    expect(refusedCopies(refused)).toBe(0);
    expect(deadLettered(refused)).toEqual([]);
  });

  it('a refused publish is not remembered: sent again once there is room, it is enqueued', () => {
    const h = new MachineHarness({ ...NO_DLX, maxLength: 1, overflow: 'reject-publish' });
    publish(h, 1);
    expect(publish(h, 2).reply.type).toBe('rejected');
    h.apply({ type: 'purge' });
    expect(publish(h, 2).reply).toEqual({ type: 'ok' });
  });

  it.each([
    ['reject-publish', NO_DLX],
    ['reject-publish-dlx', AT_MOST_ONCE],
  ] as const)('a publish sent again after its answer was lost is a duplicate even when the queue is full now (%s)', (overflow, config) => {
    const h = new MachineHarness({ ...config, maxLength: 1, overflow });
    // Accepted, but the answer to the sending node was lost: it sends the same publish again,
    // and the queue is full by then (of that very message).
    expect(publish(h, 1).reply.type).toBe('ok');
    const again = publish(h, 1);
    // Refusing it would nack a message the queue holds (and, under reject-publish-dlx,
    // dead-letter a second copy of it).
    expect(again.reply).toEqual({ type: 'duplicate' });
    expect(refusedCopies(again)).toBe(0);
    expect(h.machine.counts().ready).toBe(1);
  });

  it('an ordered publish that overtook an earlier one is refused (outOfOrder) and taken once that one was', () => {
    const h = new MachineHarness(NO_DLX);
    expect(orderedPublish(h, 1, 1).reply.type).toBe('ok');
    // 2 was refused at its first leader and is being sent again; 3 got here first.
    expect(orderedPublish(h, 3, 2).reply).toEqual({ type: 'outOfOrder' });
    expect(h.machine.counts().ready).toBe(1);
    expect(orderedPublish(h, 2, 2).reply.type).toBe('ok');
    expect(orderedPublish(h, 3, 2).reply.type).toBe('ok');
    // Nothing recorded by the refusal: 3 was taken once, after 2.
    expect(orderedPublish(h, 3, 3).reply.type).toBe('duplicate');
    h.consume('conn/1', 'c');
    expect(h.machine.counts()).toMatchObject({ ready: 0, unacked: 3 });
  });

  it('an ordered publish whose predecessors were all answered (the horizon passed them) is taken', () => {
    const h = new MachineHarness(NO_DLX);
    expect(orderedPublish(h, 1, 1).reply.type).toBe('ok');
    // 2 and 3 were refused for good (their deadline passed): 4 carries horizon 4.
    expect(orderedPublish(h, 4, 4).reply.type).toBe('ok');
  });

  it('publishes without the ordered flag (entries from before it existed) replay as they were taken', () => {
    const h = new MachineHarness(NO_DLX);
    expect(publish(h, 1, 1, 'p.old').reply.type).toBe('ok');
    expect(publish(h, 3, 2, 'p.old').reply.type).toBe('ok');
    expect(publish(h, 2, 2, 'p.old').reply.type).toBe('ok');
  });

  it('keeps the order across a snapshot', () => {
    const h = new MachineHarness(NO_DLX);
    orderedPublish(h, 1, 1);
    orderedPublish(h, 2, 1);
    const restored = new QueueMachine(h.machine.currentConfig());
    restored.restore(h.machine.snapshot(), { index: h.index, term: 1, ts: h.ts });
    const command = (messageId: number, horizon: number) =>
      ({
        type: 'enqueue',
        size: 10,
        ttl: undefined,
        message: storedMessage(10),
        publishId: { source: 'p.handle-1', messageId, horizon },
        ordered: true,
      }) as const;
    expect(restored.apply(command(4, 3), { index: h.index + 1, term: 1, ts: h.ts }).reply.type).toBe(
      'outOfOrder',
    );
    expect(restored.apply(command(3, 3), { index: h.index + 2, term: 1, ts: h.ts }).reply.type).toBe('ok');
  });
});
