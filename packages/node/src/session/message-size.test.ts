import { afterEach, describe, expect, it } from 'vitest';
import { Broker } from '../broker/broker.ts';
import { Code } from '../errors/amqp-error.ts';
import { silentLogger } from '../logging/logger.ts';
import { ChannelCore } from './channel-core.ts';
import type { ChannelOutput } from './channel-output.ts';
import { checkMessageSize, DEFAULT_MAX_MESSAGE_SIZE, MAX_MESSAGE_SIZE_LIMIT } from './message-size.ts';

const started: Broker[] = [];

afterEach(async () => {
  for (const broker of started.splice(0)) await broker.shutdown();
});

/** A channel core on a real in-memory broker with `maxMessageSize`, recording what it answers. */
async function channelOn(maxMessageSize: number | undefined) {
  const broker = await Broker.start({
    nodeName: 'message-size-test',
    logger: silentLogger(),
    memoryBudgetBytes: 0,
    ...(maxMessageSize !== undefined ? { maxMessageSize } : {}),
  });
  started.push(broker);
  const session = await broker.gate.authenticate('guest', 'guest', '/', '127.0.0.1', 'c1');
  const seen: string[] = [];
  const output: ChannelOutput<string> = {
    reply: (r) => seen.push(r.method),
    prepareDelivery: () => 'delivery',
    sendDelivery: (d) => seen.push(d),
    confirm: (seq, _multiple, ack) => seen.push(`${ack ? 'ack' : 'nack'}:${seq}`),
    returned: (m) => seen.push(`return:${m.replyCode}`),
    cancelled: (tag) => seen.push(`cancel:${tag}`),
    close: (code, text) => seen.push(`close:${code}:${text}`),
    closed: () => seen.push('closed'),
    connectionError: (err) => seen.push(`connection-error:${String(err)}`),
  };
  const core = new ChannelCore({
    broker,
    session,
    connectionId: 'c1',
    number: 1,
    logger: silentLogger(),
    output,
  });
  core.handle({ method: 'confirm.select' });
  core.handle({
    method: 'queue.declare',
    queue: 'q',
    passive: false,
    durable: false,
    exclusive: false,
    autoDelete: false,
  });
  await until(() => seen.includes('queue.declare-ok'));
  const publish = (body: Uint8Array, bodySize?: number) =>
    core.handle({
      method: 'basic.publish',
      exchange: '',
      routingKey: 'q',
      mandatory: false,
      immediate: false,
      properties: undefined,
      body,
      ...(bodySize !== undefined ? { bodySize } : {}),
    });
  return { broker, core, seen, publish };
}

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 2));
  if (!done()) throw new Error('timed out');
}

describe('max_message_size in the channel core', () => {
  it('takes a body of exactly the limit and refuses one byte more with 406, closing the channel', async () => {
    const { broker, core, seen, publish } = await channelOn(1000);
    publish(new Uint8Array(1000));
    await until(() => seen.includes('ack:1'));
    publish(new Uint8Array(1001));
    expect(seen.at(-1)).toBe(
      `close:${Code.PRECONDITION_FAILED}:message size 1001 is larger than configured max size 1000`,
    );
    expect(core.isOpen).toBe(false);
    // The refused message reached no queue; the one at the limit did.
    const session = await broker.gate.authenticate('guest', 'guest', '/', '127.0.0.1', 'c2');
    expect(
      (
        await broker.declareQueue(session, {
          queue: 'q',
          passive: true,
          durable: false,
          exclusive: false,
          autoDelete: false,
        })
      ).messageCount,
    ).toBe(1);
  });

  it('refuses on the size a transport declared, without the body', async () => {
    const { core, seen, publish } = await channelOn(undefined);
    publish(new Uint8Array(0), DEFAULT_MAX_MESSAGE_SIZE + 1);
    expect(seen.at(-1)).toBe(
      `close:${Code.PRECONDITION_FAILED}:message size ${DEFAULT_MAX_MESSAGE_SIZE + 1} is larger than configured max size ${DEFAULT_MAX_MESSAGE_SIZE}`,
    );
    expect(core.isOpen).toBe(false);
  });

  it('advertises the limit in the server properties', async () => {
    const { broker } = await channelOn(4096);
    expect(broker.serverProperties.entries.find((e) => e.key === 'max_message_size')?.value).toEqual({
      i64: 4096,
    });
  });

  it('says "max size", not "configured", at the 512 MiB ceiling, as RabbitMQ', () => {
    expect(() => checkMessageSize(MAX_MESSAGE_SIZE_LIMIT + 1, MAX_MESSAGE_SIZE_LIMIT)).toThrow(
      `message size ${MAX_MESSAGE_SIZE_LIMIT + 1} is larger than max size ${MAX_MESSAGE_SIZE_LIMIT}`,
    );
    expect(() => checkMessageSize(MAX_MESSAGE_SIZE_LIMIT, MAX_MESSAGE_SIZE_LIMIT)).not.toThrow();
  });
});
