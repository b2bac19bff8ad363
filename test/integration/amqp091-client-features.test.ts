// What RabbitMQ clients rely on beyond the basics, over the AMQP 0-9-1 wire, on nodes in the test's
// process: the empty queue name standing for the channel's last declared queue (RabbitMQ's 404 "no
// previously declared queue" when there is none), basic.consume's arguments in the consumer facts,
// connection.update-secret (the same user's password again), connection.blocked under the memory
// alarm, a graceful close (maintenance, node shutdown) that leaves no publish in doubt, and an
// x-death read off the wire byte for byte as RabbitMQ 3.10 wrote it
// (test/fixtures/rabbitmq-3.10-x-death.json).
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FieldTable, FieldValue } from '@styx/client/wire';
import { AmqpServer, amqp091, Broker, silentLogger } from '@styx/node';
import type { ChannelModel } from 'amqplib';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { RawAmqpClient } from '../support/raw-amqp-client.ts';

interface Node {
  readonly broker: Broker;
  readonly server: AmqpServer;
  readonly port: number;
  readonly url: string;
}

const nodes: Node[] = [];
const opened: ChannelModel[] = [];

async function startNode(name: string, memoryBudgetBytes = 0): Promise<Node> {
  const broker = await Broker.start({ nodeName: name, logger: silentLogger(), memoryBudgetBytes });
  const server = new AmqpServer(broker, { host: '127.0.0.1', port: 0 }, silentLogger());
  const port = ((await server.listen()) as AddressInfo).port;
  const node = { broker, server, port, url: `amqp://guest:guest@127.0.0.1:${port}?heartbeat=0` };
  nodes.push(node);
  return node;
}

async function connect(node: Node): Promise<ChannelModel> {
  const connection = await amqp.connect(node.url);
  connection.on('error', () => undefined);
  opened.push(connection);
  return connection;
}

let node: Node;

beforeAll(async () => {
  node = await startNode('amqp-features');
});

afterAll(async () => {
  // (A blocked publisher's close is not read by the node: the socket goes with the server.)
  for (const c of opened) {
    await Promise.race([
      c.close().catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, 500)),
    ]);
  }
  for (const n of nodes) {
    await n.server.close();
    await n.broker.shutdown();
  }
});

describe('the empty queue name: the last queue the channel declared', () => {
  it('queue.bind, basic.get, basic.consume, queue.purge and queue.delete with an empty name', async () => {
    const client = await RawAmqpClient.open(node.port);
    await client.handshake();
    client.method(1, { name: 'channel.open', args: {} });
    await client.next('channel.open-ok');
    client.method(1, { name: 'exchange.declare', args: { exchange: 'shortcut-x', type: 'direct' } });
    await client.next('exchange.declare-ok');
    client.method(1, { name: 'queue.declare', args: { queue: '', exclusive: true } });
    const declared = (await client.next('queue.declare-ok')).method.args as { queue: string };
    expect(declared.queue).toMatch(/^amq\.gen-/);
    // Queue and routing key both empty: the queue, bound with its own name as the key.
    client.method(1, { name: 'queue.bind', args: { queue: '', exchange: 'shortcut-x', routingKey: '' } });
    await client.next('queue.bind-ok');
    client.send(
      amqp091.encodeContentFrames(
        1,
        { name: 'basic.publish', args: { exchange: 'shortcut-x', routingKey: declared.queue } },
        {},
        Buffer.from('via the shortcut'),
        4096,
      ),
    );
    let got: amqp091.AmqpCommand | undefined;
    await eventually('the message routed by the default binding key', async () => {
      client.method(1, { name: 'basic.get', args: { queue: '', noAck: true } });
      const reply = await client.next(['basic.get-ok', 'basic.get-empty']);
      if (reply.method.name === 'basic.get-ok') got = reply;
      return got !== undefined;
    });
    expect(got?.kind === 'content' && got.body.toString()).toBe('via the shortcut');
    client.method(1, { name: 'basic.consume', args: { queue: '', consumerTag: 'c1' } });
    await client.next('basic.consume-ok');
    client.method(1, { name: 'basic.cancel', args: { consumerTag: 'c1' } });
    await client.next('basic.cancel-ok');
    client.method(1, { name: 'queue.purge', args: { queue: '' } });
    await client.next('queue.purge-ok');
    client.method(1, { name: 'queue.delete', args: { queue: '' } });
    await client.next('queue.delete-ok');
    client.close();
  });

  it("with no queue declared on the channel: 404 NOT_FOUND 'no previously declared queue', as RabbitMQ", async () => {
    for (const method of [
      { name: 'queue.purge', args: { queue: '' } },
      { name: 'basic.get', args: { queue: '' } },
      { name: 'basic.consume', args: { queue: '' } },
      { name: 'queue.delete', args: { queue: '' } },
      { name: 'queue.bind', args: { queue: '', exchange: 'amq.direct', routingKey: 'k' } },
    ] as const) {
      const client = await RawAmqpClient.open(node.port);
      await client.handshake();
      client.method(1, { name: 'channel.open', args: {} });
      await client.next('channel.open-ok');
      client.method(1, method as amqp091.AmqpMethodInit);
      const close = await client.next('channel.close');
      const ids = amqp091.METHOD_DEFS.find((d) => d.name === method.name);
      expect(close.method.args).toMatchObject({
        replyCode: 404,
        replyText: 'NOT_FOUND - no previously declared queue',
        classId: ids?.classId,
        methodId: ids?.methodId,
      });
      client.close();
    }
  });
});

describe('consumers', () => {
  it("basic.consume's arguments show in the consumer's facts", async () => {
    const connection = await connect(node);
    const ch = await connection.createChannel();
    await ch.assertQueue('facts-q', { durable: true });
    await ch.consume('facts-q', () => undefined, { priority: 5, arguments: { 'x-custom': 'yes' } });
    const consumers = node.broker.gate
      .list()
      .flatMap((c) => c.info().channels.flatMap((channel) => channel.consumers))
      .filter((c) => c.queue.name === 'facts-q');
    expect(consumers).toHaveLength(1);
    expect(consumers[0]?.arguments).toEqual({ 'x-priority': 5, 'x-custom': 'yes' });
  });
});

describe('connection.update-secret', () => {
  it("the same user's password again: update-secret-ok, and the connection goes on", async () => {
    const connection = await connect(node);
    await connection.updateSecret(Buffer.from('guest'), 'rotation');
    const ch = await connection.createChannel();
    await ch.assertQueue('after-secret', { durable: true });
  });

  it("a wrong one: 530 NOT_ALLOWED 'New secret was refused by one of the backends', as RabbitMQ", async () => {
    const client = await RawAmqpClient.open(node.port);
    await client.handshake();
    client.method(0, {
      name: 'connection.update-secret',
      args: { newSecret: Buffer.from('wrong'), reason: 'rotation' },
    });
    expect((await client.next('connection.close')).method.args).toMatchObject({
      replyCode: 530,
      replyText: 'NOT_ALLOWED - New secret was refused by one of the backends',
      classId: 10,
      methodId: 70,
    });
    client.close();
  });
});

describe('connection.blocked under the memory alarm', () => {
  it('a publisher is told blocked (with the reason) and its publishes wait; a consumer keeps being served', async () => {
    const tight = await startNode('amqp-memory-alarm', 1);
    await eventually('the memory alarm', async () => tight.broker.isMemoryBlocked);
    const consumerSide = await connect(tight);
    const cch = await consumerSide.createChannel();
    await cch.assertQueue('alarm-q', { durable: true });
    const publisher = await connect(tight);
    const blocked = new Promise<string>((resolve) => publisher.on('blocked', resolve));
    const pch = await publisher.createConfirmChannel();
    pch.sendToQueue('alarm-q', Buffer.from('held'));
    expect(await blocked).toMatch(/memory/);
    const state = tight.broker.gate
      .list()
      .map((c) => c.info())
      .find((i) => i.channels.some((ch) => ch.confirm));
    expect(state?.state).toBe('blocked');
    // Its next publishes wait (the node no longer reads from it)...
    pch.sendToQueue('alarm-q', Buffer.from('waits'));
    await new Promise((resolve) => setTimeout(resolve, 300));
    // ...while a connection that never published is not blocked: it declares and reads.
    expect((await cch.checkQueue('alarm-q')).messageCount).toBeLessThanOrEqual(1);
    await cch.assertQueue('alarm-q2', { durable: true });
  });
});

describe('a graceful close (maintenance, shutdown) leaves no publish in doubt', () => {
  it('publishes are confirmed up to the close and the queue holds exactly the confirmed ones', async () => {
    const own = await startNode('amqp-graceful');
    const connection = await connect(own);
    const closed = new Promise<Error>((resolve) => connection.on('close', resolve));
    const blocked = new Promise<string>((resolve) => connection.on('blocked', resolve));
    const ch = await connection.createConfirmChannel();
    ch.on('error', () => undefined);
    await ch.assertQueue('graceful-q', { durable: true });
    let acked = 0;
    let sent = 0;
    let open = true;
    connection.on('close', () => {
      open = false;
    });
    // Publishes keep going out while the node closes: some before its decision, some after.
    const publishing = (async () => {
      while (open) {
        for (let i = 0; i < 50 && open; i++) {
          sent++;
          ch.sendToQueue('graceful-q', Buffer.from(String(sent)), { persistent: true }, (err) => {
            if (!err) acked++;
          });
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })().catch(() => undefined);
    await eventually('some publishes confirmed', async () => acked > 100);
    const [gone] = own.broker.gate.list();
    await gone?.closeGracefully('node entering maintenance mode');
    expect(await blocked).toBe('node entering maintenance mode');
    expect(String((await closed).message)).toMatch(/320.*maintenance/);
    await publishing;
    expect(sent).toBeGreaterThan(acked);
    // No publish in doubt: those confirmed are in the queue, those not confirmed never got there.
    const check = await (await connect(own)).createChannel();
    expect((await check.checkQueue('graceful-q')).messageCount).toBe(acked);
  });
});

// ------------------------------------------------------------------------------- x-death on the wire

interface Typed {
  readonly t: string;
  readonly v: unknown;
}

/** A fixture value ({t: AMQP tag, v}) as a field value, timestamps taken from `times` in order. */
function fieldValue(typed: Typed, times: number[]): FieldValue {
  switch (typed.t) {
    case 'S':
      return { longStr: typed.v as string };
    case 'l':
      return { i64: typed.v as number };
    case 'b':
      return { i8: typed.v as number };
    case 'T':
      return { timestamp: times.shift() as number };
    case 'A':
      return { array: { values: (typed.v as Typed[]).map((v) => fieldValue(v, times)) } };
    case 'F':
      return { table: fieldTable(typed.v as Record<string, Typed>, times) };
    default:
      throw new Error(`fixture tag ${typed.t}`);
  }
}

function fieldTable(typed: Record<string, Typed>, times: number[]): FieldTable {
  return { entries: Object.entries(typed).map(([key, value]) => ({ key, value: fieldValue(value, times) })) };
}

/** The headers table's bytes in a content header's property bytes (flags, then the properties). */
function headersBytes(properties: Buffer): Buffer {
  const flags = properties.readUInt16BE(0);
  let at = 2;
  if (flags & 0x8000) at += 1 + (properties[at] as number); // content-type
  if (flags & 0x4000) at += 1 + (properties[at] as number); // content-encoding
  expect(flags & 0x2000).toBeTruthy();
  return properties.subarray(at, at + 4 + properties.readUInt32BE(at));
}

/** Every timestamp's seconds in a header table's bytes ('T' values), in wire order. */
function timestampsIn(table: Buffer): number[] {
  const found: number[] = [];
  const r = new amqp091.AmqpReader().reset(table, 0, table.length);
  const walk = (value: FieldValue): void => {
    const v = value as Record<string, unknown>;
    if (typeof v.timestamp === 'number') found.push(v.timestamp);
    if (v.array !== undefined) for (const e of (v.array as { values: FieldValue[] }).values) walk(e);
    if (v.table !== undefined) for (const e of (v.table as FieldTable).entries) walk(e.value);
  };
  for (const e of amqp091.readFieldTable(r).entries) walk(e.value);
  return found;
}

describe('x-death read through the AMQP wire', () => {
  it('after two dead-letterings the headers are, byte for byte, what RabbitMQ 3.10 sends', async () => {
    const fixture = JSON.parse(
      readFileSync(new URL('../fixtures/rabbitmq-3.10-x-death.json', import.meta.url), 'utf8'),
    ) as {
      samples: {
        quorum: {
          published_properties: { contentType: string; messageId: string; headers: Record<string, unknown> };
          after_second_dead_letter: {
            routing_key: string;
            exchange: string;
            body: string;
            properties_wire_typed: { headers: Record<string, Typed> };
          };
        };
      };
    };
    const sample = fixture.samples.quorum;
    const connection = await connect(node);
    const ch = await connection.createChannel();
    await ch.assertExchange('xd.dlx1', 'fanout');
    await ch.assertExchange('xd.dlx2', 'direct');
    await ch.assertQueue('xd.q1.quorum', {
      arguments: { 'x-queue-type': 'quorum' },
      deadLetterExchange: 'xd.dlx1',
    });
    await ch.assertQueue('xd.q2.quorum', {
      arguments: { 'x-queue-type': 'quorum' },
      messageTtl: 200,
      deadLetterExchange: 'xd.dlx2',
      deadLetterRoutingKey: 'to-q3',
    });
    await ch.assertQueue('xd.q3.quorum', { arguments: { 'x-queue-type': 'quorum' } });
    await ch.bindQueue('xd.q2.quorum', 'xd.dlx1', '');
    await ch.bindQueue('xd.q3.quorum', 'xd.dlx2', 'to-q3');
    const published = sample.published_properties;
    const before = Math.floor(Date.now() / 1000);
    ch.sendToQueue('xd.q1.quorum', Buffer.from(sample.after_second_dead_letter.body), {
      persistent: true,
      contentType: published.contentType,
      messageId: published.messageId,
      headers: published.headers,
    });
    let first: amqp.GetMessage | false = false;
    await eventually('the message in q1', async () => {
      first = await ch.get('xd.q1.quorum');
      return first !== false;
    });
    ch.reject(first as unknown as amqp.GetMessage, false);

    // Read it off the wire: the raw client keeps the content header's property bytes as sent.
    const raw = await RawAmqpClient.open(node.port);
    await raw.handshake();
    raw.method(1, { name: 'channel.open', args: {} });
    await raw.next('channel.open-ok');
    let got: amqp091.AmqpCommand | undefined;
    await eventually('the message in q3', async () => {
      raw.method(1, { name: 'basic.get', args: { queue: 'xd.q3.quorum', noAck: true } });
      const reply = await raw.next(['basic.get-ok', 'basic.get-empty']);
      if (reply.method.name === 'basic.get-ok') got = reply;
      return got !== undefined;
    });
    const after = Math.ceil(Date.now() / 1000);
    raw.close();
    if (got?.kind !== 'content') throw new Error('no content');
    const expected = sample.after_second_dead_letter;
    expect(got.method.args).toMatchObject({ exchange: expected.exchange, routingKey: expected.routing_key });
    expect(got.body.toString()).toBe(expected.body);
    const actual = headersBytes(got.propertiesBytes);
    const times = timestampsIn(actual);
    expect(times).toHaveLength(2);
    for (const t of times) {
      expect(t).toBeGreaterThanOrEqual(before);
      expect(t).toBeLessThanOrEqual(after);
    }
    const w = new amqp091.AmqpWriter();
    amqp091.writeFieldTable(w, fieldTable(expected.properties_wire_typed.headers, [...times]));
    expect(actual.toString('hex')).toBe(w.take().toString('hex'));
  });
});
