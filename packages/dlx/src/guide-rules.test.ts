// One test per rule of RabbitMQ's "Dead Letter Exchanges" guide (shared/seeds/001_*.txt), each named
// after the rule it checks. Styx's deliberate difference (a missing DLX keeps and retries instead of
// dropping silently) is tested as such at the end.
import type { FieldValue } from '@styx/client/wire';
import { tableGet } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { isCycle } from './cycle.ts';
import type { DeadLetterInput, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import { DEAD_LETTER_REASONS } from './dead-letter-reason.ts';
import { HandOffScheduler } from './hand-off.ts';
import { keysValue, message, typedTable, typedValue } from './test-support.ts';
import { readXDeath } from './x-death.ts';

const T0 = 1_795_308_382;

function dl(msg: DeadLetterMessage, over: Partial<DeadLetterInput> = {}) {
  return deadLetterCopy({
    message: msg,
    queue: 'q1',
    reason: 'rejected',
    dlx: 'dlx',
    dlk: undefined,
    timeSeconds: T0,
    ...over,
  });
}

function header(msg: DeadLetterMessage, key: string): FieldValue | undefined {
  return tableGet(msg.properties.headers, key);
}

function deaths(msg: DeadLetterMessage) {
  return readXDeath(header(msg, 'x-death'));
}

describe("RabbitMQ's guide: Dead Letter Exchanges", () => {
  it('"the exchange name is replaced with that of the latest dead-letter exchange"', () => {
    const once = dl(message({ exchange: 'orders' }), { dlx: 'dlx-a' });
    expect(once.exchange).toBe('dlx-a');
    const twice = dl(once, { queue: 'q2', dlx: 'dlx-b' });
    expect(twice.exchange).toBe('dlx-b');
  });

  it('"dead-lettered messages are routed with the routing key specified for the queue they were on"', () => {
    const copy = dl(message({ routingKey: 'foo' }), { dlk: 'bar' });
    expect(copy.routingKey).toBe('bar');
    expect(copy.routingKeys).toEqual(['bar']);
  });

  it('"if the above happens, the CC header will also be removed"', () => {
    const msg = message({ routingKey: 'foo', headers: { CC: keysValue('c1') } });
    expect(header(dl(msg, { dlk: 'bar' }), 'CC')).toBeUndefined();
    expect(header(dl(msg), 'CC')).toEqual(keysValue('c1'));
  });

  it('"the BCC header will be removed as per Sender-selected distribution"', () => {
    const msg = message({ headers: { BCC: keysValue('b1') }, bcc: ['b1'] });
    expect(header(dl(msg), 'BCC')).toBeUndefined();
    expect(header(dl(msg, { dlk: 'bar' }), 'BCC')).toBeUndefined();
  });

  it('"if a specific routing key was not set for the queue, messages on it are dead-lettered with all their original routing keys", CC and BCC included', () => {
    const msg = message({ routingKey: 'foo', headers: { CC: keysValue('c1', 'c2') }, bcc: ['b1'] });
    const copy = dl(msg);
    expect(copy.routingKey).toBe('foo');
    expect(copy.routingKeys).toEqual(['foo', 'c1', 'c2', 'b1']);
    expect(copy.bcc).toEqual(['b1']);
  });

  it('"x-death contains an entry for each dead lettering event, identified by a pair of {queue, reason}"', () => {
    let m = dl(message(), { queue: 'q1', reason: 'rejected' });
    m = dl(m, { queue: 'q1', reason: 'expired' });
    m = dl(m, { queue: 'q2', reason: 'rejected' });
    m = dl(m, { queue: 'q1', reason: 'rejected' });
    const pairs = deaths(m).map((d) => `${d.queue}/${d.reason}`);
    expect(pairs).toEqual(['q1/rejected', 'q2/rejected', 'q1/expired']);
    expect(new Set(pairs).size).toBe(pairs.length);
  });

  it('"queue: the name of the queue the message was in before it was dead-lettered"', () => {
    expect(deaths(dl(message(), { queue: 'orders.q' }))[0]?.queue).toBe('orders.q');
  });

  it('"reason: the reason for dead lettering" is one of rejected, expired, maxlen, delivery_limit', () => {
    for (const reason of DEAD_LETTER_REASONS) {
      const entry = deaths(dl(message(), { reason }))[0];
      expect(entry?.reason).toBe(reason);
    }
    expect(() => dl(message(), { reason: 'deleted' as never })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_INPUT' }),
    );
  });

  it('"time: the date and time the message was dead lettered as a 64-bit AMQP 0-9-1 timestamp"', () => {
    const xDeath = typedTable(dl(message(), { timeSeconds: T0 }).properties.headers)['x-death'];
    const entry = (xDeath?.v as { v: Record<string, unknown> }[])[0];
    expect(entry?.v.time).toEqual({ t: 'T', v: T0 });
    expect(() => dl(message(), { timeSeconds: 1.5 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_INPUT' }),
    );
  });

  it('"exchange: the exchange the message was published to (note, this is a dead letter exchange if the message is dead lettered multiple times)"', () => {
    const once = dl(message({ exchange: 'orders' }), { dlx: 'dlx-a' });
    expect(deaths(once)[0]?.exchange).toBe('orders');
    const twice = dl(once, { queue: 'q2', dlx: 'dlx-b' });
    expect(deaths(twice)[0]?.exchange).toBe('dlx-a');
  });

  it('"routing-keys: the routing keys (including CC keys but excluding BCC ones) the message was published with"', () => {
    const msg = message({
      routingKey: 'foo',
      headers: { CC: keysValue('c1'), BCC: keysValue('b1') },
      bcc: ['b2'],
    });
    for (const dlk of [undefined, 'bar']) {
      const entry = typedTable(dl(msg, { dlk }).properties.headers)['x-death'];
      const table = (entry?.v as { v: Record<string, unknown> }[])[0]?.v;
      expect(table?.['routing-keys']).toEqual({
        t: 'A',
        v: [
          { t: 'S', v: 'foo' },
          { t: 'S', v: 'c1' },
        ],
      });
    }
  });

  it('"count: how many times this message was dead-lettered in this queue for this reason", a signed 64-bit integer', () => {
    let m = dl(message(), { queue: 'q1', reason: 'expired' });
    m = dl(m, { queue: 'q1', reason: 'expired' });
    m = dl(m, { queue: 'q1', reason: 'expired' });
    expect(deaths(m)).toHaveLength(1);
    expect(deaths(m)[0]?.count).toBe(3);
    const count = tableGet(
      (header(m, 'x-death') as { array: { values: { table: never }[] } }).array.values[0]?.table,
      'count',
    );
    expect(typedValue(count as FieldValue)).toEqual({ t: 'l', v: 3 });
  });

  it('"original-expiration: the original expiration property of the message" — on every dead-lettering of a message that had one, never from x-message-ttl alone', () => {
    for (const reason of DEAD_LETTER_REASONS) {
      const withExpiration = dl(message({ properties: { expiration: '60000' } }), { reason });
      expect(deaths(withExpiration)[0]?.originalExpiration).toBe('60000');
      // An expiry caused by the queue's x-message-ttl: the message has no expiration property.
      const queueTtl = dl(message(), { reason });
      expect(deaths(queueTtl)[0]?.originalExpiration).toBeUndefined();
    }
  });

  it('"The expiration property is removed from the message on dead-lettering to prevent it from expiring again"', () => {
    const copy = dl(message({ properties: { expiration: '60000', priority: 3 } }), { reason: 'expired' });
    expect(copy.properties.expiration).toBeUndefined();
    expect(copy.properties.priority).toBe(3);
  });

  it('"New entries are prepended to the beginning of the x-death array"', () => {
    const m = dl(dl(message(), { queue: 'q1' }), { queue: 'q2' });
    expect(deaths(m).map((d) => d.queue)).toEqual(['q2', 'q1']);
  });

  it('"In the case where x-death already contains an entry with the same queue and dead lettering reason, its count field is incremented and it is moved to the beginning of the array"', () => {
    let m = dl(message(), { queue: 'q1', reason: 'expired', timeSeconds: T0 });
    m = dl(m, { queue: 'q2', reason: 'rejected', timeSeconds: T0 + 1 });
    m = dl(m, { queue: 'q1', reason: 'expired', timeSeconds: T0 + 2 });
    const [front, back] = deaths(m);
    expect(front).toMatchObject({ queue: 'q1', reason: 'expired', count: 2, timeSeconds: T0 });
    expect(back).toMatchObject({ queue: 'q2', reason: 'rejected', count: 1 });
  });

  it('"Three top-level headers are added for the very first dead-lettering event": x-first-death-reason, -queue, -exchange', () => {
    const copy = dl(message({ exchange: 'orders' }), { queue: 'q1', reason: 'maxlen' });
    expect(header(copy, 'x-first-death-reason')).toEqual({ longStr: 'maxlen' });
    expect(header(copy, 'x-first-death-queue')).toEqual({ longStr: 'q1' });
    expect(header(copy, 'x-first-death-exchange')).toEqual({ longStr: 'orders' });
  });

  it('"Once added, these headers are never modified"', () => {
    const first = dl(message({ exchange: 'orders' }), { queue: 'q1', reason: 'maxlen', dlx: 'dlx-a' });
    const second = dl(first, { queue: 'q2', reason: 'expired', dlx: 'dlx-b' });
    for (const key of ['x-first-death-reason', 'x-first-death-queue', 'x-first-death-exchange']) {
      expect(header(second, key)).toEqual(header(first, key));
    }
  });

  it('"the array is sorted most-recent-first, so the most recent dead-lettering is recorded in the first entry"', () => {
    let m = dl(message(), { queue: 'a', timeSeconds: T0 });
    m = dl(m, { queue: 'b', timeSeconds: T0 + 10 });
    m = dl(m, { queue: 'c', timeSeconds: T0 + 20 });
    expect(deaths(m).map((d) => d.timeSeconds)).toEqual([T0 + 20, T0 + 10, T0]);
  });

  it('"Messages in such cycles (that is, messages that reach the same queue twice) are dropped if there was no rejection in the entire cycle"', () => {
    const expired = dl(message(), { queue: 'a', reason: 'expired' });
    expect(isCycle(expired.properties, 'a')).toBe(true);
    const rejected = dl(message(), { queue: 'a', reason: 'rejected' });
    expect(isCycle(rejected.properties, 'a')).toBe(false);
  });

  it('"this can happen when a queue dead-letters messages to the default exchange without specifying a dead-letter routing key"', () => {
    // Published to the default exchange with routing key "a" = straight into queue a.
    const copy = dl(message({ exchange: '', routingKey: 'a' }), {
      queue: 'a',
      reason: 'expired',
      dlx: '',
      dlk: undefined,
    });
    expect(copy.exchange).toBe('');
    expect(copy.routingKeys).toEqual(['a']); // the default exchange routes it back to a
    expect(isCycle(copy.properties, 'a')).toBe(true);
  });

  it('"at-least-once dead-lettering: messages are re-published with publisher confirms turned on internally" — the source settles only after every confirm', () => {
    const scheduler = new HandOffScheduler();
    scheduler.track(1, 0);
    const plan = scheduler.start(1, 0, { queues: ['t1', 't2'], cycleDropped: [] });
    expect(plan).toMatchObject({ type: 'send', queues: ['t1', 't2'] });
    expect(scheduler.confirm(1, 't1')).toBe('waiting');
    expect(scheduler.confirm(1, 't2')).toBe('settled');
  });

  it('"If it is missing then, the messages are silently dropped" — Styx keeps them and retries instead (never silent)', () => {
    const scheduler = new HandOffScheduler();
    scheduler.track(1, 0);
    expect(scheduler.start(1, 0, { queues: [], cycleDropped: [] })).toEqual({
      type: 'unroutable',
      attempt: 1,
      retryAt: 100,
    });
    expect(scheduler.has(1)).toBe(true);
    expect(scheduler.due(100)).toEqual([1]);
  });
});
