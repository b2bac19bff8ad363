import type { BasicProperties } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { Broker, Session } from '../broker/broker.ts';
import { Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { BrokerCounters } from '../metrics/broker-counters.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { StoredMessage } from '../queue/types.ts';
import { ChannelCore } from './channel-core.ts';
import type { ChannelOutput } from './channel-output.ts';

/** What a recording output saw, in order, as short strings. */
type Seen = string[];

/** An output that records every call; a delivery is prepared as `deliver:<tag>:<body>`. */
function recordingOutput(seen: Seen): ChannelOutput<string> {
  return {
    reply: (r) => seen.push(r.method),
    prepareDelivery: (_tag, deliveryTag, _redelivered, message: StoredMessage, _p: BasicProperties) =>
      `deliver:${deliveryTag}:${new TextDecoder().decode(message.body)}`,
    sendDelivery: (prepared) => seen.push(prepared),
    confirm: (seq, multiple, ack) => seen.push(`${ack ? 'ack' : 'nack'}:${seq}:${multiple}`),
    returned: (m) => seen.push(`return:${m.replyCode}`),
    cancelled: (tag) => seen.push(`cancel:${tag}`),
    close: (code) => seen.push(`close:${code}`),
    closed: () => seen.push('closed'),
    connectionError: (err) =>
      seen.push(
        `connection-error:${err instanceof ConnectionError ? `${err.code}:${err.message}` : String(err)}`,
      ),
  };
}

/**
 * A core on a fake broker whose queue delivers to the channel while its consume is applied (as a
 * queue does when it has messages ready), before basic.consume-ok can go out.
 */
function setup() {
  const seen: Seen = [];
  const message: StoredMessage = {
    exchange: '',
    routingKey: 'q',
    properties: {},
    body: new TextEncoder().encode('early'),
    bcc: undefined,
  };
  let core: ChannelCore<string> | undefined;
  const queue = {
    vhost: '/',
    name: 'q',
    groupId: 'g1',
    deliveryCountHeader: false,
    consume: async (_owner: string, tag: string) => {
      core?.deliver(queue, tag, 1, false, 0, message);
      return { type: 'ok' };
    },
    ownerDown: async () => {},
  } as unknown as QueueHandle;
  const broker = {
    queueForUse: () => queue,
    // The queue is known here: nothing to catch up with.
    catchUpForQueue: () => undefined,
    generateName: (prefix: string) => `${prefix}1`,
    deliveryProperties: (_q: QueueHandle, m: StoredMessage) => m.properties,
    consumerCancelled: () => {},
    counters: new BrokerCounters(),
  } as unknown as Broker;
  const logger = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;
  core = new ChannelCore({
    broker,
    session: { vhost: '/', user: 'guest', connectionId: 'n:r.1' } as Session,
    connectionId: 'n:r.1',
    number: 1,
    logger,
    output: recordingOutput(seen),
  });
  return { core, seen };
}

const turn = () => new Promise((resolve) => setTimeout(resolve, 0));

describe('ChannelCore', () => {
  it('holds a delivery prepared before basic.consume-ok and sends it right after, and methods wait behind consume', async () => {
    const { core, seen } = setup();
    core.handle({ method: 'basic.consume', queue: 'q', consumerTag: 'c', noAck: false, exclusive: false });
    core.handle({ method: 'basic.qos', prefetchSize: 0, prefetchCount: 5, global: false });
    await turn();
    expect(seen).toEqual(['basic.consume-ok', 'deliver:1:early', 'basic.qos-ok']);
  });

  it('refuses a close-ok on an open channel with 503, naming the method as the client protocol does', () => {
    const { core, seen } = setup();
    core.handle({ method: 'channel.close-ok', name: 'channelCloseOk' });
    expect(seen).toEqual([
      `connection-error:${Code.COMMAND_INVALID}:method channelCloseOk is not valid from a client on a channel`,
    ]);
  });

  it('answers a client close with close-ok once the queues took back what it held, then is closed', async () => {
    const { core, seen } = setup();
    core.handle({ method: 'basic.consume', queue: 'q', consumerTag: 'c', noAck: false, exclusive: false });
    await turn();
    core.handle({ method: 'channel.close' });
    await turn();
    expect(seen.slice(-2)).toEqual(['channel.close-ok', 'closed']);
    expect(core.isOpen).toBe(false);
  });
});
