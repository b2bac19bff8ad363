import type { FieldValue } from '@styx/client/wire';
import { decodeBatch, encodeBatch, frame, tableGet } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { DeadLetterInput, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import { keysValue, message, typedTable } from './test-support.ts';
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

function keysOf(msg: DeadLetterMessage): string[] {
  return (msg.properties.headers?.entries ?? []).map((e) => e.key);
}

describe('deadLetterCopy: CC and BCC', () => {
  const msg = message({
    routingKey: 'rk',
    headers: { CC: keysValue('c1', 'c2'), 'x-app': { longStr: 'demo' } },
    bcc: ['b1'],
  });

  it('without a DLK: routes on rk + CC + BCC, keeps CC in the headers and BCC hidden', () => {
    const copy = dl(msg);
    expect(copy.routingKeys).toEqual(['rk', 'c1', 'c2', 'b1']);
    expect(copy.routingKey).toBe('rk');
    expect(copy.bcc).toEqual(['b1']);
    expect(tableGet(copy.properties.headers, 'CC')).toEqual(keysValue('c1', 'c2'));
    expect(readXDeath(tableGet(copy.properties.headers, 'x-death'))[0]?.routingKeys).toEqual([
      'rk',
      'c1',
      'c2',
    ]);
  });

  it('with a DLK: routes on the DLK only, drops CC and the hidden BCC keys', () => {
    const copy = dl(msg, { dlk: 'to-q3' });
    expect(copy.routingKeys).toEqual(['to-q3']);
    expect(copy.routingKey).toBe('to-q3');
    expect(copy.bcc).toBeUndefined();
    expect(tableGet(copy.properties.headers, 'CC')).toBeUndefined();
    expect(readXDeath(tableGet(copy.properties.headers, 'x-death'))[0]?.routingKeys).toEqual([
      'rk',
      'c1',
      'c2',
    ]);
  });

  it('after a DLK, the next dead-lettering without one routes on the DLK alone (CC is gone)', () => {
    const second = dl(dl(msg, { dlk: 'k' }), { queue: 'q2' });
    expect(second.routingKeys).toEqual(['k']);
    expect(readXDeath(tableGet(second.properties.headers, 'x-death'))[0]?.routingKeys).toEqual(['k']);
  });

  it('a BCC header still in the headers is removed and never recorded, with or without a DLK', () => {
    const withBccHeader = message({
      routingKey: 'rk',
      headers: { BCC: keysValue('b9'), CC: keysValue('c1') },
    });
    for (const dlk of [undefined, 'k']) {
      const copy = dl(withBccHeader, { dlk });
      expect(keysOf(copy)).not.toContain('BCC');
      expect(readXDeath(tableGet(copy.properties.headers, 'x-death'))[0]?.routingKeys).toEqual(['rk', 'c1']);
    }
  });

  it('reads CC as the router does: long or short strings in an array, or one string', () => {
    const mixed: FieldValue = { array: { values: [{ longStr: 'a' }, { shortStr: 'b' }, { i32: 3 }] } };
    expect(dl(message({ routingKey: 'rk', headers: { CC: mixed } })).routingKeys).toEqual(['rk', 'a', 'b']);
    expect(dl(message({ routingKey: 'rk', headers: { CC: { longStr: 'one' } } })).routingKeys).toEqual([
      'rk',
      'one',
    ]);
    expect(dl(message({ routingKey: 'rk', headers: { CC: { i32: 1 } } })).routingKeys).toEqual(['rk']);
  });
});

describe('deadLetterCopy: x-death', () => {
  it('the same {queue, reason} twice: count 2, moved to the front, sorted, first event kept', () => {
    let m = dl(message({ exchange: 'orders', routingKey: 'k1', properties: { expiration: '500' } }), {
      queue: 'a',
      reason: 'expired',
      dlx: 'd1',
      timeSeconds: T0,
    });
    m = dl(m, { queue: 'b', reason: 'rejected', dlx: 'd2', timeSeconds: T0 + 1 });
    m = dl(m, { queue: 'a', reason: 'expired', dlx: 'd3', timeSeconds: T0 + 2 });
    const xDeath = typedTable(m.properties.headers)['x-death']?.v as { v: Record<string, unknown> }[];
    expect(xDeath).toHaveLength(2);
    const front = xDeath[0]?.v as Record<string, unknown>;
    expect(Object.keys(front)).toEqual([
      'count',
      'exchange',
      'original-expiration',
      'queue',
      'reason',
      'routing-keys',
      'time',
    ]);
    expect(front).toEqual({
      count: { t: 'l', v: 2 },
      exchange: { t: 'S', v: 'orders' },
      'original-expiration': { t: 'S', v: '500' },
      queue: { t: 'S', v: 'a' },
      reason: { t: 'S', v: 'expired' },
      'routing-keys': { t: 'A', v: [{ t: 'S', v: 'k1' }] },
      time: { t: 'T', v: T0 },
    });
    expect((xDeath[1]?.v as Record<string, unknown>).queue).toEqual({ t: 'S', v: 'b' });
  });

  it('the first entry keeps construction order, with original-expiration last', () => {
    const m = dl(message({ properties: { expiration: '500' } }));
    const entry = (typedTable(m.properties.headers)['x-death']?.v as { v: object }[])[0]?.v as object;
    expect(Object.keys(entry)).toEqual([
      'count',
      'reason',
      'queue',
      'time',
      'exchange',
      'routing-keys',
      'original-expiration',
    ]);
  });

  it('an x-death that is not an array is reset to one fresh entry', () => {
    const m = dl(message({ headers: { 'x-death': { longStr: 'garbage' } } }), { queue: 'q9' });
    const deaths = readXDeath(tableGet(m.properties.headers, 'x-death'));
    expect(deaths).toHaveLength(1);
    expect(deaths[0]).toMatchObject({ queue: 'q9', count: 1 });
  });

  it('duplicate entries for one pair (written by a client) merge into one, counts summed', () => {
    const entry = (count: number): FieldValue => ({
      table: {
        entries: [
          { key: 'count', value: { i64: count } },
          { key: 'queue', value: { longStr: 'q1' } },
          { key: 'reason', value: { longStr: 'rejected' } },
        ],
      },
    });
    const other: FieldValue = { longStr: 'not a table' };
    const xDeath: FieldValue = { array: { values: [entry(2), other, entry(3)] } };
    const m = dl(message({ headers: { 'x-death': xDeath } }), { queue: 'q1', reason: 'rejected' });
    const values = (tableGet(m.properties.headers, 'x-death') as { array: { values: FieldValue[] } }).array
      .values;
    expect(values).toHaveLength(2);
    expect(readXDeath(tableGet(m.properties.headers, 'x-death'))[0]?.count).toBe(6);
    expect(values[1]).toBe(other);
  });

  it('an entry whose count is missing counts as one event', () => {
    const xDeath: FieldValue = {
      array: {
        values: [
          {
            table: {
              entries: [
                { key: 'queue', value: { longStr: 'q1' } },
                { key: 'reason', value: { longStr: 'expired' } },
              ],
            },
          },
        ],
      },
    };
    const m = dl(message({ headers: { 'x-death': xDeath } }), { queue: 'q1', reason: 'expired' });
    expect(readXDeath(tableGet(m.properties.headers, 'x-death'))[0]?.count).toBe(2);
  });
});

describe('deadLetterCopy: x-first-death-*', () => {
  it('kept when present, even on a first dead-lettering', () => {
    const m = dl(message({ headers: { 'x-first-death-reason': { longStr: 'maxlen' } } }), {
      reason: 'expired',
    });
    expect(tableGet(m.properties.headers, 'x-first-death-reason')).toEqual({ longStr: 'maxlen' });
    expect(tableGet(m.properties.headers, 'x-first-death-queue')).toEqual({ longStr: 'q1' });
  });

  it('not invented for a message that already has a history without them', () => {
    const history = dl(message());
    const stripped: DeadLetterMessage = {
      ...history,
      properties: {
        headers: {
          entries: (history.properties.headers?.entries ?? []).filter(
            (e) => !e.key.startsWith('x-first-death'),
          ),
        },
      },
    };
    const m = dl(stripped, { queue: 'q2' });
    expect(keysOf(m).filter((k) => k.startsWith('x-first-death'))).toEqual([]);
  });
});

describe('deadLetterCopy: everything else', () => {
  it('sorts the headers by key, as RabbitMQ rewrites them; duplicate keys keep their order', () => {
    const m = message({
      headers: { zeta: { i8: 1 }, alpha: { i8: 2 }, 'x-num': { i8: 3 } },
    });
    m.properties.headers?.entries.push({ key: 'alpha', value: { i8: 4 } });
    const copy = dl(m);
    expect(keysOf(copy)).toEqual([
      'alpha',
      'alpha',
      'x-death',
      'x-first-death-exchange',
      'x-first-death-queue',
      'x-first-death-reason',
      'x-num',
      'zeta',
    ]);
    expect(copy.properties.headers?.entries.filter((e) => e.key === 'alpha').map((e) => e.value)).toEqual([
      { i8: 2 },
      { i8: 4 },
    ]);
  });

  it('keeps the body and every other property, and never mutates its input', () => {
    const msg = message({
      headers: { CC: keysValue('c') },
      properties: {
        contentType: 'application/json',
        contentEncoding: 'gzip',
        deliveryMode: 2,
        priority: 5,
        correlationId: 'corr',
        replyTo: 'reply',
        expiration: '1000',
        messageId: 'm1',
        timestamp: 1_700_000_000,
        type: 'order',
        userId: 'guest',
        appId: 'app',
        clusterId: 'cluster',
      },
      bcc: ['b'],
    });
    const before = structuredClone(msg);
    const copy = dl(msg, { dlk: 'k' });
    expect(msg).toEqual(before);
    expect(copy.body).toBe(msg.body);
    const { headers: _h, ...others } = copy.properties;
    expect(others).toEqual({
      contentType: 'application/json',
      contentEncoding: 'gzip',
      deliveryMode: 2,
      priority: 5,
      correlationId: 'corr',
      replyTo: 'reply',
      messageId: 'm1',
      timestamp: 1_700_000_000,
      type: 'order',
      userId: 'guest',
      appId: 'app',
      clusterId: 'cluster',
    });
  });

  it('is deterministic: the same committed input gives an identical copy (a retried hand-off)', () => {
    const msg = message({ headers: { CC: keysValue('c') }, properties: { expiration: '9' }, bcc: ['b'] });
    expect(dl(msg, { reason: 'expired' })).toEqual(dl(msg, { reason: 'expired' }));
  });

  it('accepts a message decoded from the wire, and its copy encodes', () => {
    const [decoded] = decodeBatch(
      encodeBatch([
        frame(1, 'basicPublish', {
          exchange: 'ex',
          routingKey: 'rk',
          mandatory: false,
          immediate: false,
          properties: {
            contentType: 'text/plain',
            expiration: '100',
            headers: { entries: [{ key: 'CC', value: keysValue('c1') }] },
          },
          body: new TextEncoder().encode('x'),
        }),
      ]),
    );
    if (decoded?.method !== 'basicPublish') throw new Error('decode');
    const p = decoded.basicPublish;
    const copy = dl({
      exchange: p.exchange,
      routingKey: p.routingKey,
      properties: p.properties ?? {},
      body: p.body,
      bcc: undefined,
    });
    expect(copy.routingKeys).toEqual(['rk', 'c1']);
    expect(copy.properties.expiration).toBeUndefined();
    expect(copy.properties.contentType).toBe('text/plain');
    const [again] = decodeBatch(
      encodeBatch([
        frame(1, 'basicPublish', {
          exchange: copy.exchange,
          routingKey: copy.routingKey,
          mandatory: false,
          immediate: false,
          properties: copy.properties,
          body: copy.body,
        }),
      ]),
    );
    if (again?.method !== 'basicPublish') throw new Error('decode');
    expect(typedTable(again.basicPublish.properties?.headers)).toEqual(typedTable(copy.properties.headers));
  });
});
