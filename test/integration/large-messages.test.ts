// Large message bodies against a real `styx server` with `--max-message-size 24 MiB` (frame_max
// stays 8 MiB): bodies larger than one WebSocket message go in BodyPart frames both ways (publish,
// deliver, get-ok, return), a body at the limit is taken, one byte over is refused with 406 closing
// only its channel, a large message dead-lettered by TTL arrives intact, and raw clients that send
// body parts out of place, longer than declared, or declare a body over the limit get the right
// error without harming the node or a healthy client beside them.
import { createHash } from 'node:crypto';
import type { ConfirmChannel } from '@styx/client';
import type { Frame } from '@styx/client/wire';
import { encodeBodyParts, frame, joinEncodedFrames, ReplyCode } from '@styx/client/wire';
import { afterAll, describe, expect, it } from 'vitest';
import { describeFrame, RawClient } from '../support/raw-ws-client.ts';
import {
  channelClosed,
  getOne,
  Inbox,
  unique,
  useBroker,
  WAIT_MS,
  withTimeout,
} from './messaging-helpers.ts';

const MIB = 1024 * 1024;
const MAX = 24 * MIB;
const { broker, connect } = useBroker({ extraArgs: ['--max-message-size', String(MAX)] });

/** A body of `length` bytes that differs at every offset from a shifted copy of itself. */
function patterned(length: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out.writeUInt32LE(x >>> 0, i < length - 3 ? i : length - 4);
  }
  return out;
}

const digest = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function publishConfirmed(ch: ConfirmChannel, queue: string, body: Buffer): Promise<void> {
  await withTimeout(
    new Promise<void>((resolve, reject) =>
      ch.sendToQueue(queue, body, { messageId: `m-${body.length}` }, (err) =>
        err ? reject(err) : resolve(),
      ),
    ),
    WAIT_MS * 3,
    `the confirm of ${body.length} bytes`,
  );
}

const raws: RawClient[] = [];
afterAll(() => {
  for (const raw of raws) raw.terminate();
});

describe('large messages through the SDK', () => {
  it('publishes and consumes 1 MiB and 20 MiB bodies intact, and gets one with basic.get', async () => {
    const conn = await connect();
    expect(conn.serverProperties.max_message_size).toBe(MAX);
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('large'), { durable: true });
    const small = patterned(MIB, 1);
    const big = patterned(20 * MIB, 2);
    await publishConfirmed(ch, queue, small);
    await publishConfirmed(ch, queue, big);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    const [a, b] = await inbox.atLeast(2, WAIT_MS * 3);
    expect(a?.content.length).toBe(MIB);
    expect(digest(a?.content as Buffer)).toBe(digest(small));
    expect(b?.content.length).toBe(20 * MIB);
    expect(digest(b?.content as Buffer)).toBe(digest(big));
    expect(b?.properties.messageId).toBe(`m-${20 * MIB}`);
    // basic.get-ok in parts too.
    const getter = await conn.createConfirmChannel();
    const { queue: other } = await getter.assertQueue('', { exclusive: true });
    await publishConfirmed(getter, other, big);
    const got = await getOne(getter, other);
    expect(digest(got.content)).toBe(digest(big));
  });

  it('takes a body of exactly max_message_size; one byte more is refused with 406 and the connection goes on', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    const atLimit = patterned(MAX, 3);
    await publishConfirmed(ch, queue, atLimit);
    expect(digest((await getOne(ch, queue)).content)).toBe(digest(atLimit));
    const closed = channelClosed(ch);
    ch.sendToQueue(queue, patterned(MAX + 1, 4), {}, () => {});
    const err = await closed;
    expect(err?.code).toBe(ReplyCode.PRECONDITION_FAILED);
    expect(err?.message).toContain(`message size ${MAX + 1} is larger than configured max size ${MAX}`);
    const again = await conn.createChannel();
    const declared = await again.checkQueue(queue);
    expect(declared.messageCount).toBe(0);
  });

  it('returns a large unroutable mandatory message intact', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const body = patterned(10 * MIB, 5);
    const returned = new Promise<Buffer>((resolve) => ch.once('return', (m) => resolve(m.content)));
    ch.publish('', unique('nobody'), body, { mandatory: true });
    expect(digest(await withTimeout(returned, WAIT_MS, 'the return'))).toBe(digest(body));
  });

  it('dead-letters a large message by TTL into a DLX, intact and with its x-death', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const dlx = unique('large.dlx');
    const dlq = unique('large.dlq');
    await ch.assertExchange(dlx, 'fanout', { durable: false });
    await ch.assertQueue(dlq, { durable: true });
    await ch.bindQueue(dlq, dlx, '');
    const source = unique('large.ttl');
    await ch.assertQueue(source, {
      durable: true,
      arguments: { 'x-message-ttl': 50, 'x-dead-letter-exchange': dlx },
    });
    const body = patterned(20 * MIB, 6);
    await publishConfirmed(ch, source, body);
    const inbox = new Inbox();
    await ch.consume(dlq, inbox.onMessage, { noAck: true });
    const [dead] = await inbox.atLeast(1, WAIT_MS * 3);
    expect(digest(dead?.content as Buffer)).toBe(digest(body));
    const deaths = dead?.properties.headers?.['x-death'] as Array<Record<string, unknown>>;
    expect(deaths?.[0]).toMatchObject({ queue: source, reason: 'expired', count: 1 });
  });
});

describe('body parts from raw clients', () => {
  const open = async (): Promise<{ client: RawClient; frameMax: number }> => {
    const { client, helloOk } = await RawClient.connect(broker().url);
    raws.push(client);
    await client.openChannel(1);
    return { client, frameMax: helloOk.frameMax };
  };
  const publish = (bodySize: number, body = new Uint8Array(0)): Frame =>
    frame(1, 'basicPublish', {
      exchange: '',
      routingKey: 'large.raw',
      mandatory: false,
      immediate: false,
      body,
      bodySize,
    });

  it('a declared body over max_message_size: 406 on the channel, its parts dropped, the connection usable', async () => {
    const { client, frameMax } = await open();
    client.send([publish(MAX + 1)]);
    // The parts the client sent before it heard: dropped with the channel, no connection error.
    for (const part of encodeBodyParts(1, new Uint8Array(3 * frameMax), frameMax))
      client.sendRaw(joinEncodedFrames([part]));
    const close = await client.next('channelClose', 1);
    expect(close.channelClose.replyCode).toBe(ReplyCode.PRECONDITION_FAILED);
    expect(close.channelClose.replyText).toBe(
      `message size ${MAX + 1} is larger than configured max size ${MAX}`,
    );
    client.send([frame(1, 'channelCloseOk', {})]);
    await client.openChannel(2);
    client.send([
      frame(2, 'queueDeclare', {
        queue: '',
        passive: false,
        durable: false,
        exclusive: true,
        autoDelete: false,
      }),
    ]);
    await client.next('queueDeclareOk', 2);
    expect(client.isClosed).toBe(false);
  });

  it('parts longer than the declared body: 501 FRAME_ERROR, the connection closed', async () => {
    const { client } = await open();
    client.send([
      publish(10),
      frame(1, 'bodyPart', { data: new Uint8Array(6) }),
      frame(1, 'bodyPart', { data: new Uint8Array(6) }),
    ]);
    await expectConnectionClose(
      client,
      ReplyCode.FRAME_ERROR,
      /body part of 6 bytes exceeds the 4 bytes remaining of a 10-byte body/,
    );
  });

  it('a part with no body declared, or another method between parts: 505 UNEXPECTED_FRAME', async () => {
    const first = await open();
    first.client.send([frame(1, 'bodyPart', { data: new Uint8Array(1) })]);
    await expectConnectionClose(first.client, ReplyCode.UNEXPECTED_FRAME, /no method declaring a body/);
    const second = await open();
    second.client.send([
      publish(10),
      frame(1, 'basicQos', { prefetchSize: 0, prefetchCount: 1, global: false }),
    ]);
    await expectConnectionClose(
      second.client,
      ReplyCode.UNEXPECTED_FRAME,
      /basicQos on channel 1 while 10 bytes of a body were still to come/,
    );
  });

  it('a publish declaring body_size that carries a body itself: 501 FRAME_ERROR', async () => {
    const { client } = await open();
    client.send([publish(10, new Uint8Array(4))]);
    await expectConnectionClose(client, ReplyCode.FRAME_ERROR, /carries 4 body bytes itself/);
  });

  it('a client that does not announce body_parts (an older SDK) gets a large body whole, in one frame', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const queue = unique('large.old-client');
    await ch.assertQueue(queue, { durable: false });
    const body = patterned(9 * MIB, 8);
    await publishConfirmed(ch, queue, body);
    const { client } = await open();
    client.send([frame(1, 'basicGet', { queue, noAck: true })]);
    const got = await client.next('basicGetOk', 1, WAIT_MS);
    expect(got.basicGetOk.bodySize).toBe(0);
    expect(digest(got.basicGetOk.body)).toBe(digest(body));
  });

  it('the node is still up and serves a healthy client afterwards', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    await publishConfirmed(ch, queue, patterned(9 * MIB, 7));
    expect((await getOne(ch, queue)).content.length).toBe(9 * MIB);
  });
});

async function expectConnectionClose(client: RawClient, code: number, text: RegExp): Promise<void> {
  const close = await client.next('connectionClose', 0);
  expect(close.connectionClose.replyCode, describeFrame(close)).toBe(code);
  expect(close.connectionClose.replyText).toMatch(text);
  await client.waitClosed();
}
