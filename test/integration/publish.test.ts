import type { ConsumeMessage, PublishOptions, ReturnMessage } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  confirmOutcome,
  drain,
  getOne,
  Inbox,
  rejectionOf,
  unique,
  useBroker,
  WAIT_MS,
  withTimeout,
} from './messaging-helpers.ts';

// Publishing against a real `styx server`: mandatory returns, publisher confirms (ack, nack, and
// their order relative to returns), every basic property end to end, user-id validation, and
// sender-selected distribution with the CC and BCC headers.
const { connect } = useBroker();

describe('mandatory and publisher confirms', () => {
  it('an unroutable mandatory message is returned (312 NO_ROUTE) before its confirm arrives', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const x = unique('x.mandatory');
    await ch.assertExchange(x, 'direct', { durable: false });
    const events: string[] = [];
    const returned: ReturnMessage[] = [];
    ch.on('return', (msg) => {
      events.push(`return ${msg.content.toString()}`);
      returned.push(msg);
    });
    const outcomes = await Promise.all([
      confirmOutcome(ch, x, 'nobody', 'm1', {
        mandatory: true,
        messageId: 'id-1',
        contentType: 'text/plain',
      }),
      confirmOutcome(ch, '', unique('no.such.queue'), 'm2', { mandatory: true }),
      confirmOutcome(ch, x, 'nobody', 'not mandatory'),
    ]).then((list) => {
      events.push(`acks ${list.join(',')}`);
      return list;
    });
    expect(outcomes).toEqual(['ack', 'ack', 'ack']);
    expect(events).toEqual(['return m1', 'return m2', 'acks ack,ack,ack']);
    const first = returned[0] as ReturnMessage;
    expect(first.fields).toEqual({
      replyCode: 312,
      replyText: 'NO_ROUTE',
      exchange: x,
      routingKey: 'nobody',
    });
    expect(first.properties).toMatchObject({ messageId: 'id-1', contentType: 'text/plain' });
  });

  it('each confirm callback runs after its own return, publish by publish', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    const events: string[] = [];
    ch.on('return', (msg) => events.push(`return ${msg.content.toString()}`));
    const done: Promise<void>[] = [];
    for (const [key, body] of [
      ['unroutable', 'a'],
      [queue, 'b'],
      ['unroutable', 'c'],
    ] as const) {
      done.push(
        new Promise<void>((resolve) =>
          ch.publish('', key, Buffer.from(body), { mandatory: true }, (err) => {
            events.push(`${err === null ? 'ack' : 'nack'} ${body}`);
            resolve();
          }),
        ),
      );
    }
    await withTimeout(Promise.all(done), WAIT_MS, 'confirms');
    expect(events.indexOf('return a')).toBeLessThan(events.indexOf('ack a'));
    expect(events.indexOf('return c')).toBeLessThan(events.indexOf('ack c'));
    expect(events.filter((e) => e.startsWith('ack'))).toEqual(['ack a', 'ack b', 'ack c']);
    expect(events).not.toContain('return b');
  });

  it('acks once every target queue has the message', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const x = unique('x.confirm');
    await ch.assertExchange(x, 'fanout', { durable: false });
    const queues: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { queue } = await ch.assertQueue(unique('q.confirm'), { durable: false });
      await ch.bindQueue(queue, x, '');
      queues.push(queue);
    }
    expect(await confirmOutcome(ch, x, '', 'everywhere', { persistent: true })).toBe('ack');
    for (const queue of queues) expect((await ch.checkQueue(queue)).messageCount).toBe(1);
  });

  it('a queue refusing the message (reject-publish overflow) makes the confirm a nack', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue: full } = await ch.assertQueue(unique('q.full'), {
      durable: false,
      maxLength: 1,
      overflow: 'reject-publish',
    });
    const { queue: free } = await ch.assertQueue(unique('q.free'), { durable: false });
    expect(await confirmOutcome(ch, '', full, 'fits')).toBe('ack');
    const nacked = await new Promise<Error | null>((resolve) =>
      ch.sendToQueue(full, Buffer.from('overflow'), {}, (err) => resolve(err)),
    );
    expect(nacked?.message).toBe('message nacked');
    ch.sendToQueue(full, Buffer.from('overflow again'));
    expect((await rejectionOf(ch.waitForConfirms(), 'waitForConfirms to reject')).message).toBe(
      'message nacked',
    );

    // Two targets, one refusing: nack, while the other queue keeps its copy (as RabbitMQ).
    const x = unique('x.partial');
    await ch.assertExchange(x, 'fanout', { durable: false });
    await ch.bindQueue(full, x, '');
    await ch.bindQueue(free, x, '');
    expect(await confirmOutcome(ch, x, '', 'partial')).toBe('nack');
    expect(await drain(ch, free)).toEqual(['partial']);
    expect(await drain(ch, full)).toEqual(['fits']);
    // Room again: accepted.
    expect(await confirmOutcome(ch, x, '', 'room')).toBe('ack');
  });

  it('a burst mixing refused and accepted publishes confirms each one correctly, in order', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue: full } = await ch.assertQueue(unique('q.burst.full'), {
      durable: false,
      maxLength: 2,
      overflow: 'reject-publish',
    });
    const { queue: free } = await ch.assertQueue(unique('q.burst.free'), { durable: false });
    const plan: [string, string][] = [
      [full, 'f0'],
      [free, 'a0'],
      [full, 'f1'],
      [free, 'a1'],
      [full, 'f2'],
      [full, 'f3'],
      [free, 'a2'],
      [free, 'a3'],
      [full, 'f4'],
    ];
    const order: string[] = [];
    const outcomes = await Promise.all(
      plan.map(
        ([queue, body]) =>
          new Promise<string>((resolve) =>
            ch.sendToQueue(queue, Buffer.from(body), {}, (err) => {
              const outcome = `${body}:${err === null ? 'ack' : 'nack'}`;
              order.push(outcome);
              resolve(outcome);
            }),
          ),
      ),
    );
    expect(outcomes).toEqual([
      'f0:ack',
      'a0:ack',
      'f1:ack',
      'a1:ack',
      'f2:nack',
      'f3:nack',
      'a2:ack',
      'a3:ack',
      'f4:nack',
    ]);
    // Confirms arrive in publish order.
    expect(order).toEqual(outcomes);
    expect(await drain(ch, full)).toEqual(['f0', 'f1']);
    expect(await drain(ch, free)).toEqual(['a0', 'a1', 'a2', 'a3']);
  });

  it('reject-publish-dlx overflow nacks too', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.full.dlx'), {
      durable: false,
      maxLength: 1,
      overflow: 'reject-publish-dlx',
    });
    expect(await confirmOutcome(ch, '', queue, 'one')).toBe('ack');
    expect(await confirmOutcome(ch, '', queue, 'two')).toBe('nack');
    expect(await drain(ch, queue)).toEqual(['one']);
  });
});

describe('message properties', () => {
  const timestamp = 1_700_000_000;
  const options: PublishOptions = {
    contentType: 'application/json',
    contentEncoding: 'identity',
    headers: {
      str: 'text',
      int: 42,
      neg: -7,
      big: 2 ** 40,
      dbl: 3.25,
      yes: true,
      no: false,
      nothing: null,
      list: [1, 'two', false],
      nested: { inner: 'yes', n: 1 },
      bytes: Buffer.from([1, 2, 255]),
      when: { '!': 'timestamp', value: timestamp },
      money: { '!': 'decimal', value: { places: 2, digits: 12345 } },
    },
    deliveryMode: 2,
    priority: 7,
    correlationId: 'corr-1',
    replyTo: 'reply.queue',
    expiration: '60000',
    messageId: 'msg-1',
    timestamp,
    type: 'order.created',
    userId: 'guest',
    appId: 'styx-tests',
  };
  // As amqplib decodes them: integers and doubles as numbers, timestamps and decimals tagged.
  const expected = {
    contentType: 'application/json',
    contentEncoding: 'identity',
    headers: {
      str: 'text',
      int: 42,
      neg: -7,
      big: 2 ** 40,
      dbl: 3.25,
      yes: true,
      no: false,
      nothing: null,
      list: [1, 'two', false],
      nested: { inner: 'yes', n: 1 },
      bytes: Buffer.from([1, 2, 255]),
      when: { '!': 'timestamp', value: timestamp },
      money: { '!': 'decimal', value: { places: 2, digits: 12345 } },
    },
    deliveryMode: 2,
    priority: 7,
    correlationId: 'corr-1',
    replyTo: 'reply.queue',
    expiration: '60000',
    messageId: 'msg-1',
    timestamp,
    type: 'order.created',
    userId: 'guest',
    appId: 'styx-tests',
    clusterId: undefined,
  };

  it('every basic property round-trips to a consumer and to basic.get', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    ch.sendToQueue(queue, Buffer.from('{"n":1}'), options);
    ch.sendToQueue(queue, Buffer.from('{"n":2}'), options);
    await ch.waitForConfirms();
    const got = await getOne(ch, queue);
    expect(got.properties).toEqual(expected);
    expect(Buffer.isBuffer(got.content)).toBe(true);
    expect(got.content.toString()).toBe('{"n":1}');

    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    const [delivered] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect(delivered.properties).toEqual(expected);
    expect(delivered.fields).toMatchObject({ exchange: '', routingKey: queue, redelivered: false });
    expect(delivered.content.toString()).toBe('{"n":2}');
  });

  it('a message published without options has only the (empty) headers amqplib always sends', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    ch.sendToQueue(queue, Buffer.alloc(0));
    await ch.waitForConfirms();
    const got = await getOne(ch, queue);
    expect(got.content.length).toBe(0);
    expect(got.properties.headers).toEqual({});
    expect(got.properties.contentType).toBeUndefined();
    expect(got.properties.deliveryMode).toBeUndefined();
  });

  it('a user-id other than the connection’s user is 406; the message goes nowhere', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.userid'), { durable: false });
    const pub = await conn.createConfirmChannel();
    const closed = channelClosed(pub);
    const confirm = new Promise<Error | null>((resolve) =>
      pub.sendToQueue(queue, Buffer.from('forged'), { userId: 'mallory' }, (err) => resolve(err)),
    );
    const err = await closed;
    expect(err?.code).toBe(406);
    expect(err?.message).toContain("user_id property set to 'mallory' but authenticated user was 'guest'");
    expect((await withTimeout(confirm, WAIT_MS, 'confirm'))?.message).toBe('channel closed');
    expect(await drain(ch, queue)).toEqual([]);
    await ch.deleteQueue(queue);
  });
});

describe('CC and BCC', () => {
  it('CC routes to extra queues and stays visible; BCC routes but no consumer sees it', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const x = unique('x.cc');
    await ch.assertExchange(x, 'direct', { durable: false });
    const q: Record<string, string> = {};
    for (const key of ['main', 'cc', 'bcc', 'other']) {
      q[key] = (await ch.assertQueue(unique(`q.${key}`), { durable: false })).queue;
      await ch.bindQueue(q[key] as string, x, key);
    }
    ch.publish(x, 'main', Buffer.from('hello'), { CC: 'cc', BCC: ['bcc'], headers: { keep: 'me' } });
    await ch.waitForConfirms();
    const seen: Record<string, unknown> = {};
    for (const key of ['main', 'cc', 'bcc']) {
      const msg = await getOne(ch, q[key] as string);
      seen[key] = {
        body: msg.content.toString(),
        routingKey: msg.fields.routingKey,
        headers: msg.properties.headers,
      };
    }
    const delivered = { body: 'hello', routingKey: 'main', headers: { CC: ['cc'], keep: 'me' } };
    expect(seen).toEqual({ main: delivered, cc: delivered, bcc: delivered });
    expect(await drain(ch, q.other as string)).toEqual([]);

    // A consumer sees no BCC either, and a message routable only through BCC is not returned.
    const inbox = new Inbox();
    await ch.consume(q.bcc as string, inbox.onMessage, { noAck: true });
    const returns: string[] = [];
    ch.on('return', (m) => returns.push(m.content.toString()));
    ch.publish(x, 'nobody', Buffer.from('blind'), { BCC: 'bcc', mandatory: true });
    await ch.waitForConfirms();
    const [msg] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect(msg.content.toString()).toBe('blind');
    expect(msg.properties.headers).toEqual({});
    expect(msg.fields.routingKey).toBe('nobody');
    expect(returns).toEqual([]);
  });

  it('work with the default exchange, one copy per queue', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const a = (await ch.assertQueue('', { exclusive: true })).queue;
    const b = (await ch.assertQueue('', { exclusive: true })).queue;
    ch.sendToQueue(a, Buffer.from('x'), { CC: [a, b], BCC: [b] });
    await ch.waitForConfirms();
    expect(await drain(ch, a)).toEqual(['x']);
    const got = await getOne(ch, b);
    expect(got.properties.headers).toEqual({ CC: [a, b] });
    expect(await drain(ch, b)).toEqual([]);
  });
});
