// The AMQP 0-9-1 listener against amqplib, RabbitMQ's own Node client, unchanged: a real node
// (`styx server --amqp-port`) on loopback. What RabbitMQ clients rely on: the handshake, publisher
// confirms, consumers and acks, dead-lettering with x-death, mandatory returns, consumer cancel
// notifications, basic.get / recover / qos, and the errors with RabbitMQ's reply codes.
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage, GetMessage } from 'amqplib';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { eventually } from '../support/eventually.ts';
import { RawAmqpClient } from '../support/raw-amqp-client.ts';

let broker: BrokerProcess;
let url: string;
const open: ChannelModel[] = [];

/** An amqplib connection as guest, closed after the file. */
async function connect(options: { heartbeat?: number } = {}): Promise<ChannelModel> {
  const connection = await amqp.connect(
    `${url}?heartbeat=${options.heartbeat ?? 0}`.replace('://', '://guest:guest@'),
  );
  connection.on('error', () => undefined);
  open.push(connection);
  return connection;
}

/** Messages a consumer got, and a way to wait for `n` of them. */
function collect(channel: Channel): { got: ConsumeMessage[]; handler: (m: ConsumeMessage | null) => void } {
  const got: ConsumeMessage[] = [];
  return {
    got,
    handler: (m) => {
      if (m !== null) got.push(m);
      void channel;
    },
  };
}

/** basic.get until a message comes (a publish is taken before it is in the queue). */
async function eventuallyGet(ch: Channel, queue: string): Promise<GetMessage> {
  let got: GetMessage | false = false;
  await eventually(`a message in ${queue}`, async () => {
    got = await ch.get(queue);
    return got !== false;
  });
  return got as unknown as GetMessage;
}

beforeAll(async () => {
  broker = await startBroker({ amqp: true });
  url = broker.amqpUrl as string;
});

afterAll(async () => {
  for (const c of open) await c.close().catch(() => undefined);
  await broker?.stop();
  await broker?.cleanup();
});

describe('AMQP 0-9-1 with amqplib', () => {
  it('handshake: server properties advertise what works, and the node counts the connection', async () => {
    const connection = await connect();
    const props = (connection.connection as unknown as { serverProperties: Record<string, unknown> })
      .serverProperties;
    expect(props.product).toBe('Styx');
    expect(props.capabilities).toMatchObject({
      publisher_confirms: true,
      'basic.nack': true,
      exchange_exchange_bindings: true,
      consumer_cancel_notify: true,
      'connection.blocked': true,
      authentication_failure_close: true,
      per_consumer_qos: true,
    });
  });

  it('publish with confirms (multiple), consume and ack', async () => {
    const connection = await connect();
    const ch: ConfirmChannel = await connection.createConfirmChannel();
    const q = (await ch.assertQueue('amqp-basic', { durable: true })).queue;
    for (let i = 0; i < 50; i++)
      ch.publish('', q, Buffer.from(`m${i}`), { headers: { n: i }, messageId: `id${i}` });
    await ch.waitForConfirms();
    const consumer = await connection.createChannel();
    await consumer.prefetch(10);
    const { got, handler } = collect(consumer);
    await consumer.consume(q, (m) => {
      handler(m);
      if (m !== null) consumer.ack(m);
    });
    await eventually('50 deliveries', async () => got.length === 50);
    expect(got.map((m) => m.content.toString())).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
    expect(got[7]?.properties.headers).toEqual({ n: 7 });
    expect(got[7]?.properties.messageId).toBe('id7');
    await eventually('the queue empty', async () => (await ch.checkQueue(q)).messageCount === 0);
  });
  it('nack and reject without requeue dead-letter into a DLX; amqplib reads x-death', async () => {
    const connection = await connect();
    const ch = await connection.createChannel();
    await ch.assertExchange('amqp-dlx', 'fanout', { durable: true });
    await ch.assertQueue('amqp-dead', { durable: true });
    await ch.bindQueue('amqp-dead', 'amqp-dlx', '');
    await ch.assertQueue('amqp-work', { durable: true, deadLetterExchange: 'amqp-dlx' });
    ch.sendToQueue('amqp-work', Buffer.from('one'));
    ch.sendToQueue('amqp-work', Buffer.from('two'));
    const first = await eventuallyGet(ch, 'amqp-work');
    const second = await eventuallyGet(ch, 'amqp-work');
    ch.nack(first, false, false);
    ch.reject(second, false);
    const dead = [await eventuallyGet(ch, 'amqp-dead'), await eventuallyGet(ch, 'amqp-dead')];
    expect(dead.map((m) => m.content.toString())).toEqual(['one', 'two']);
    for (const m of dead) {
      const death = (m.properties.headers?.['x-death'] as unknown as Array<Record<string, unknown>>)[0];
      expect(death).toMatchObject({ count: 1, reason: 'rejected', queue: 'amqp-work', exchange: '' });
      expect(death?.['routing-keys']).toEqual(['amqp-work']);
      expect(m.properties.headers?.['x-first-death-reason']).toBe('rejected');
      ch.ack(m);
    }
  });

  it('mandatory publish that routes nowhere comes back as basic.return (and is confirmed)', async () => {
    const connection = await connect();
    const ch = await connection.createConfirmChannel();
    const returned = new Promise<ConsumeMessage>((resolve) => ch.once('return', resolve));
    ch.publish('', 'amqp-no-such-queue', Buffer.from('lost?'), { mandatory: true, messageId: 'r1' });
    await ch.waitForConfirms();
    const m = await returned;
    expect(m.fields).toMatchObject({
      replyCode: 312,
      replyText: 'NO_ROUTE',
      routingKey: 'amqp-no-such-queue',
    });
    expect(m.content.toString()).toBe('lost?');
    expect(m.properties.messageId).toBe('r1');
  });

  it('deleting a queue cancels its consumers (consumer_cancel_notify)', async () => {
    const connection = await connect();
    const ch = await connection.createChannel();
    await ch.assertQueue('amqp-doomed', { durable: true });
    const cancelled = new Promise<ConsumeMessage | null>((resolve) => {
      void ch.consume('amqp-doomed', (m) => {
        if (m === null) resolve(m);
      });
    });
    const other = await connection.createChannel();
    await other.deleteQueue('amqp-doomed');
    await expect(cancelled).resolves.toBeNull();
  });

  it('basic.get, basic.get-empty and basic.recover (redelivered)', async () => {
    const connection = await connect();
    const ch = await connection.createChannel();
    await ch.assertQueue('amqp-get', { durable: true });
    expect(await ch.get('amqp-get')).toBe(false);
    ch.sendToQueue('amqp-get', Buffer.from('g'));
    const got = await eventuallyGet(ch, 'amqp-get');
    expect(got.fields.redelivered).toBe(false);
    expect(got.fields.messageCount).toBe(0);
    await ch.recover();
    const again = await eventuallyGet(ch, 'amqp-get');
    expect(again.content.toString()).toBe('g');
    expect(again.fields.redelivered).toBe(true);
    ch.ack(again);
  });

  it('basic.qos: a consumer gets no more than its prefetch unacked', async () => {
    const connection = await connect();
    const ch = await connection.createChannel();
    await ch.assertQueue('amqp-qos', { durable: true });
    for (let i = 0; i < 5; i++) ch.sendToQueue('amqp-qos', Buffer.from(String(i)));
    await ch.prefetch(2);
    const got: ConsumeMessage[] = [];
    await ch.consume('amqp-qos', (m) => {
      if (m !== null) got.push(m);
    });
    await eventually('2 deliveries', async () => got.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(got).toHaveLength(2);
    ch.ack(got[1] as ConsumeMessage, true);
    await eventually('4 deliveries', async () => got.length === 4);
  });

  it('basic.qos global=true is taken, then basic.consume is refused 540 as RabbitMQ quorum queues do', async () => {
    const connection = await connect();
    const closed = new Promise<Error>((resolve) => connection.once('error', resolve));
    const ch = await connection.createChannel();
    ch.on('error', () => undefined);
    await ch.assertQueue('amqp-global-qos', { durable: true });
    await ch.prefetch(5, true);
    await expect(ch.consume('amqp-global-qos', () => undefined)).rejects.toThrow();
    const err = await closed;
    expect(err.message).toMatch(/540/);
    expect(err.message).toContain("queue 'amqp-global-qos' in vhost '/' does not support global qos");
  });

  it('a channel error closes only its channel: a healthy channel beside it keeps working', async () => {
    const connection = await connect();
    const bad = await connection.createChannel();
    const badClosed = new Promise<Error>((resolve) => bad.once('error', resolve));
    const good = await connection.createConfirmChannel();
    await expect(bad.checkQueue('amqp-missing')).rejects.toThrow(/404/);
    expect((await badClosed).message).toMatch(/NOT_FOUND|404/);
    await good.assertQueue('amqp-healthy', { durable: true });
    good.sendToQueue('amqp-healthy', Buffer.from('still here'));
    await good.waitForConfirms();
    expect((await eventuallyGet(good, 'amqp-healthy')).content.toString()).toBe('still here');
  });

  it('wrong credentials: connection.close 403 ACCESS_REFUSED before the socket goes', async () => {
    await expect(amqp.connect(url.replace('://', '://guest:wrong@'))).rejects.toThrow(/403|ACCESS.REFUSED/);
  });

  it('a body split across frames of the negotiated frame_max arrives whole', async () => {
    const connection = await amqp.connect(`${url.replace('://', '://guest:guest@')}?frameMax=4096`);
    open.push(connection);
    const ch = await connection.createConfirmChannel();
    await ch.assertQueue('amqp-big', { durable: true });
    const body = Buffer.alloc(100_000, 7);
    body.write('start');
    ch.sendToQueue('amqp-big', body);
    await ch.waitForConfirms();
    const got = await eventuallyGet(ch, 'amqp-big');
    expect(got.content.equals(body)).toBe(true);
  });
});

describe('AMQP 0-9-1 bad input (raw client)', () => {
  const port = (): number => Number(new URL(url).port);

  it("a wrong protocol header gets RabbitMQ's answer AMQP 0-0-9-1, then the socket closes", async () => {
    const client = await RawAmqpClient.open(port());
    client.send(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    await client.closed;
    expect(Buffer.concat(client.received)).toEqual(Buffer.from('AMQP\x00\x00\x09\x01', 'latin1'));
  });

  it('a frame over the negotiated frame_max: connection.close 501 FRAME_ERROR', async () => {
    const client = await RawAmqpClient.open(port());
    await client.handshake({ frameMax: 4096 });
    const frame = Buffer.alloc(5000 + 8);
    frame[0] = 3; // body
    frame.writeUInt16BE(1, 1);
    frame.writeUInt32BE(5000, 3);
    frame[frame.length - 1] = 0xce;
    client.send(frame);
    const close = await client.next('connection.close');
    expect(close.method.args).toMatchObject({ replyCode: 501 });
    expect((close.method.args as { replyText: string }).replyText).toMatch(
      /frame size 5008 > negotiated max 4096/,
    );
    await client.closed;
  });

  it('a method on a channel that is not open: connection.close 504 CHANNEL_ERROR naming the method', async () => {
    const client = await RawAmqpClient.open(port());
    await client.handshake();
    client.method(5, { name: 'basic.qos', args: { prefetchCount: 1 } });
    const close = await client.next('connection.close');
    expect(close.method.args).toMatchObject({ replyCode: 504, classId: 60, methodId: 10 });
    client.method(0, { name: 'connection.close-ok', args: {} });
    await client.closed;
  });

  it('a channel error names the failing class and method in channel.close', async () => {
    const client = await RawAmqpClient.open(port());
    await client.handshake();
    client.method(1, { name: 'channel.open', args: {} });
    await client.next('channel.open-ok');
    client.method(1, { name: 'queue.declare', args: { queue: 'amqp-raw-missing', passive: true } });
    const close = await client.next('channel.close');
    expect(close.channel).toBe(1);
    expect(close.method.args).toMatchObject({ replyCode: 404, classId: 50, methodId: 10 });
    client.method(1, { name: 'channel.close-ok', args: {} });
    client.method(2, { name: 'channel.open', args: {} });
    await client.next('channel.open-ok');
    client.close();
  });

  it('a client that stops sending heartbeats is dropped after two intervals', async () => {
    const client = await RawAmqpClient.open(port());
    await client.handshake({ heartbeat: 1 });
    // Silence: the node sends heartbeats, and drops the socket once 2 s pass with nothing back.
    await client.closed;
    expect(client.heartbeats).toBeGreaterThan(0);
  });
});
