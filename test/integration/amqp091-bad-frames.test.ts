// Targeted bad input at the AMQP 0-9-1 listener (issue 27 item 7), each with the answer RabbitMQ
// gives: slow-loris peers (a protocol header or a frame never finished) closed after a bound, a
// frame over frame_max and a frame claiming 4 GiB (501, nothing allocated), a body longer than its
// header said (501, rabbit_command_assembler's "content body frame exceeds remaining content
// size"), a content header where a method is due (505), a method on a closed channel (504), a
// channel over channel_max (530), a field table with an unknown type tag (502). A node runs in this
// process with short timeouts, so the slow peers take a moment, not the production 10 s and 30 s.
import type { AddressInfo } from 'node:net';
import { AmqpServer, amqp091, Broker, silentLogger } from '@styx/node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawAmqpClient } from '../support/raw-amqp-client.ts';

const HANDSHAKE_TIMEOUT_MS = 400;
const FRAME_TIMEOUT_MS = 400;
const CLOSE_TIMEOUT_MS = 500;

let broker: Broker;
let server: AmqpServer;
let port: number;

beforeAll(async () => {
  broker = await Broker.start({ nodeName: 'amqp-bad-frames', logger: silentLogger(), memoryBudgetBytes: 0 });
  server = new AmqpServer(
    broker,
    {
      host: '127.0.0.1',
      port: 0,
      limits: {
        handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
        frameTimeoutMs: FRAME_TIMEOUT_MS,
        closeTimeoutMs: CLOSE_TIMEOUT_MS,
      },
    },
    silentLogger(),
  );
  port = ((await server.listen()) as AddressInfo).port;
});

afterAll(async () => {
  await server?.close();
  await broker?.shutdown();
});

/** Resolves with how long the socket took to close, or rejects after `ms`. */
async function closedWithin(client: RawAmqpClient, ms: number): Promise<number> {
  const start = Date.now();
  await Promise.race([
    client.closed,
    new Promise((_, reject) => setTimeout(() => reject(new Error(`socket still open after ${ms} ms`)), ms)),
  ]);
  return Date.now() - start;
}

/** A connection.close from the node: its reply code, text and failing method. */
async function connectionClose(client: RawAmqpClient): Promise<Record<string, unknown>> {
  const close = await client.next('connection.close', 5_000);
  expect(close.channel).toBe(0);
  return close.method.args as Record<string, unknown>;
}

/** An open connection with channel 1 open. */
async function openChannel(): Promise<RawAmqpClient> {
  const client = await RawAmqpClient.open(port);
  await client.handshake({ frameMax: 4096 });
  client.method(1, { name: 'channel.open', args: {} });
  await client.next('channel.open-ok');
  return client;
}

/** A raw frame: type, channel, payload, frame-end. */
function frame(type: number, channel: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(7);
  head[0] = type;
  head.writeUInt16BE(channel, 1);
  head.writeUInt32BE(payload.length, 3);
  return Buffer.concat([head, payload, Buffer.from([0xce])]);
}

/** A content header frame payload for class 60 declaring `bodySize` (high and low words), no properties. */
function contentHeader(high: number, low: number): Buffer {
  const p = Buffer.alloc(14);
  p.writeUInt16BE(60, 0);
  p.writeUInt16BE(0, 2);
  p.writeUInt32BE(high, 4);
  p.writeUInt32BE(low, 8);
  p.writeUInt16BE(0, 12);
  return p;
}

const publish = (): Buffer =>
  amqp091.encodeMethodFrame(1, { name: 'basic.publish', args: { exchange: '', routingKey: 'nowhere' } });

describe('AMQP 0-9-1 slow-loris peers', () => {
  it('a protocol header never finished: the socket closes after the handshake timeout, nothing sent', async () => {
    const client = await RawAmqpClient.open(port);
    client.send(Buffer.from('AMQP\0'));
    const took = await closedWithin(client, HANDSHAKE_TIMEOUT_MS + 5_000);
    expect(took).toBeGreaterThanOrEqual(HANDSHAKE_TIMEOUT_MS - 50);
    expect(Buffer.concat(client.received)).toEqual(Buffer.alloc(0));
  });

  it('a start-ok frame never finished: 320 handshake timeout, then the socket goes', async () => {
    const client = await RawAmqpClient.open(port);
    client.send(amqp091.PROTOCOL_HEADER);
    await client.next('connection.start');
    const startOk = amqp091.encodeMethodFrame(0, {
      name: 'connection.start-ok',
      args: { clientProperties: { entries: [] }, mechanism: 'PLAIN', response: '\0guest\0guest' },
    });
    client.send(startOk.subarray(0, 20));
    expect(await connectionClose(client)).toMatchObject({
      replyCode: 320,
      replyText: 'CONNECTION_FORCED - handshake timeout',
    });
    await closedWithin(client, CLOSE_TIMEOUT_MS + 5_000);
  });

  it('after open, a frame cut short then silence (heartbeats off): 501 after the frame timeout, socket closed', async () => {
    const client = await openChannel();
    const started = Date.now();
    client.send(publish().subarray(0, 10));
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 501 });
    expect(String(close.replyText)).toMatch(/frame not completed within 400 ms/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(FRAME_TIMEOUT_MS - 50);
    // Its close-ok could only follow the rest of the frame: the node does not wait for it.
    await closedWithin(client, 2_000);
  });

  it('a frame trickled a byte at a time (each byte resets no timer): closed within twice the bound', async () => {
    const client = await openChannel();
    const bytes = publish();
    const started = Date.now();
    let i = 0;
    const trickle = setInterval(() => {
      if (i < bytes.length - 1 && !client.socket.destroyed) client.send(bytes.subarray(i, ++i));
    }, 50);
    try {
      expect(await connectionClose(client)).toMatchObject({ replyCode: 501 });
      expect(Date.now() - started).toBeLessThan(2 * FRAME_TIMEOUT_MS + 1_000);
      await closedWithin(client, 2_000);
    } finally {
      clearInterval(trickle);
    }
  });
});

describe('AMQP 0-9-1 frames that break the rules', () => {
  it('a frame claiming 4 GiB: 501 FRAME_ERROR from its header alone, nothing allocated', async () => {
    const client = await openChannel();
    const before = process.memoryUsage().arrayBuffers;
    const head = Buffer.from([3, 0, 1, 0xff, 0xff, 0xff, 0xff]);
    client.send(head);
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 501 });
    expect(String(close.replyText)).toMatch(/frame size \d+ > negotiated max 4096/);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(8 * 1024 * 1024);
    await closedWithin(client, 2_000);
  });

  it('a content header declaring 2^64-1 bytes: 501, the method named', async () => {
    const client = await openChannel();
    client.send(Buffer.concat([publish(), frame(2, 1, contentHeader(0xffff_ffff, 0xffff_ffff))]));
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 501, classId: 60, methodId: 40 });
    expect(String(close.replyText)).toMatch(/content body size > 2\^53 cannot be represented/);
    client.close();
  });

  it("a body over max_message_size: read and dropped, the channel closed 406 with RabbitMQ's text, the connection kept", async () => {
    const client = await openChannel();
    const size = 16 * 1024 * 1024 + 1;
    const parts: Buffer[] = [publish(), frame(2, 1, contentHeader(0, size))];
    const chunk = Buffer.alloc(4088, 7);
    for (let left = size; left > 0; left -= chunk.length) {
      parts.push(frame(3, 1, left >= chunk.length ? chunk : chunk.subarray(0, left)));
    }
    client.send(Buffer.concat(parts));
    const close = await client.next('channel.close', 10_000);
    expect(close.channel).toBe(1);
    expect(close.method.args).toMatchObject({
      replyCode: 406,
      replyText: `PRECONDITION_FAILED - message size ${size} is larger than configured max size ${16 * 1024 * 1024}`,
      classId: 60,
      methodId: 40,
    });
    client.method(1, { name: 'channel.close-ok', args: {} });
    client.method(2, { name: 'channel.open', args: {} });
    await client.next('channel.open-ok');
    client.close();
  });

  it('a content header declaring the largest size allowed does not reserve it: the body is not allocated up front', async () => {
    const client = await openChannel();
    const before = process.memoryUsage().arrayBuffers;
    client.send(
      Buffer.concat([
        publish(),
        frame(2, 1, contentHeader(0, 16 * 1024 * 1024)),
        frame(3, 1, Buffer.from('abc')),
      ]),
    );
    // The node is fine and the connection waits for the rest of the body.
    client.method(1, { name: 'basic.qos', args: { prefetchCount: 1 } });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(8 * 1024 * 1024);
    client.close();
  });

  it("a body longer than its header said: 501, RabbitMQ's 'content body frame exceeds remaining content size'", async () => {
    const client = await openChannel();
    client.send(
      Buffer.concat([publish(), frame(2, 1, contentHeader(0, 3)), frame(3, 1, Buffer.from('four'))]),
    );
    expect(await connectionClose(client)).toMatchObject({
      replyCode: 501,
      replyText: 'FRAME_ERROR - content body frame exceeds remaining content size',
      classId: 60,
      methodId: 40,
    });
    client.method(0, { name: 'connection.close-ok', args: {} });
    await closedWithin(client, 2_000);
  });

  it('a content header on a channel expecting a method: 505 UNEXPECTED_FRAME', async () => {
    const client = await openChannel();
    client.send(frame(2, 1, contentHeader(0, 3)));
    expect(await connectionClose(client)).toMatchObject({ replyCode: 505 });
    client.method(0, { name: 'connection.close-ok', args: {} });
    await closedWithin(client, 2_000);
  });

  it('a body frame with no content method before it: 505 UNEXPECTED_FRAME', async () => {
    const client = await openChannel();
    client.send(frame(3, 1, Buffer.from('stray')));
    expect(await connectionClose(client)).toMatchObject({ replyCode: 505 });
    client.close();
  });

  it('a method on a channel the client closed: 504 CHANNEL_ERROR naming the method', async () => {
    const client = await openChannel();
    client.method(1, {
      name: 'channel.close',
      args: { replyCode: 200, replyText: 'bye', classId: 0, methodId: 0 },
    });
    await client.next('channel.close-ok');
    client.method(1, { name: 'queue.declare', args: { queue: 'after-close' } });
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 504, classId: 50, methodId: 10 });
    expect(String(close.replyText)).toMatch(/expected 'channel.open' on channel 1, got 'queue.declare'/);
    client.close();
  });

  it('channel.open above channel_max: 530 NOT_ALLOWED', async () => {
    const client = await RawAmqpClient.open(port);
    await client.handshake();
    client.method(2048, { name: 'channel.open', args: {} });
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 530 });
    expect(String(close.replyText)).toMatch(/channel 2048 exceeds channel_max 2047/);
    client.close();
  });

  it('a field table with an unknown type tag: 502 SYNTAX_ERROR naming queue.declare', async () => {
    const client = await openChannel();
    const good = amqp091.encodeMethodFrame(1, {
      name: 'queue.declare',
      args: { queue: 'tagged', arguments: { entries: [{ key: 'x-k', value: { i32: 1 } }] } },
    });
    // The table ends with: key length 3, 'x-k', tag 'I', 4 value bytes, then the frame-end.
    const tagAt = good.length - 1 - 4 - 1;
    expect(good[tagAt]).toBe('I'.charCodeAt(0));
    good[tagAt] = 'Z'.charCodeAt(0);
    client.send(good);
    const close = await connectionClose(client);
    expect(close).toMatchObject({ replyCode: 502, classId: 50, methodId: 10 });
    expect(String(close.replyText)).toMatch(/unknown field table type tag 0x5a/);
    client.close();
  });

  it('after all that the node serves a well-behaved client', async () => {
    const client = await openChannel();
    client.method(1, { name: 'queue.declare', args: { queue: 'still-fine', exclusive: true } });
    await client.next('queue.declare-ok');
    client.close();
  });
});
