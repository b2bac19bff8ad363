import type { Frame } from '@styx/client/wire';
import { decodeBatch, joinEncodedFrames } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { Broker, Session } from '../../broker/broker.ts';
import type { Logger } from '../../logging/logger.ts';
import { BrokerCounters } from '../../metrics/broker-counters.ts';
import type { QueueHandle } from '../../queue/queue-handle.ts';
import type { StoredMessage } from '../../queue/types.ts';
import { Channel } from './channel.ts';

interface Delivery {
  readonly deliveryTag: number;
  readonly redelivered: boolean;
  readonly body: string;
}

/** A channel on a fake connection and broker, with one queue that records the commands it gets. */
async function setup() {
  const sent: (Frame | Uint8Array)[] = [];
  const settled: number[][] = [];
  const returned: number[][] = [];
  const logger = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;
  const queue = {
    vhost: '/',
    name: 'q',
    groupId: 'g1',
    deliveryCountHeader: false,
    consume: async () => ({ type: 'ok' }),
    settle: async (_owner: string, ids: readonly number[]) => {
      settled.push([...ids]);
    },
    returnMessages: async (_owner: string, ids: readonly number[]) => {
      returned.push([...ids]);
    },
    discard: async () => {},
    ownerDown: async () => {},
    cancel: async () => {},
  } as unknown as QueueHandle;
  const broker = {
    queueForUse: () => queue,
    generateName: (prefix: string) => `${prefix}1`,
    deliveryProperties: (_q: QueueHandle, m: StoredMessage) => m.properties,
    consumerCancelled: () => {},
    isCurrent: () => true,
    // Every name this fake knows is known here: nothing to catch up on.
    catchUpForQueue: () => undefined,
    counters: new BrokerCounters(),
  } as unknown as Broker;
  const channel = new Channel(
    {
      id: 'n1:1.1',
      frameMax: 8 * 1024 * 1024,
      takesBodyParts: false,
      session: { vhost: '/', user: 'guest' } as unknown as Session,
      logger,
      send: (frame) => sent.push(frame),
      channelClosed: () => {},
      closeWithError: (err) => {
        throw err;
      },
    },
    broker,
    1,
  );
  channel.handle({
    channel: 1,
    method: 'basicConsume',
    basicConsume: { queue: 'q', consumerTag: 'c', noAck: false, exclusive: false },
  } as unknown as Frame);
  await new Promise((resolve) => setTimeout(resolve, 0));
  const message = (text: string): StoredMessage => ({
    exchange: '',
    routingKey: 'q',
    properties: {},
    body: new TextEncoder().encode(text),
    bcc: undefined,
  });
  const deliveries = (): Delivery[] =>
    sent
      .filter((f): f is Uint8Array => f instanceof Uint8Array)
      .flatMap((bytes) => decodeBatch(joinEncodedFrames([bytes])))
      .filter((f) => f.method === 'basicDeliver')
      .map((f) => {
        const d = (f as Extract<Frame, { method: 'basicDeliver' }>).basicDeliver;
        return {
          deliveryTag: Number(d.deliveryTag),
          redelivered: d.redelivered,
          body: new TextDecoder().decode(d.body),
        };
      });
  const flush = () => new Promise((resolve) => setTimeout(resolve, 0));
  return { channel, queue, message, deliveries, settled, returned, flush };
}

describe('Channel (its core) as an OwnerSink', () => {
  it('ignores a delivery of a message it already holds unacked (a new leader sending it again)', async () => {
    const t = await setup();
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    // A new leader re-sends what is outstanding, marked redelivered, with the same delivery count.
    t.channel.core.deliver(t.queue, 'c', 7, true, 0, t.message('a'));
    expect(t.deliveries()).toEqual([{ deliveryTag: 1, redelivered: false, body: 'a' }]);
    // The original tag still acks it.
    t.channel.handle({ channel: 1, method: 'basicAck', basicAck: { deliveryTag: 1, multiple: false } });
    await t.flush();
    expect(t.settled).toEqual([[7]]);
  });

  it('delivers again a message that came back and was delivered anew (higher delivery count), flagged redelivered', async () => {
    const t = await setup();
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    // The leader gave this channel up (its node counted down), returned the message and delivered
    // it again once the consumer registered again: a new delivery, which the client must see.
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    expect(t.deliveries()).toEqual([
      { deliveryTag: 1, redelivered: false, body: 'a' },
      { deliveryTag: 2, redelivered: true, body: 'a' },
    ]);
    // A repeat of that newer delivery is ignored too.
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    expect(t.deliveries().length).toBe(2);
    // Both tags stay valid (an ack of a tag the client holds never closes the channel).
    t.channel.handle({ channel: 1, method: 'basicAck', basicAck: { deliveryTag: 2, multiple: false } });
    t.channel.handle({ channel: 1, method: 'basicAck', basicAck: { deliveryTag: 1, multiple: false } });
    await t.flush();
    expect(t.settled).toEqual([[7, 7]]);
  });

  it('delivers again, redelivered, a message it acked or returned', async () => {
    const t = await setup();
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    t.channel.handle({
      channel: 1,
      method: 'basicNack',
      basicNack: { deliveryTag: 1, multiple: false, requeue: true },
    });
    await t.flush();
    expect(t.returned).toEqual([[7]]);
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    expect(t.deliveries()).toEqual([
      { deliveryTag: 1, redelivered: false, body: 'a' },
      { deliveryTag: 2, redelivered: true, body: 'a' },
    ]);
  });

  it('ignores a late copy of a delivery it already settled (a send of a deposed leader, slowed on the link)', async () => {
    // Chaos seed 101: under a slow link from the old leader, its first delivery of a message
    // (count 0) was still on the way when the new leader delivered it again (count 1, flagged) and
    // the client acked that; the old send then arrived and reached the client unflagged, a second
    // time, after the ack.
    const t = await setup();
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    t.channel.handle({ channel: 1, method: 'basicAck', basicAck: { deliveryTag: 1, multiple: false } });
    await t.flush();
    expect(t.settled).toEqual([[7]]);
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    // A link's resend of the very delivery that was acked (same count) is as stale.
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    expect(t.deliveries()).toEqual([{ deliveryTag: 1, redelivered: true, body: 'a' }]);
    // The queue delivering it anew (the ack never applied: a higher count) still reaches the client.
    t.channel.core.deliver(t.queue, 'c', 7, true, 2, t.message('a'));
    expect(t.deliveries()).toEqual([
      { deliveryTag: 1, redelivered: true, body: 'a' },
      { deliveryTag: 2, redelivered: true, body: 'a' },
    ]);
  });

  it('ignores a late copy of a delivery it returned, and takes the redelivery that follows', async () => {
    const t = await setup();
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    t.channel.handle({
      channel: 1,
      method: 'basicNack',
      basicNack: { deliveryTag: 1, multiple: false, requeue: true },
    });
    await t.flush();
    t.channel.core.deliver(t.queue, 'c', 7, true, 0, t.message('a'));
    t.channel.core.deliver(t.queue, 'c', 7, true, 1, t.message('a'));
    expect(t.deliveries()).toEqual([
      { deliveryTag: 1, redelivered: false, body: 'a' },
      { deliveryTag: 2, redelivered: true, body: 'a' },
    ]);
  });

  it('tells the same id of another queue apart', async () => {
    const t = await setup();
    const other = { ...t.queue, groupId: 'g2' } as QueueHandle;
    t.channel.core.deliver(t.queue, 'c', 7, false, 0, t.message('a'));
    t.channel.core.deliver(other, 'c', 7, false, 0, t.message('b'));
    expect(t.deliveries().map((d) => d.body)).toEqual(['a', 'b']);
  });
});
