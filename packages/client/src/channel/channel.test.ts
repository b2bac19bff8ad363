import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Connection } from '../connection/connection.ts';
import { DRAIN_POLL_MS } from '../connection/connection.ts';
import { ConfirmError, GlobalPrefetchError, IllegalOperationError, ServerCloseError } from '../errors.ts';
import {
  connectFake,
  FakePeer,
  helloOk,
  openChannel,
  openConfirmChannel,
  settle,
} from '../test-support/fake-peer.ts';
import type { Frame } from '../wire/index.ts';
import { fieldTableToJs, frame } from '../wire/index.ts';
import type { Channel } from './channel.ts';
import type { ConsumeMessage } from './types.ts';

afterEach(() => {
  vi.useRealTimers();
});

async function setup(socketOptions = {}): Promise<{ peer: FakePeer; conn: Connection; ch: Channel }> {
  const peer = new FakePeer();
  const conn = await connectFake(peer, 'styx://u:p@h/', socketOptions);
  const ch = await openChannel(peer, conn);
  return { peer, conn, ch };
}

const deliver = (channel: number, consumerTag: string, deliveryTag: number, body = 'hi'): Frame =>
  frame(channel, 'basicDeliver', {
    consumerTag,
    deliveryTag,
    redelivered: false,
    exchange: '',
    routingKey: 'q',
    properties: { contentType: 'text/plain' },
    body: Buffer.from(body),
  });

describe('Channel RPCs', () => {
  it('pipelines requests and resolves replies in order with amqplib’s shapes', async () => {
    const { peer, ch } = await setup();
    const declared = ch.assertQueue('', { exclusive: true, messageTtl: 1000 });
    const bound = ch.bindQueue('amq.gen-1', 'ex', 'rk');
    const checked = ch.checkQueue('other');
    await settle();
    const sent = peer.take();
    expect(sent.map((f) => f.method)).toEqual(['queueDeclare', 'queueBind', 'queueDeclare']);
    expect(peer.batches.at(-1)).toBeDefined();
    const [declare, bind, check] = sent;
    if (
      declare?.method !== 'queueDeclare' ||
      bind?.method !== 'queueBind' ||
      check?.method !== 'queueDeclare'
    ) {
      throw new Error('methods');
    }
    expect(declare.queueDeclare).toMatchObject({ queue: '', durable: true, exclusive: true, passive: false });
    expect(fieldTableToJs(declare.queueDeclare.arguments)).toEqual({ 'x-message-ttl': 1000 });
    expect(bind.queueBind).toMatchObject({ queue: 'amq.gen-1', exchange: 'ex', routingKey: 'rk' });
    expect(check.queueDeclare.passive).toBe(true);
    peer.send(
      frame(1, 'queueDeclareOk', { queue: 'amq.gen-1', messageCount: 0, consumerCount: 0 }),
      frame(1, 'queueBindOk', {}),
      frame(1, 'queueDeclareOk', { queue: 'other', messageCount: 5, consumerCount: 1 }),
    );
    expect(await declared).toStrictEqual({ queue: 'amq.gen-1', messageCount: 0, consumerCount: 0 });
    expect(await bound).toStrictEqual({});
    expect(await checked).toStrictEqual({ queue: 'other', messageCount: 5, consumerCount: 1 });
  });

  it('maps every RPC to its request and reply', async () => {
    const { peer, ch } = await setup();
    const cases: [() => Promise<unknown>, string, Frame, unknown][] = [
      [
        () => ch.assertExchange('ex', 'topic', { durable: false }),
        'exchangeDeclare',
        frame(1, 'exchangeDeclareOk', {}),
        { exchange: 'ex' },
      ],
      [() => ch.checkExchange('ex'), 'exchangeDeclare', frame(1, 'exchangeDeclareOk', {}), {}],
      [
        () => ch.deleteExchange('ex', { ifUnused: true }),
        'exchangeDelete',
        frame(1, 'exchangeDeleteOk', {}),
        {},
      ],
      [() => ch.bindExchange('d', 's', 'k'), 'exchangeBind', frame(1, 'exchangeBindOk', {}), {}],
      [() => ch.unbindExchange('d', 's', 'k'), 'exchangeUnbind', frame(1, 'exchangeUnbindOk', {}), {}],
      [() => ch.unbindQueue('q', 's', 'k'), 'queueUnbind', frame(1, 'queueUnbindOk', {}), {}],
      [
        () => ch.deleteQueue('q', { ifEmpty: true }),
        'queueDelete',
        frame(1, 'queueDeleteOk', { messageCount: 3 }),
        { messageCount: 3 },
      ],
      [
        () => ch.purgeQueue('q'),
        'queuePurge',
        frame(1, 'queuePurgeOk', { messageCount: 0 }),
        { messageCount: 0 },
      ],
      [() => ch.prefetch(10), 'basicQos', frame(1, 'basicQosOk', {}), {}],
      [() => ch.recover(), 'basicRecover', frame(1, 'basicRecoverOk', {}), {}],
    ];
    for (const [call, method, reply, expected] of cases) {
      const pending = call();
      await settle();
      expect(peer.take().map((f) => f.method)).toEqual([method]);
      peer.send(reply);
      expect(await pending).toStrictEqual(expected);
    }
  });

  it('refuses global prefetch client-side with a clear error, sending nothing', async () => {
    const { peer, ch } = await setup();
    const err = await ch.prefetch(10, true).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GlobalPrefetchError);
    expect((err as Error).message).toBe(
      'channel-wide (global) prefetch is not supported on replicated queues',
    );
    await settle();
    expect(peer.take()).toEqual([]);
  });

  it('closes the channel with 505 on a reply that does not answer the request', async () => {
    const { peer, ch } = await setup();
    const errors: Error[] = [];
    ch.on('error', (e) => errors.push(e));
    const pending = ch.assertQueue('q');
    await settle();
    peer.take();
    peer.send(frame(1, 'basicQosOk', {}));
    await expect(pending).rejects.toThrow('Expected QueueDeclareOk; got BasicQosOk');
    await settle();
    expect(peer.takeOne('channelClose').channelClose.replyCode).toBe(505);
    peer.send(frame(1, 'channelCloseOk', {}));
    expect(errors.map((e) => (e as Error & { code: number }).code)).toEqual([505]);
  });
});

describe('server closes a channel', () => {
  it('rejects pending RPCs, emits error then close, acknowledges, and refuses further use', async () => {
    const { peer, conn, ch } = await setup();
    const events: string[] = [];
    ch.on('error', (e) => events.push(`error:${e.message}`));
    ch.on('close', () => events.push('close'));
    const checked = ch.checkQueue('missing').catch((e: unknown) => e);
    const bound = ch.bindQueue('q', 'x', 'k').catch((e: unknown) => e);
    await settle();
    peer.take();
    peer.send(
      frame(1, 'channelClose', {
        replyCode: 404,
        replyText: "NOT_FOUND - no queue 'missing' in vhost '/'",
        failingMethod: 'queueDeclare',
      }),
    );
    const first = (await checked) as ServerCloseError;
    expect(first).toBeInstanceOf(ServerCloseError);
    expect(first.code).toBe(404);
    expect(first.message).toBe(
      `Operation failed: QueueDeclare; 404 (NOT-FOUND) with message "NOT_FOUND - no queue 'missing' in vhost '/'"`,
    );
    const second = (await bound) as ServerCloseError;
    expect(second.code).toBe(404);
    expect(second.message).toBe(
      `Channel closed by server: 404 (NOT-FOUND) with message "NOT_FOUND - no queue 'missing' in vhost '/'"`,
    );
    expect(events).toEqual([`error:${second.message}`, 'close']);
    await settle();
    expect(peer.takeOne('channelCloseOk').channel).toBe(1);

    expect(() => ch.publish('', 'q', Buffer.from('x'))).toThrow(IllegalOperationError);
    expect(() => ch.ack({ fields: { deliveryTag: 1 } } as ConsumeMessage)).toThrow('Channel closed');
    await expect(ch.assertQueue('q')).rejects.toThrow(IllegalOperationError);
    await expect(ch.close()).rejects.toThrow('Channel closed');
    // The number is free again.
    const next = await openChannel(peer, conn);
    expect(next.ch).toBe(1);
  });

  it('does not throw when nobody listens for the channel’s error (the operation reports it)', async () => {
    const { peer, ch } = await setup();
    const checked = ch.checkQueue('missing');
    await settle();
    peer.take();
    expect(() =>
      peer.send(
        frame(1, 'channelClose', { replyCode: 404, replyText: 'NOT_FOUND', failingMethod: 'queueDeclare' }),
      ),
    ).not.toThrow();
    await expect(checked).rejects.toMatchObject({ code: 404 });
  });
});

describe('closing', () => {
  it('closes with a handshake, refusing operations while closing', async () => {
    const { peer, ch } = await setup();
    const events: string[] = [];
    ch.on('close', () => events.push('close'));
    const closing = ch.close();
    await settle();
    expect(peer.takeOne('channelClose').channelClose).toMatchObject({ replyCode: 200, replyText: 'Goodbye' });
    expect(() => ch.sendToQueue('q', Buffer.from('x'))).toThrow('Channel closing');
    await expect(ch.close()).rejects.toThrow('Channel closing');
    peer.send(frame(1, 'channelCloseOk', {}));
    await closing;
    expect(events).toEqual(['close']);
    expect(() => ch.sendToQueue('q', Buffer.from('x'))).toThrow('Channel closed');
  });

  it('answers replies already on their way while closing', async () => {
    const { peer, ch } = await setup();
    const declared = ch.assertQueue('q');
    const closing = ch.close();
    await settle();
    expect(peer.take().map((f) => f.method)).toEqual(['queueDeclare', 'channelClose']);
    peer.send(
      frame(1, 'queueDeclareOk', { queue: 'q', messageCount: 0, consumerCount: 0 }),
      frame(1, 'channelCloseOk', {}),
    );
    await expect(declared).resolves.toMatchObject({ queue: 'q' });
    await closing;
  });

  it('closes every channel, without errors, when the connection closes', async () => {
    const { peer, conn, ch } = await setup();
    const events: string[] = [];
    ch.on('error', () => events.push('error'));
    ch.on('close', () => events.push('close'));
    const pending = ch.assertQueue('q');
    const closing = conn.close();
    await settle();
    peer.take();
    peer.send(frame(0, 'connectionCloseOk', {}));
    await closing;
    await expect(pending).rejects.toThrow('Channel ended, no reply will be forthcoming');
    expect(events).toEqual(['close']);
  });
});

describe('consumers', () => {
  it('registers a consumer before a delivery in the same batch, and builds amqplib’s message', async () => {
    const { peer, ch } = await setup();
    const got: (ConsumeMessage | null)[] = [];
    const consuming = ch.consume('q', (m) => got.push(m), { noAck: false, priority: 3 });
    await settle();
    const consume = peer.takeOne('basicConsume');
    expect(consume.basicConsume).toMatchObject({ queue: 'q', consumerTag: '', noAck: false });
    expect(fieldTableToJs(consume.basicConsume.arguments)).toEqual({ 'x-priority': 3 });
    peer.send(
      frame(1, 'basicConsumeOk', { consumerTag: 'amq.ctag-1' }),
      deliver(1, 'amq.ctag-1', 1, 'first'),
    );
    expect(await consuming).toStrictEqual({ consumerTag: 'amq.ctag-1' });
    expect(got).toHaveLength(1);
    const msg = got[0] as ConsumeMessage;
    expect(msg.fields).toStrictEqual({
      consumerTag: 'amq.ctag-1',
      deliveryTag: 1,
      redelivered: false,
      exchange: '',
      routingKey: 'q',
    });
    expect(msg.properties.contentType).toBe('text/plain');
    expect(Buffer.isBuffer(msg.content)).toBe(true);
    expect(msg.content.toString()).toBe('first');
  });

  it('calls onMessage(null) when the server cancels the consumer', async () => {
    const { peer, ch } = await setup();
    const got: (ConsumeMessage | null)[] = [];
    const consuming = ch.consume('q', (m) => got.push(m));
    await settle();
    peer.take();
    peer.send(frame(1, 'basicConsumeOk', { consumerTag: 'c1' }));
    await consuming;
    peer.send(frame(1, 'basicCancel', { consumerTag: 'c1' }));
    expect(got).toEqual([null]);
  });

  it('cancels a consumer', async () => {
    const { peer, ch } = await setup();
    const consuming = ch.consume('q', () => {}, { consumerTag: 'mine' });
    await settle();
    expect(peer.takeOne('basicConsume').basicConsume.consumerTag).toBe('mine');
    peer.send(frame(1, 'basicConsumeOk', { consumerTag: 'mine' }));
    await consuming;
    const cancelling = ch.cancel('mine');
    await settle();
    expect(peer.takeOne('basicCancel').basicCancel.consumerTag).toBe('mine');
    peer.send(frame(1, 'basicCancelOk', { consumerTag: 'mine' }));
    expect(await cancelling).toStrictEqual({ consumerTag: 'mine' });
  });

  it('closes the channel with 541 when a consumer throws, as amqplib does', async () => {
    const { peer, ch } = await setup();
    const errors: Error[] = [];
    ch.on('error', (e) => errors.push(e));
    const consuming = ch.consume('q', () => {
      throw new Error('handler bug');
    });
    await settle();
    peer.take();
    peer.send(frame(1, 'basicConsumeOk', { consumerTag: 'c' }), deliver(1, 'c', 1));
    await consuming;
    await settle();
    expect(peer.takeOne('channelClose').channelClose).toMatchObject({
      replyCode: 541,
      replyText: 'Error while processing message',
    });
    peer.send(frame(1, 'channelCloseOk', {}));
    expect(errors.map((e) => [e.message, (e as Error & { code: number }).code])).toEqual([
      ['handler bug', 541],
    ]);
  });

  it('acks, nacks and rejects with amqplib’s defaults', async () => {
    const { peer, ch } = await setup();
    const msg = { fields: { deliveryTag: 5 } } as ConsumeMessage;
    ch.ack(msg);
    ch.ack(msg, true);
    ch.ackAll();
    ch.nack(msg);
    ch.nack(msg, true, false);
    ch.nackAll(false);
    ch.reject(msg);
    ch.reject(msg, false);
    await settle();
    expect(
      peer.take().map((f) => {
        if (f.method === 'basicAck') return ['ack', f.basicAck.deliveryTag, f.basicAck.multiple];
        if (f.method === 'basicNack')
          return ['nack', f.basicNack.deliveryTag, f.basicNack.multiple, f.basicNack.requeue];
        if (f.method === 'basicReject') return ['reject', f.basicReject.deliveryTag, f.basicReject.requeue];
        return [f.method];
      }),
    ).toEqual([
      ['ack', 5, false],
      ['ack', 5, true],
      ['ack', 0, true],
      ['nack', 5, false, true],
      ['nack', 5, true, false],
      ['nack', 0, true, false],
      ['reject', 5, true],
      ['reject', 5, false],
    ]);
  });

  it('gets a message, or false when the queue is empty', async () => {
    const { peer, ch } = await setup();
    const empty = ch.get('q');
    const full = ch.get('q', { noAck: true });
    await settle();
    const [g1, g2] = peer.take();
    expect(g1?.method === 'basicGet' && g1.basicGet).toMatchObject({ queue: 'q', noAck: false });
    expect(g2?.method === 'basicGet' && g2.basicGet.noAck).toBe(true);
    peer.send(
      frame(1, 'basicGetEmpty', {}),
      frame(1, 'basicGetOk', {
        deliveryTag: 9,
        redelivered: true,
        exchange: 'x',
        routingKey: 'k',
        messageCount: 2,
        body: Buffer.from('got'),
      }),
    );
    expect(await empty).toBe(false);
    const msg = await full;
    if (msg === false) throw new Error('expected a message');
    expect(msg.fields).toStrictEqual({
      deliveryTag: 9,
      redelivered: true,
      exchange: 'x',
      routingKey: 'k',
      messageCount: 2,
    });
    expect(msg.content.toString()).toBe('got');
  });
});

describe('publishing', () => {
  it('sends BasicPublish with amqplib’s properties', async () => {
    const { peer, ch } = await setup();
    expect(
      ch.publish('ex', 'rk', Buffer.from('body'), {
        persistent: true,
        expiration: 5000,
        CC: 'cc1',
        mandatory: true,
      }),
    ).toBe(true);
    await settle();
    const p = peer.takeOne('basicPublish').basicPublish;
    expect(p).toMatchObject({ exchange: 'ex', routingKey: 'rk', mandatory: true, immediate: false });
    expect(p.properties?.deliveryMode).toBe(2);
    expect(p.properties?.expiration).toBe('5000');
    expect(fieldTableToJs(p.properties?.headers)).toEqual({ CC: ['cc1'] });
    expect(Buffer.from(p.body).toString()).toBe('body');
    expect(() => ch.publish('ex', 'rk', 'text' as unknown as Buffer)).toThrow('content is not a buffer');
  });

  it('emits return for an unroutable mandatory message', async () => {
    const { peer, ch } = await setup();
    const returned: unknown[] = [];
    ch.on('return', (m) => returned.push(m.fields));
    peer.send(
      frame(1, 'basicReturn', {
        replyCode: 312,
        replyText: 'NO_ROUTE',
        exchange: 'ex',
        routingKey: 'nowhere',
        body: Buffer.from('x'),
      }),
    );
    expect(returned).toEqual([
      { replyCode: 312, replyText: 'NO_ROUTE', exchange: 'ex', routingKey: 'nowhere' },
    ]);
  });

  it('returns false above the high-water mark and emits drain once below', async () => {
    vi.useFakeTimers();
    const { peer, ch } = await (async () => {
      const p = new FakePeer();
      const pending = connectFake(p, 'ws://h/', { highWaterMark: 1000 });
      await vi.advanceTimersByTimeAsync(0);
      const conn = await pending;
      const opening = conn.createChannel();
      await vi.advanceTimersByTimeAsync(0);
      p.take();
      p.send(frame(1, 'channelOpenOk', {}));
      return { peer: p, ch: await opening };
    })();
    let drains = 0;
    ch.on('drain', () => drains++);
    expect(ch.sendToQueue('q', Buffer.alloc(100))).toBe(true);
    peer.bufferedAmount = 5000;
    expect(ch.sendToQueue('q', Buffer.alloc(100))).toBe(false);
    await vi.advanceTimersByTimeAsync(DRAIN_POLL_MS * 3);
    expect(drains).toBe(0);
    peer.bufferedAmount = 0;
    await vi.advanceTimersByTimeAsync(DRAIN_POLL_MS);
    expect(drains).toBe(1);
    await vi.advanceTimersByTimeAsync(DRAIN_POLL_MS * 3);
    expect(drains).toBe(1);
  });
});

describe('ConfirmChannel', () => {
  it('numbers publishes from confirmSelect and settles callbacks on acks and nacks', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const ch = await openConfirmChannel(peer, conn);
    const results: string[] = [];
    for (let i = 1; i <= 5; i++) {
      ch.publish('', 'q', Buffer.from(`m${i}`), {}, (err, ok) =>
        results.push(`${i}:${err === null ? `ack${JSON.stringify(ok)}` : err.message}`),
      );
    }
    await settle();
    expect(peer.take()).toHaveLength(5);
    const waited = ch.waitForConfirms();
    peer.send(frame(1, 'basicAck', { deliveryTag: 3, multiple: true }));
    peer.send(frame(1, 'basicAck', { deliveryTag: 5, multiple: false }));
    expect(results).toEqual(['1:ack{}', '2:ack{}', '3:ack{}', '5:ack{}']);
    peer.send(frame(1, 'basicNack', { deliveryTag: 4, multiple: false, requeue: false }));
    expect(results.at(-1)).toBe('4:message nacked');
    await expect(waited).rejects.toBeInstanceOf(ConfirmError);
    await expect(ch.waitForConfirms()).resolves.toBeUndefined();
  });

  it('waitForConfirms resolves once everything so far is acked', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const ch = await openConfirmChannel(peer, conn);
    ch.sendToQueue('q', Buffer.from('a'));
    ch.sendToQueue('q', Buffer.from('b'));
    const waited = ch.waitForConfirms();
    peer.send(frame(1, 'basicAck', { deliveryTag: 2, multiple: true }));
    await expect(waited).resolves.toBeUndefined();
  });

  it('fails outstanding confirms with "channel closed" when the channel closes', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const ch = await openConfirmChannel(peer, conn);
    const results: string[] = [];
    ch.on('error', () => {});
    ch.publish('', 'q', Buffer.from('a'), {}, (err) => results.push(err?.message ?? 'ack'));
    const waited = ch.waitForConfirms();
    peer.send(
      frame(1, 'channelClose', { replyCode: 404, replyText: 'NOT_FOUND', failingMethod: 'basicPublish' }),
    );
    expect(results).toEqual(['channel closed']);
    await expect(waited).rejects.toThrow('channel closed');
  });
});

describe('browser content', () => {
  it('hands Uint8Array content through untouched where there is no Buffer', async () => {
    const peer = new FakePeer();
    const platform = { ...peer.platform, content: (b: Uint8Array) => b as Buffer };
    const { connectWith } = await import('../connect/connect.ts');
    const pending = connectWith(platform, 'ws://h/');
    peer.handlers?.open();
    await settle();
    peer.take();
    peer.sendBytes(new Uint8Array(Buffer.from((await import('../wire/index.ts')).encodeBatch([helloOk()]))));
    const conn = await pending;
    const opening = conn.createChannel();
    await settle();
    peer.take();
    peer.send(frame(1, 'channelOpenOk', {}));
    const ch = await opening;
    const got = ch.get('q');
    await settle();
    peer.take();
    const { encodeBatch } = await import('../wire/index.ts');
    peer.sendBytes(
      new Uint8Array(
        encodeBatch([
          frame(1, 'basicGetOk', {
            deliveryTag: 1,
            redelivered: false,
            exchange: '',
            routingKey: 'q',
            messageCount: 0,
            body: new Uint8Array([7]),
          }),
        ]),
      ),
    );
    const msg = await got;
    if (msg === false) throw new Error('expected a message');
    expect(Buffer.isBuffer(msg.content)).toBe(false);
    expect(Array.from(msg.content)).toEqual([7]);
  });
});

describe('confirms when the connection is lost', () => {
  it('fails every unconfirmed publish (callback and a later waitForConfirms), with the loss as cause', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer, 'styx://u:p@h/');
    conn.on('error', () => undefined);
    const ch = await openConfirmChannel(peer, conn);
    const outcomes: (Error | null | 'pending')[] = ['pending', 'pending', 'pending'];
    for (let i = 0; i < 3; i++) {
      ch.sendToQueue('q', Buffer.from('x'), {}, (err) => {
        outcomes[i] = err;
      });
    }
    await settle();
    peer.take();
    peer.send(frame(ch.ch, 'basicAck', { deliveryTag: 1, multiple: false }));
    peer.handlers?.close(1006, '');
    expect(outcomes[0]).toBeNull();
    for (const err of outcomes.slice(1)) {
      expect(err).toBeInstanceOf(ConfirmError);
      expect(((err as ConfirmError).cause as Error).message).toBe('Unexpected close');
    }
    await expect(ch.waitForConfirms()).rejects.toBeInstanceOf(ConfirmError);
  });
});
