import type { Channel, ConfirmChannel } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  drain,
  getOne,
  rejectionOf,
  unique,
  useBroker,
  WAIT_MS,
  withTimeout,
} from './messaging-helpers.ts';

// Exchanges against a real `styx server`: every exchange type routes as RabbitMQ's does, the
// default and amq.* exchanges exist, exchange-to-exchange bindings chain, and declare / delete
// follow RabbitMQ's rules and reply codes.
const { connect } = useBroker();

interface Setup {
  ch: ConfirmChannel;
  /** A plain channel on the same connection, for declares expected to fail. */
  other(): Promise<Channel>;
}

async function setup(): Promise<Setup> {
  const conn = await connect();
  const ch = await conn.createConfirmChannel();
  return { ch, other: () => conn.createChannel() };
}

/** Declare a non-durable queue per name and bind it to `exchange` with the given pattern/args. */
async function queuesBound(
  ch: Channel,
  exchange: string,
  bindings: Record<string, { key?: string; args?: Record<string, unknown> }[]>,
): Promise<Record<string, string>> {
  const names: Record<string, string> = {};
  for (const [label, list] of Object.entries(bindings)) {
    const { queue } = await ch.assertQueue(unique(`q.${label}`), { durable: false });
    names[label] = queue;
    for (const b of list) await ch.bindQueue(queue, exchange, b.key ?? '', b.args);
  }
  return names;
}

/** label → bodies found in that queue (drained). */
async function contents(ch: Channel, names: Record<string, string>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [label, queue] of Object.entries(names)) out[label] = await drain(ch, queue);
  return out;
}

describe('standard exchanges', () => {
  it('every vhost has the default exchange and the amq.* exchanges, which cannot be deleted', async () => {
    const { ch, other } = await setup();
    for (const name of ['amq.direct', 'amq.fanout', 'amq.topic', 'amq.headers', 'amq.match']) {
      await expect(ch.checkExchange(name)).resolves.toEqual({});
    }
    // An equivalent redeclare of a standard exchange is fine (RabbitMQ checks the prefix only on create).
    await expect(ch.assertExchange('amq.topic', 'topic', { durable: true })).resolves.toEqual({
      exchange: 'amq.topic',
    });
    const del = await other();
    expect((await rejectionOf(del.deleteExchange('amq.fanout'))).code).toBe(403);
    const decl = await other();
    expect((await rejectionOf(decl.assertExchange('amq.custom', 'direct'))).code).toBe(403);
    const dflt = await other();
    expect((await rejectionOf(dflt.assertExchange('', 'direct'))).code).toBe(403);
  });

  it('the default exchange routes to the queue named by the routing key and cannot be bound', async () => {
    const { ch, other } = await setup();
    const { queue } = await ch.assertQueue(unique('q.default'), { durable: false });
    ch.publish('', queue, Buffer.from('by name'));
    ch.publish('', `${queue}.nope`, Buffer.from('nowhere'));
    await ch.waitForConfirms();
    const msg = await getOne(ch, queue);
    expect({ ...msg.fields, body: msg.content.toString() }).toMatchObject({
      exchange: '',
      routingKey: queue,
      redelivered: false,
      messageCount: 0,
      body: 'by name',
    });
    const bind = await other();
    expect((await rejectionOf(bind.bindQueue(queue, '', queue))).code).toBe(403);
  });

  it('amq.direct, amq.fanout, amq.topic and amq.headers route like their types', async () => {
    const { ch } = await setup();
    const names = {
      direct: (await queuesBound(ch, 'amq.direct', { d: [{ key: 'k1' }] })).d as string,
      fanout: (await queuesBound(ch, 'amq.fanout', { f: [{ key: 'ignored' }] })).f as string,
      topic: (await queuesBound(ch, 'amq.topic', { t: [{ key: 'k1.#' }] })).t as string,
      headers: (await queuesBound(ch, 'amq.headers', { h: [{ args: { 'x-match': 'any', k: 1 } }] }))
        .h as string,
    };
    ch.publish('amq.direct', 'k1', Buffer.from('direct'));
    ch.publish('amq.fanout', 'anything', Buffer.from('fanout'));
    ch.publish('amq.topic', 'k1.a.b', Buffer.from('topic'));
    ch.publish('amq.headers', '', Buffer.from('headers'), { headers: { k: 1 } });
    await ch.waitForConfirms();
    // amq.fanout delivers to every queue bound to it, which may include other tests' queues: only ours is checked.
    expect(await contents(ch, names)).toEqual({
      direct: ['direct'],
      fanout: ['fanout'],
      topic: ['topic'],
      headers: ['headers'],
    });
  });
});

describe('routing by exchange type', () => {
  it('direct: exact routing-key match, one copy per queue however many bindings match', async () => {
    const { ch } = await setup();
    const x = unique('x.direct');
    await ch.assertExchange(x, 'direct', { durable: false });
    const names = await queuesBound(ch, x, {
      red: [{ key: 'red' }],
      both: [{ key: 'red' }, { key: 'green' }],
    });
    for (const key of ['red', 'green', 'blue', 'RED', 'red.x']) ch.publish(x, key, Buffer.from(key));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({ red: ['red'], both: ['red', 'green'] });
  });

  it('fanout: every bound queue, whatever the routing key', async () => {
    const { ch } = await setup();
    const x = unique('x.fanout');
    await ch.assertExchange(x, 'fanout', { durable: false });
    const names = await queuesBound(ch, x, { a: [{ key: 'a' }], b: [{ key: '' }] });
    ch.publish(x, 'zzz', Buffer.from('m1'));
    ch.publish(x, '', Buffer.from('m2'));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({ a: ['m1', 'm2'], b: ['m1', 'm2'] });
  });

  it('topic: * matches exactly one word, # zero or more', async () => {
    const { ch } = await setup();
    const x = unique('x.topic');
    await ch.assertExchange(x, 'topic', { durable: false });
    const names = await queuesBound(ch, x, {
      aStar: [{ key: 'a.*' }],
      aHash: [{ key: 'a.#' }],
      hash: [{ key: '#' }],
      starB: [{ key: '*.b.#' }],
      hashC: [{ key: '#.c' }],
      exact: [{ key: 'a.b.c' }],
      star: [{ key: '*' }],
      overlap: [{ key: 'a.#' }, { key: '#.c' }],
    });
    const keys = ['a', 'a.b', 'a.b.c', 'x.b', 'a.x.b', 'c', 'a.c'];
    for (const key of keys) ch.publish(x, key, Buffer.from(key));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({
      aStar: ['a.b', 'a.c'],
      aHash: ['a', 'a.b', 'a.b.c', 'a.x.b', 'a.c'],
      hash: keys,
      starB: ['a.b', 'a.b.c', 'x.b'],
      hashC: ['a.b.c', 'c', 'a.c'],
      exact: ['a.b.c'],
      star: ['a', 'c'],
      // Matched by both bindings, delivered once.
      overlap: ['a', 'a.b', 'a.b.c', 'a.x.b', 'c', 'a.c'],
    });
  });

  it('headers: x-match all (the default) and any, typed values compared as RabbitMQ does', async () => {
    const { ch } = await setup();
    const x = unique('x.headers');
    await ch.assertExchange(x, 'headers', { durable: false });
    const names = await queuesBound(ch, x, {
      all: [{ args: { 'x-match': 'all', format: 'pdf', type: 'report' } }],
      any: [{ args: { 'x-match': 'any', format: 'pdf', type: 'report' } }],
      implicitAll: [{ args: { format: 'pdf' } }],
      // amqplib encodes 5 as a signed byte; any integer width, float or double equal to 5 matches.
      number: [{ args: { n: 5 } }],
      bool: [{ args: { flag: true } }],
      // A void value matches on the header's presence alone.
      presence: [{ args: { 'x-match': 'any', k: null } }],
    });
    const publish = (body: string, headers?: Record<string, unknown>): void => {
      ch.publish(x, 'routing-key-ignored', Buffer.from(body), headers === undefined ? {} : { headers });
    };
    publish('pdf-report', { format: 'pdf', type: 'report' });
    publish('pdf-log', { format: 'pdf', type: 'log' });
    publish('report', { type: 'report' });
    publish('zip', { format: 'zip' });
    publish('long-5', { n: { '!': 'long', value: 5 } });
    publish('double-5', { n: { '!': 'double', value: 5 } });
    publish('string-5', { n: '5' });
    publish('six', { n: 6 });
    publish('true', { flag: true });
    publish('false', { flag: false });
    publish('k-string', { k: 'anything' });
    publish('k-zero', { k: 0 });
    publish('no-headers');
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({
      all: ['pdf-report'],
      any: ['pdf-report', 'pdf-log', 'report'],
      implicitAll: ['pdf-report', 'pdf-log'],
      number: ['long-5', 'double-5'],
      bool: ['true'],
      presence: ['k-string', 'k-zero'],
    });
  });

  it('headers: unbinding needs the same arguments; an invalid x-match is 406', async () => {
    const { ch, other } = await setup();
    const x = unique('x.headers');
    await ch.assertExchange(x, 'headers', { durable: false });
    const args = { 'x-match': 'any', a: 'one', b: 'two' };
    const { q } = await queuesBound(ch, x, { q: [{ args }] });
    const queue = q as string;
    // Different arguments name a different binding: nothing to remove, and routing goes on.
    await ch.unbindQueue(queue, x, '', { 'x-match': 'any', a: 'one' });
    ch.publish(x, '', Buffer.from('still bound'), { headers: { b: 'two' } });
    await ch.waitForConfirms();
    expect(await drain(ch, queue)).toEqual(['still bound']);
    await ch.unbindQueue(queue, x, '', args);
    ch.publish(x, '', Buffer.from('unbound'), { headers: { b: 'two' } });
    await ch.waitForConfirms();
    expect(await drain(ch, queue)).toEqual([]);

    const bad = await other();
    const err = await rejectionOf(bad.bindQueue(queue, x, '', { 'x-match': 'some' }));
    expect(err.code).toBe(406);
    expect(err.message).toMatch(/x-match/);
  });
});

describe('exchange-to-exchange bindings', () => {
  it('route along a chain, keeping the original exchange and routing key, and stop when unbound', async () => {
    const { ch } = await setup();
    const src = unique('e2e.src');
    const mid = unique('e2e.mid');
    const leaf = unique('e2e.leaf');
    await ch.assertExchange(src, 'topic', { durable: false });
    await ch.assertExchange(mid, 'fanout', { durable: false, internal: true });
    await ch.assertExchange(leaf, 'direct', { durable: false });
    await ch.bindExchange(mid, src, 'orders.#');
    await ch.bindExchange(leaf, mid, 'key-ignored-by-fanout');
    const { direct } = await queuesBound(ch, leaf, { direct: [{ key: 'orders.new' }] });
    // A queue may bind to an internal exchange; only publishing to one directly is refused.
    const { viaMid } = await queuesBound(ch, mid, { viaMid: [{}] });

    for (const key of ['orders.new', 'orders.old', 'payments.new']) ch.publish(src, key, Buffer.from(key));
    await ch.waitForConfirms();
    const msg = await getOne(ch, direct as string);
    expect(msg.fields).toMatchObject({ exchange: src, routingKey: 'orders.new' });
    expect(await drain(ch, direct as string)).toEqual([]);
    expect(await drain(ch, viaMid as string)).toEqual(['orders.new', 'orders.old']);

    await ch.unbindExchange(mid, src, 'orders.#');
    ch.publish(src, 'orders.new', Buffer.from('after unbind'));
    await ch.waitForConfirms();
    expect(await drain(ch, direct as string)).toEqual([]);
    expect(await drain(ch, viaMid as string)).toEqual([]);
  });

  it('a cycle of exchanges delivers each message once to each queue', async () => {
    const { ch } = await setup();
    const x1 = unique('cycle.1');
    const x2 = unique('cycle.2');
    await ch.assertExchange(x1, 'fanout', { durable: false });
    await ch.assertExchange(x2, 'fanout', { durable: false });
    await ch.bindExchange(x2, x1, '');
    await ch.bindExchange(x1, x2, '');
    const names = await queuesBound(ch, x1, { both: [{}] });
    await ch.bindQueue(names.both as string, x2, '');
    ch.publish(x1, '', Buffer.from('once'));
    ch.publish(x2, '', Buffer.from('twice?'));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({ both: ['once', 'twice?'] });
  });

  it('deleting a destination exchange removes its bindings', async () => {
    const { ch } = await setup();
    const src = unique('del.src');
    const dst = unique('del.dst');
    await ch.assertExchange(src, 'fanout', { durable: false });
    await ch.assertExchange(dst, 'fanout', { durable: false });
    await ch.bindExchange(dst, src, '');
    const names = await queuesBound(ch, dst, { q: [{}] });
    await ch.deleteExchange(dst);
    // Re-created with the same name, it is a new exchange with no bindings.
    await ch.assertExchange(dst, 'fanout', { durable: false });
    await ch.bindQueue(names.q as string, dst, '');
    ch.publish(src, '', Buffer.from('src'), { mandatory: true });
    ch.publish(dst, '', Buffer.from('dst'));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({ q: ['dst'] });
  });
});

describe('exchange declare and delete', () => {
  it('passive declare of a missing exchange closes the channel with 404; the connection lives on', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const closed = channelClosed(ch);
    const err = await rejectionOf(ch.checkExchange(unique('missing')));
    expect(err.code).toBe(404);
    expect(err.message).toMatch(/NOT.FOUND/);
    await closed;
    const again = await conn.createChannel();
    await expect(again.checkExchange('amq.direct')).resolves.toEqual({});
  });

  it('a re-declare with a different type, flag or alternate-exchange is 406; other arguments may differ', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const x = unique('x.redeclare');
    await ch.assertExchange(x, 'direct', {
      durable: true,
      arguments: { 'alternate-exchange': 'ae', custom: 1 },
    });
    // Equivalent (custom arguments are not compared, as in RabbitMQ).
    await ch.assertExchange(x, 'direct', {
      durable: true,
      arguments: { 'alternate-exchange': 'ae', custom: 2 },
    });
    const variants: [string, string, Parameters<Channel['assertExchange']>[2]][] = [
      ['type', 'fanout', { durable: true, alternateExchange: 'ae' }],
      ['durable', 'direct', { durable: false, alternateExchange: 'ae' }],
      ['auto_delete', 'direct', { durable: true, autoDelete: true, alternateExchange: 'ae' }],
      ['internal', 'direct', { durable: true, internal: true, alternateExchange: 'ae' }],
      ['alternate-exchange', 'direct', { durable: true, alternateExchange: 'other' }],
    ];
    for (const [field, type, options] of variants) {
      const c = await conn.createChannel();
      const err = await rejectionOf(c.assertExchange(x, type, options), `406 for ${field}`);
      expect(err.code, field).toBe(406);
      expect(err.message, field).toContain(`inequivalent arg '${field}'`);
    }
    await ch.deleteExchange(x);
  });

  it('an internal exchange refuses a direct publish with 403 but receives through bindings', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const src = unique('int.src');
    const internal = unique('int.x');
    await ch.assertExchange(src, 'fanout', { durable: false });
    await ch.assertExchange(internal, 'fanout', { durable: false, internal: true });
    await ch.bindExchange(internal, src, '');
    const names = await queuesBound(ch, internal, { q: [{}] });
    ch.publish(src, '', Buffer.from('via binding'));
    await ch.waitForConfirms();
    expect(await contents(ch, names)).toEqual({ q: ['via binding'] });

    const pub = await conn.createChannel();
    const closed = channelClosed(pub);
    pub.publish(internal, '', Buffer.from('direct'));
    const err = await closed;
    expect(err?.code).toBe(403);
    expect(err?.message).toContain('internal exchange');
    expect(await drain(ch, names.q as string)).toEqual([]);
  });

  it('an auto-delete exchange goes when its last binding goes, not before', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const x = unique('x.autodelete');
    await ch.assertExchange(x, 'fanout', { durable: false, autoDelete: true });
    const names = await queuesBound(ch, x, { a: [{}], b: [{}] });
    await ch.unbindQueue(names.a as string, x, '');
    await expect(ch.checkExchange(x)).resolves.toEqual({});
    // Deleting the last bound queue removes the last binding.
    await ch.deleteQueue(names.b as string);
    const closed = channelClosed(ch);
    expect((await rejectionOf(ch.checkExchange(x))).code).toBe(404);
    await closed;
  });

  it('delete if-unused refuses an exchange with bindings (406); delete of a missing one is fine', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const x = unique('x.ifunused');
    await ch.assertExchange(x, 'direct', { durable: false });
    const names = await queuesBound(ch, x, { q: [{ key: 'k' }] });
    const c = await conn.createChannel();
    const err = await rejectionOf(c.deleteExchange(x, { ifUnused: true }));
    expect(err.code).toBe(406);
    expect(err.message).toContain('in use');
    await ch.unbindQueue(names.q as string, x, 'k');
    await expect(ch.deleteExchange(x, { ifUnused: true })).resolves.toEqual({});
    await expect(ch.deleteExchange(x)).resolves.toEqual({});
    const check = await conn.createChannel();
    expect((await rejectionOf(check.checkExchange(x))).code).toBe(404);
  });

  it('publishing to a missing exchange closes the channel with 404; a new channel works', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const closed = channelClosed(ch);
    const missing = unique('missing');
    ch.publish(missing, 'k', Buffer.from('lost'));
    const err = await closed;
    expect(err?.code).toBe(404);
    expect(err?.message).toContain(`no exchange '${missing}' in vhost '/'`);
    expect(() => ch.publish('', 'k', Buffer.from('x'))).toThrow(/Channel closed/);
    const next = await conn.createConfirmChannel();
    const { queue } = await next.assertQueue('', { exclusive: true });
    next.sendToQueue(queue, Buffer.from('ok'));
    await withTimeout(next.waitForConfirms(), WAIT_MS, 'confirm');
    expect(await drain(next, queue)).toEqual(['ok']);
  });
});
