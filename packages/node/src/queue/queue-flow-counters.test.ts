import { describe, expect, it } from 'vitest';
import { QueueFlowCounters } from './queue-flow-counters.ts';
import type { QueueApplyResult, QueueCommand, QueueEffect, RemovalTotals, StoredMessage } from './types.ts';

const MESSAGE: StoredMessage = {
  exchange: '',
  routingKey: 'q',
  properties: {},
  body: new Uint8Array(1),
  bcc: undefined,
};

function result(
  reply: QueueApplyResult['reply'],
  effects: QueueEffect[] = [],
  removed: number[] = [],
): QueueApplyResult {
  return { reply, effects, removed };
}

function totals(t: Partial<RemovalTotals>): RemovalTotals {
  return { rejected: 0, expired: 0, maxlen: 0, delivery_limit: 0, ...t };
}

const enqueue: QueueCommand = { type: 'enqueue', size: 1, ttl: undefined, message: MESSAGE };

describe('QueueFlowCounters', () => {
  it('counts accepted publishes only, deliveries from effects and gets, and acks from what a settle removed', () => {
    const c = new QueueFlowCounters();
    c.count(enqueue, result({ type: 'ok' }));
    c.count(enqueue, result({ type: 'rejected', reason: 'maxlen' }));
    c.count(enqueue, result({ type: 'duplicate' }));
    c.count(
      { type: 'consume', owner: 'o', tag: 't', prefetch: 0, noAck: false, exclusive: false },
      result({ type: 'ok' }, [
        { type: 'deliver', owner: 'o', tag: 't', id: 1, redelivered: false, deliveryCount: 0 },
        { type: 'deliver', owner: 'o', tag: 't', id: 2, redelivered: true, deliveryCount: 1 },
      ]),
    );
    c.count(
      { type: 'get', owner: 'o', noAck: false },
      result({ type: 'got', id: 3, redelivered: true, deliveryCount: 1, messageCount: 0 }),
    );
    c.count({ type: 'get', owner: 'o', noAck: false }, result({ type: 'empty' }));
    // Two of the three ids were held by the owner: the machine removed those two.
    c.count({ type: 'settle', owner: 'o', ids: [1, 2, 99] }, result({ type: 'ok' }, [], [1, 2]));
    expect([c.published, c.delivered, c.redelivered, c.acked]).toEqual([1, 3, 2, 2]);
  });

  it('counts at-most-once dead-letters from the effects, at-least-once from a settle less those', () => {
    const c = new QueueFlowCounters();
    c.count(
      { type: 'discard', owner: 'o', ids: [1, 2] },
      result({ type: 'ok' }, [{ type: 'deadLetter', ids: [1, 2], reason: 'rejected', deadLetteredAt: 0 }]),
    );
    c.count(
      enqueue,
      result({ type: 'rejected', reason: 'maxlen' }, [
        { type: 'deadLetterRejected', index: 7, reason: 'maxlen', message: MESSAGE, deadLetteredAt: 0 },
      ]),
    );
    // A settle of 3 expired hand-offs, in an apply that also dropped one message at-most-once
    // (maxlen): the machine's totals rose by 3 expired and 1 maxlen.
    c.count(
      { type: 'deadLetterSettled', ids: [4, 5, 6] },
      result(
        { type: 'ok' },
        [{ type: 'deadLetter', ids: [8], reason: 'maxlen', deadLetteredAt: 0 }],
        [4, 5, 6, 8],
      ),
      { before: totals({ rejected: 2, maxlen: 1 }), after: totals({ rejected: 2, maxlen: 2, expired: 3 }) },
    );
    expect(c.deadLettered.at_most_once).toEqual(totals({ rejected: 2, maxlen: 2 }));
    expect(c.deadLettered.at_least_once).toEqual(totals({ expired: 3 }));
  });
});
