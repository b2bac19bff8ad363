// Bad input from raw WebSocket clients against a real `styx server` process. Each case checks the
// error a client gets (AMQP reply code, a text that says what was wrong) and its scope: a channel
// error closes only that channel, a connection error closes only that connection. Throughout the
// file a well-behaved SDK client publishes and consumes on its own connection; it must never notice
// anything, and the node must still be running at the end.
//
// Where Styx defines the answer itself (there is no AMQP 0-9-1 equivalent), the case says so:
// - a frame whose method field number this version does not know: 502 SYNTAX_ERROR (the codec
//   rejects a frame without a known method, @styx/client/wire decodeBatch);
// - a protocol version the node does not speak: 530 NOT_ALLOWED;
// - a name longer than 255 bytes (AMQP cannot even encode one): 406 PRECONDITION_FAILED on the
//   channel (packages/node/src/metadata/names.ts);
// - prefetch_size, and basic.consume under channel-wide prefetch (basic.qos global=true, taken as
//   RabbitMQ takes it; its quorum queues then refuse consumers): 540 NOT_IMPLEMENTED, which
//   AMQP 0-9-1 makes a connection error (packages/node/src/session/channel-core.ts);
// - a text WebSocket message: 502 SYNTAX_ERROR.
import * as amqp from '@styx/client';
import type { Frame } from '@styx/client/wire';
import { DEFAULT_FRAME_MAX, encodeBatch, frame, ReplyCode } from '@styx/client/wire';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { describeFrame, helloFrame, RawClient } from '../support/raw-ws-client.ts';

/** Interval at which the well-behaved client publishes, ms. */
const STEADY_PUBLISH_INTERVAL_MS = 20;
/** Upper bound for any wait that is not about a specific timing, ms. */
const WAIT_MS = 10_000;

const publishFrame = (channel: number, exchange: string, routingKey: string, body: Uint8Array): Frame =>
  frame(channel, 'basicPublish', { exchange, routingKey, mandatory: false, immediate: false, body });

const declareQueueFrame = (channel: number, queue: string, passive = false): Frame =>
  frame(channel, 'queueDeclare', {
    queue,
    passive,
    durable: false,
    exclusive: false,
    autoDelete: false,
  });

/** Waits until `check()` holds, polling every 20 ms; fails with `what` after `timeoutMs`. */
async function eventually(check: () => boolean | Promise<boolean>, what: string, timeoutMs = WAIT_MS) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The next frame must be a ConnectionClose with `code`; then the broker must close the socket. */
async function expectConnectionClosed(client: RawClient, code: number, text: RegExp): Promise<void> {
  const close = await client.next('connectionClose', 0);
  expect(close.connectionClose.replyCode).toBe(code);
  expect(close.connectionClose.replyText).toMatch(text);
  await client.waitClosed();
  expect(client.unread().map(describeFrame)).toEqual([]);
  expect(client.undecodable).toEqual([]);
}

/** The next frame must be a ChannelClose on `channel` with `code`; the connection stays open. */
async function expectChannelClosed(client: RawClient, channel: number, code: number, text: RegExp) {
  const close = await client.next('channelClose', channel);
  expect(close.channelClose.replyCode).toBe(code);
  expect(close.channelClose.replyText).toMatch(text);
  client.send([frame(channel, 'channelCloseOk', {})]);
}

/** Proves the connection is alive and in order: a round trip on a fresh channel `n`. */
async function expectConnectionUsable(client: RawClient, n: number): Promise<void> {
  await client.openChannel(n);
  client.send([declareQueueFrame(n, 'bad-input.alive')]);
  const ok = await client.next('queueDeclareOk', n);
  expect(ok.queueDeclareOk.queue).toBe('bad-input.alive');
  expect(client.isClosed).toBe(false);
}

describe('bad input from raw clients', () => {
  let broker: BrokerProcess;
  const raws: RawClient[] = [];
  // The well-behaved client: publishes a numbered message every few ms and consumes them all.
  let steady: amqp.ChannelModel;
  let steadyPub: amqp.ConfirmChannel;
  let steadyTimer: NodeJS.Timeout | undefined;
  const steadyErrors: Error[] = [];
  let steadySent = 0;
  const steadySeen: number[] = [];

  /** A raw client that is terminated in afterAll whatever happens. */
  async function raw(): Promise<RawClient> {
    const client = await RawClient.open(broker.url);
    raws.push(client);
    return client;
  }
  async function rawConnected(hello: Parameters<typeof RawClient.connect>[1] = {}) {
    const { client, helloOk } = await RawClient.connect(broker.url, hello);
    raws.push(client);
    return { client, helloOk };
  }

  beforeAll(async () => {
    broker = await startBroker();
    steady = await amqp.connect(broker.url);
    steady.on('error', (err) => steadyErrors.push(err));
    steady.on('close', (err) => steadyErrors.push(err ?? new Error('steady connection closed')));
    steadyPub = await steady.createConfirmChannel();
    steadyPub.on('error', (err: Error) => steadyErrors.push(err));
    await steadyPub.assertQueue('bad-input.steady', { durable: false });
    const sub = await steady.createChannel();
    sub.on('error', (err: Error) => steadyErrors.push(err));
    await sub.consume('bad-input.steady', (msg) => {
      if (msg === null) {
        steadyErrors.push(new Error('steady consumer cancelled by the server'));
        return;
      }
      steadySeen.push(Number(msg.content.toString()));
      sub.ack(msg);
    });
    steadyTimer = setInterval(() => {
      steadyPub.sendToQueue('bad-input.steady', Buffer.from(String(steadySent)));
      steadySent += 1;
    }, STEADY_PUBLISH_INTERVAL_MS);
  });

  afterAll(async () => {
    if (steadyTimer !== undefined) clearInterval(steadyTimer);
    for (const client of raws) client.terminate();
    await steady?.close().catch(() => undefined);
    if (broker !== undefined) {
      await broker.stop();
      await broker.cleanup();
    }
  });

  describe('framing', () => {
    it('garbage bytes: 502 SYNTAX_ERROR, then the socket is closed', async () => {
      const client = await raw();
      client.sendRaw(Uint8Array.from([0xff, 0xff, 0xff, 0x01, 0x02, 0x03]));
      await expectConnectionClosed(client, ReplyCode.SYNTAX_ERROR, /undecodable batch of 6 bytes/);
    });

    it('garbage after a good handshake: 502 as well', async () => {
      const { client } = await rawConnected();
      client.sendRaw(Uint8Array.from([0x0a, 0x7f, 0x08]));
      await expectConnectionClosed(client, ReplyCode.SYNTAX_ERROR, /undecodable/);
    });

    it('a batch truncated inside a frame: 502 SYNTAX_ERROR', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      const whole = encodeBatch([publishFrame(1, '', 'bad-input.nowhere', new Uint8Array(200).fill(1))]);
      client.sendRaw(whole.subarray(0, whole.length - 50));
      await expectConnectionClosed(client, ReplyCode.SYNTAX_ERROR, /undecodable batch of \d+ bytes/);
    });

    it('a text WebSocket message: 502 SYNTAX_ERROR', async () => {
      const { client } = await rawConnected();
      client.sendRaw('{"method":"hello"}');
      await expectConnectionClosed(client, ReplyCode.SYNTAX_ERROR, /text WebSocket messages/);
    });

    it('an unknown method (an unused oneof field number): 502 SYNTAX_ERROR, as the codec defines', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      // Batch{ frames: [ Frame{ channel: 1, <field 95, length-delimited, empty> } ] }.
      // Field 95 is not in the Frame.method oneof (10..66 are): tag = (95 << 3) | 2 = 762 = 0xfa 0x05.
      const frameBytes = [0x08, 0x01, 0xfa, 0x05, 0x00];
      client.sendRaw(Uint8Array.from([0x0a, frameBytes.length, ...frameBytes]));
      await expectConnectionClosed(client, ReplyCode.SYNTAX_ERROR, /carries no known method/);
    });

    it('a message larger than the negotiated frame_max: 501 FRAME_ERROR', async () => {
      const { client, helloOk } = await rawConnected({ frameMax: 4096 });
      expect(helloOk.frameMax).toBe(4096);
      await client.openChannel(1);
      client.send([publishFrame(1, '', 'bad-input.nowhere', new Uint8Array(5000))]);
      await expectConnectionClosed(client, ReplyCode.FRAME_ERROR, /exceeds frame_max 4096/);
    });

    it('a message larger than the default frame_max (8 MiB): 501 FRAME_ERROR', async () => {
      const { client, helloOk } = await rawConnected();
      expect(helloOk.frameMax).toBe(DEFAULT_FRAME_MAX);
      await client.openChannel(1);
      client.send([publishFrame(1, '', 'bad-input.nowhere', new Uint8Array(DEFAULT_FRAME_MAX + 1))]);
      await expectConnectionClosed(client, ReplyCode.FRAME_ERROR, /exceeds frame_max 8388608/);
    });

    it('a message far beyond frame_max is refused by the WebSocket layer (close 1009) without harm', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([publishFrame(1, '', 'bad-input.nowhere', new Uint8Array(DEFAULT_FRAME_MAX * 2))]);
      const end = await client.waitClosed(WAIT_MS);
      expect(end.code).toBe(1009);
    });
  });

  describe('handshake', () => {
    it('frames before the hello: 503 COMMAND_INVALID', async () => {
      const client = await raw();
      client.send([frame(1, 'channelOpen', {})]);
      await expectConnectionClosed(
        client,
        ReplyCode.COMMAND_INVALID,
        /expected hello on channel 0, got channelOpen/,
      );
    });

    it('a heartbeat before the hello: 503 COMMAND_INVALID', async () => {
      const client = await raw();
      client.send([frame(0, 'heartbeat', {})]);
      await expectConnectionClosed(client, ReplyCode.COMMAND_INVALID, /expected hello/);
    });

    it('a second hello: 503 COMMAND_INVALID', async () => {
      const { client } = await rawConnected();
      client.send([helloFrame()]);
      await expectConnectionClosed(client, ReplyCode.COMMAND_INVALID, /hello is not valid/);
    });

    it('a protocol version the node does not speak: 530 NOT_ALLOWED, naming both versions', async () => {
      const client = await raw();
      client.send([helloFrame({ protocolVersion: 99 })]);
      await expectConnectionClosed(
        client,
        ReplyCode.NOT_ALLOWED,
        /unsupported protocol version 99.*speaks 1/,
      );
    });

    it('bad credentials: 403 ACCESS_REFUSED, the same answer for a wrong password and an unknown user', async () => {
      const wrongPassword = await raw();
      wrongPassword.send([helloFrame({ password: 'not-guest' })]);
      await expectConnectionClosed(wrongPassword, ReplyCode.ACCESS_REFUSED, /login refused: user 'guest'/);
      const unknownUser = await raw();
      unknownUser.send([helloFrame({ username: 'nobody', password: 'x' })]);
      await expectConnectionClosed(unknownUser, ReplyCode.ACCESS_REFUSED, /login refused: user 'nobody'/);
    });

    it('an unknown vhost: 530 NOT_ALLOWED', async () => {
      const client = await raw();
      client.send([helloFrame({ vhost: 'no-such-vhost' })]);
      await expectConnectionClosed(client, ReplyCode.NOT_ALLOWED, /vhost 'no-such-vhost' not found/);
    });

    it('frames pipelined behind the hello are handled after authentication, in order, not dropped', async () => {
      const client = await raw();
      client.send([helloFrame(), frame(1, 'channelOpen', {}), declareQueueFrame(1, 'bad-input.pipelined')]);
      // Sent as a separate message while the password is still being checked.
      client.send([frame(2, 'channelOpen', {})]);
      await client.next('helloOk', 0);
      // Replies are ordered per channel; channel 2's open-ok may overtake channel 1's declare-ok.
      const replies = [await client.nextAny(), await client.nextAny(), await client.nextAny()];
      expect(replies.filter((f) => f.channel === 1).map(describeFrame)).toEqual([
        'channelOpenOk(1)',
        'queueDeclareOk(1)',
      ]);
      expect(replies.filter((f) => f.channel === 2).map(describeFrame)).toEqual(['channelOpenOk(2)']);
    });

    it('more than 1000 frames pipelined behind the hello: 503 COMMAND_INVALID (the bound on held frames)', async () => {
      const client = await raw();
      const heartbeats = Array.from({ length: 1001 }, () => frame(0, 'heartbeat', {}));
      client.send([helloFrame(), ...heartbeats]);
      await expectConnectionClosed(
        client,
        ReplyCode.COMMAND_INVALID,
        /more than 1000 frames sent before hello-ok/,
      );
    });
  });

  describe('methods in the wrong place', () => {
    it('a server-to-client method on a channel (basicDeliver): 503 COMMAND_INVALID', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([
        frame(1, 'basicDeliver', {
          consumerTag: 'forged',
          deliveryTag: 1,
          redelivered: false,
          exchange: '',
          routingKey: 'bad-input.steady',
          body: new Uint8Array(1),
        }),
      ]);
      await expectConnectionClosed(
        client,
        ReplyCode.COMMAND_INVALID,
        /basicDeliver is not valid from a client/,
      );
    });

    it('a server-to-client method on channel 0 (helloOk): 503 COMMAND_INVALID', async () => {
      const { client } = await rawConnected();
      client.send([
        frame(0, 'helloOk', { heartbeatMs: 0, frameMax: 0, channelMax: 0, connectionName: 'forged' }),
      ]);
      await expectConnectionClosed(client, ReplyCode.COMMAND_INVALID, /helloOk is not valid on channel 0/);
    });

    it('a frame on a channel that was never opened: 504 CHANNEL_ERROR', async () => {
      const { client } = await rawConnected();
      client.send([frame(7, 'basicQos', { prefetchSize: 0, prefetchCount: 1, global: false })]);
      await expectConnectionClosed(
        client,
        ReplyCode.CHANNEL_ERROR,
        /basicQos on channel 7, which is not open/,
      );
    });

    it('opening a channel twice: 504 CHANNEL_ERROR', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([frame(1, 'channelOpen', {})]);
      await expectConnectionClosed(client, ReplyCode.CHANNEL_ERROR, /channel 1 is already open/);
    });

    it('a channel number above channel_max: 530 NOT_ALLOWED', async () => {
      const { client, helloOk } = await rawConnected();
      client.send([frame(helloOk.channelMax + 1, 'channelOpen', {})]);
      await expectConnectionClosed(client, ReplyCode.NOT_ALLOWED, /exceeds channel_max/);
    });
  });

  describe('channel errors close only their channel', () => {
    it('frames on a channel the server closed are ignored until close-ok; then the number is free again', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([frame(1, 'basicAck', { deliveryTag: 42, multiple: false })]);
      const close = await client.next('channelClose', 1);
      expect(close.channelClose.replyCode).toBe(ReplyCode.PRECONDITION_FAILED);
      // Before close-ok: all of these must be ignored, not answered and not acted on.
      client.send([
        frame(1, 'basicAck', { deliveryTag: 43, multiple: false }),
        publishFrame(1, 'bad-input.no-such-exchange', '', new Uint8Array(1)),
        declareQueueFrame(1, 'bad-input.declared-while-closing'),
        frame(1, 'channelOpen', {}),
      ]);
      // A request on another channel, sent after them: its reply proves they were read.
      await client.openChannel(2);
      client.send([declareQueueFrame(2, 'bad-input.declared-while-closing', true)]);
      await expectChannelClosed(
        client,
        2,
        ReplyCode.NOT_FOUND,
        /no queue 'bad-input.declared-while-closing'/,
      );
      client.send([frame(1, 'channelCloseOk', {})]);
      await client.openChannel(1);
      client.send([declareQueueFrame(1, 'bad-input.after-reopen')]);
      expect((await client.next('queueDeclareOk', 1)).queueDeclareOk.queue).toBe('bad-input.after-reopen');
    });

    it('an unknown delivery tag: 406 PRECONDITION_FAILED closes the channel, not the connection', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([frame(1, 'basicAck', { deliveryTag: 7, multiple: false })]);
      await expectChannelClosed(client, 1, ReplyCode.PRECONDITION_FAILED, /unknown delivery tag 7/);
      await expectConnectionUsable(client, 2);
    });

    it('basic.consume under basic.qos global=true: 540 NOT_IMPLEMENTED, as RabbitMQ answers for a quorum queue', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([
        declareQueueFrame(1, 'bad-input.global-qos'),
        frame(1, 'basicQos', { prefetchSize: 0, prefetchCount: 10, global: true }),
      ]);
      await client.next('queueDeclareOk', 1);
      await client.next('basicQosOk', 1);
      client.send([
        frame(1, 'basicConsume', {
          queue: 'bad-input.global-qos',
          consumerTag: 'g',
          noLocal: false,
          noAck: false,
          exclusive: false,
        }),
      ]);
      await expectConnectionClosed(
        client,
        ReplyCode.NOT_IMPLEMENTED,
        /queue 'bad-input.global-qos' in vhost '\/' does not support global qos/,
      );
    });

    it('basic.qos prefetch_size > 0: 540 NOT_IMPLEMENTED, a connection error', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([frame(1, 'basicQos', { prefetchSize: 4096, prefetchCount: 10, global: false })]);
      await expectConnectionClosed(client, ReplyCode.NOT_IMPLEMENTED, /prefetch_size is not supported/);
    });

    it('publish to a missing exchange: 404 on that channel while another channel keeps working', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      await client.openChannel(2);
      client.send([declareQueueFrame(2, 'bad-input.neighbour')]);
      await client.next('queueDeclareOk', 2);
      client.send([
        publishFrame(1, 'bad-input.missing', 'k', Uint8Array.of(1)),
        publishFrame(2, '', 'bad-input.neighbour', Uint8Array.of(2)),
      ]);
      await expectChannelClosed(
        client,
        1,
        ReplyCode.NOT_FOUND,
        /no exchange 'bad-input.missing' in vhost '\/'/,
      );
      client.send([frame(2, 'basicGet', { queue: 'bad-input.neighbour', noAck: true })]);
      const got = await client.next('basicGetOk', 2);
      expect([...got.basicGetOk.body]).toEqual([2]);
    });

    it('a queue name over 255 bytes: 406 PRECONDITION_FAILED on the channel (Styx checks what AMQP cannot encode)', async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([declareQueueFrame(1, 'q'.repeat(256))]);
      await expectChannelClosed(
        client,
        1,
        ReplyCode.PRECONDITION_FAILED,
        /too long: 256 bytes in UTF-8, at most 255/,
      );
      await expectConnectionUsable(client, 2);
    });

    it("exchange type 'bogus': 503 COMMAND_INVALID closes the connection, as in RabbitMQ; nothing is declared", async () => {
      const { client } = await rawConnected();
      await client.openChannel(1);
      client.send([
        frame(1, 'exchangeDeclare', {
          exchange: 'bad-input.bogus',
          type: 'bogus',
          passive: false,
          durable: false,
          autoDelete: false,
          internal: false,
        }),
      ]);
      await expectConnectionClosed(client, ReplyCode.COMMAND_INVALID, /invalid exchange type 'bogus'/);
      const { client: checker } = await rawConnected();
      await checker.openChannel(1);
      checker.send([
        frame(1, 'exchangeDeclare', {
          exchange: 'bad-input.bogus',
          type: '',
          passive: true,
          durable: false,
          autoDelete: false,
          internal: false,
        }),
      ]);
      await expectChannelClosed(checker, 1, ReplyCode.NOT_FOUND, /no exchange 'bad-input.bogus'/);
    });
  });

  describe('slow and silent peers', () => {
    it('a client that stops reading while lots is delivered does not hurt the node, and loses nothing', async () => {
      const total = 400;
      const body = Buffer.alloc(64 * 1024, 0x5a); // 400 × 64 KiB = 25 MiB, far above socket buffers
      const conn = await amqp.connect(broker.url);
      try {
        const ch = await conn.createConfirmChannel();
        await ch.assertQueue('bad-input.slow', { durable: false });
        for (let i = 0; i < total; i++) ch.sendToQueue('bad-input.slow', body);
        await ch.waitForConfirms();

        const { client } = await rawConnected();
        await client.openChannel(1);
        client.send([
          frame(1, 'basicConsume', {
            queue: 'bad-input.slow',
            consumerTag: 'slow',
            noLocal: false,
            noAck: false,
            exclusive: false,
          }),
        ]);
        await client.next('basicConsumeOk', 1);
        client.pauseReading();
        // Every message is now out for delivery to the client that does not read.
        await eventually(
          async () => (await ch.checkQueue('bad-input.slow')).messageCount === 0,
          'deliveries',
        );
        // The node keeps serving others meanwhile: a fresh round trip on the SDK connection.
        await ch.assertQueue('bad-input.slow.side', { durable: false });
        ch.sendToQueue('bad-input.slow.side', Buffer.from('side'));
        await ch.waitForConfirms();
        const side = await ch.get('bad-input.slow.side', { noAck: true });
        expect(side === false ? 'empty' : side.content.toString()).toBe('side');
        expect(broker.child.exitCode).toBeNull();

        // The stuck client goes away: its unacked messages return to the queue, none lost.
        client.terminate();
        await eventually(
          async () => (await ch.checkQueue('bad-input.slow')).messageCount === total,
          `all ${total} messages back in the queue`,
        );
        await ch.deleteQueue('bad-input.slow');
        await ch.deleteQueue('bad-input.slow.side');
      } finally {
        await conn.close();
      }
    });

    it('a client that negotiates a 1 s heartbeat and then goes silent is disconnected by the server', async () => {
      const { client, helloOk } = await rawConnected({ heartbeatMs: 1000 });
      expect(helloOk.heartbeatMs).toBe(1000);
      // Silent: the client sends nothing more (ws answers pings by itself, but Styx does not ping).
      const end = await client.waitClosed(WAIT_MS);
      expect(end.code).toBeGreaterThan(0);
      // The server kept its side of the bargain while waiting.
      expect(client.received.some((f) => f.method === 'heartbeat')).toBe(true);
    });

    it('a client that does send heartbeats every 300 ms stays connected past the 2 s deadline', async () => {
      const { client } = await rawConnected({ heartbeatMs: 1000 });
      const beat = setInterval(() => client.send([frame(0, 'heartbeat', {})]), 300);
      try {
        await new Promise((r) => setTimeout(r, 3500));
        expect(client.isClosed).toBe(false);
      } finally {
        clearInterval(beat);
      }
      await expectConnectionUsable(client, 1);
    });
  });

  it('the node survived everything and the well-behaved client never noticed', async () => {
    expect(broker.child.exitCode).toBeNull();
    expect(broker.child.signalCode).toBeNull();
    if (steadyTimer !== undefined) clearInterval(steadyTimer);
    steadyTimer = undefined;
    await steadyPub.waitForConfirms();
    await eventually(() => steadySeen.length === steadySent, `all ${steadySent} steady messages consumed`);
    expect(steadySent).toBeGreaterThan(50);
    expect(steadySeen).toEqual(Array.from({ length: steadySent }, (_, i) => i));
    expect(steadyErrors).toEqual([]);

    // And a final publish + consume on a brand-new connection.
    const conn = await amqp.connect(broker.url);
    try {
      const ch = await conn.createConfirmChannel();
      const { queue } = await ch.assertQueue('', { exclusive: true });
      ch.sendToQueue(queue, Buffer.from('final'));
      await ch.waitForConfirms();
      const body = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no delivery within 10 s')), WAIT_MS);
        ch.consume(queue, (msg) => {
          if (msg === null) return;
          clearTimeout(timer);
          ch.ack(msg);
          resolve(msg.content.toString());
        }).catch(reject);
      });
      expect(body).toBe('final');
    } finally {
      await conn.close();
    }
    const fatal = broker.logs.filter((line) => /"level":(50|60)/.test(line));
    expect(fatal).toEqual([]);
  });
});
