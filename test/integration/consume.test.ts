import type { Channel, ConfirmChannel, Connection, ConsumeMessage } from '@styx/client';
import { GlobalPrefetchError } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  drain,
  fill,
  getOne,
  Inbox,
  rejectionOf,
  unique,
  useBroker,
  waitFor,
} from './messaging-helpers.ts';

// Consuming against a real `styx server`: consumers (tags, noAck, exclusive), cancel from either
// side, per-consumer prefetch, delivery tags and the redelivered flag, ack / nack / reject with
// `multiple`, recover, get, round-robin, and unacked messages coming back when a channel or
// connection closes.
const { connect } = useBroker();

interface Fixture {
  conn: Connection;
  /** The publishing channel (confirm mode). */
  pub: ConfirmChannel;
  queue: string;
}

async function fixture(bodies: readonly string[] = []): Promise<Fixture> {
  const conn = await connect();
  const pub = await conn.createConfirmChannel();
  const { queue } = await pub.assertQueue(unique('q.consume'), { durable: false });
  if (bodies.length > 0) await fill(pub, queue, bodies);
  return { conn, pub, queue };
}

const range = (n: number, prefix = 'm'): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/** Body and redelivered flag of each message, for compact assertions. */
function seen(messages: readonly ConsumeMessage[]): [string, boolean][] {
  return messages.map((m) => [m.content.toString(), m.fields.redelivered]);
}

/**
 * A barrier on `ch`'s connection: a passive declare's reply comes after every delivery the broker
 * produced before it, so the ready count it reports and the deliveries received are consistent.
 */
function readyCount(ch: Channel, queue: string): Promise<number> {
  return ch.checkQueue(queue).then((ok) => ok.messageCount);
}

describe('consumers', () => {
  it('deliver with the consumer tag, increasing delivery tags and redelivered false', async () => {
    const { conn, pub, queue } = await fixture(range(3));
    const ch = await conn.createChannel();
    const inbox = new Inbox();
    expect(await ch.consume(queue, inbox.onMessage, { consumerTag: 'my-tag' })).toEqual({
      consumerTag: 'my-tag',
    });
    const msgs = await inbox.atLeast(3);
    expect(msgs.map((m) => m.fields)).toEqual(
      [1, 2, 3].map((deliveryTag) => ({
        consumerTag: 'my-tag',
        deliveryTag,
        redelivered: false,
        exchange: '',
        routingKey: queue,
      })),
    );
    expect(inbox.bodies()).toEqual(['m0', 'm1', 'm2']);
    // The server names a consumer when the client does not.
    const other = await ch.consume(queue, () => {});
    expect(other.consumerTag).toMatch(/^amq\.ctag-/);
    await ch.cancel(other.consumerTag);
    await ch.cancel('my-tag');
    // Delivery tags are per channel, shared by every consumer and get on it.
    await fill(pub, queue, ['next']);
    const got = await getOne(ch, queue, false);
    expect([got.content.toString(), got.fields.deliveryTag]).toEqual(['next', 4]);
    ch.ackAll();
  });

  it('noAck deliveries are settled on sending: closing the channel brings nothing back', async () => {
    const { conn, pub, queue } = await fixture(range(3));
    const ch = await conn.createChannel();
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    await inbox.atLeast(3);
    await ch.close();
    expect(await readyCount(pub, queue)).toBe(0);
  });

  it('an exclusive consumer locks out others (403), and cannot join a queue with consumers', async () => {
    const { conn, queue } = await fixture();
    const ch = await conn.createChannel();
    await ch.consume(queue, () => {}, { exclusive: true, consumerTag: 'sole' });
    const second = await conn.createChannel();
    const err = await rejectionOf(second.consume(queue, () => {}));
    expect(err.code).toBe(403);
    expect(err.message).toContain('exclusive');
    await ch.cancel('sole');

    await ch.consume(queue, () => {}, { consumerTag: 'shared' });
    const third = await conn.createChannel();
    expect((await rejectionOf(third.consume(queue, () => {}, { exclusive: true }))).code).toBe(403);

    // An exclusive consumer's claim ends with its channel.
    await ch.close();
    const fourth = await conn.createChannel();
    await fourth.consume(queue, () => {}, { exclusive: true });
    await fourth.close();
    const fifth = await conn.createChannel();
    await expect(fifth.consume(queue, () => {})).resolves.toMatchObject({ consumerTag: expect.any(String) });
  });

  it('cancelling an unknown consumer tag is answered with cancel-ok', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    expect(await ch.cancel('never-existed')).toEqual({ consumerTag: 'never-existed' });
    await expect(ch.checkExchange('amq.direct')).resolves.toEqual({});
  });

  it('consuming from a missing queue is 404', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    expect((await rejectionOf(ch.consume(unique('missing'), () => {}))).code).toBe(404);
  });

  it('cancel stops deliveries; messages already delivered can still be acked', async () => {
    const { conn, pub, queue } = await fixture(['before']);
    const ch = await conn.createChannel();
    const inbox = new Inbox();
    const { consumerTag } = await ch.consume(queue, inbox.onMessage);
    const [first] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect(await ch.cancel(consumerTag)).toEqual({ consumerTag });
    await fill(pub, queue, ['after']);
    expect(await readyCount(ch, queue)).toBe(1);
    expect(inbox.bodies()).toEqual(['before']);
    ch.ack(first);
    await ch.close();
    // The ack counted: only 'after' is left, and not redelivered.
    const left = await getOne(pub, queue);
    expect([left.content.toString(), left.fields.redelivered]).toEqual(['after', false]);
    expect(await drain(pub, queue)).toEqual([]);
  });

  it('deleting the queue cancels its consumers from the server side', async () => {
    const { conn, queue } = await fixture(['held']);
    const ch = await conn.createChannel();
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage);
    const [held] = (await inbox.atLeast(1)) as [ConsumeMessage];
    const admin = await (await connect()).createChannel();
    expect(await admin.deleteQueue(queue)).toEqual({ messageCount: 0 });
    await inbox.cancellation();
    // Acking a delivery from the deleted queue is harmless, and the channel stays open.
    ch.ack(held);
    await expect(ch.checkExchange('amq.direct')).resolves.toEqual({});
    expect((await rejectionOf(ch.checkQueue(queue))).code).toBe(404);
  });
});

describe('prefetch', () => {
  it('prefetch(1) with two consumers round-robins, and credit stops delivery until an ack', async () => {
    const { conn, pub, queue } = await fixture();
    const ch = await conn.createChannel();
    await ch.prefetch(1);
    const a = new Inbox();
    const b = new Inbox();
    await ch.consume(queue, a.onMessage, { consumerTag: 'a' });
    await ch.consume(queue, b.onMessage, { consumerTag: 'b' });
    await fill(pub, queue, range(5));
    expect(await readyCount(ch, queue)).toBe(3);
    expect([a.bodies(), b.bodies()]).toEqual([['m0'], ['m1']]);

    ch.ack(a.messages[0] as ConsumeMessage);
    await a.atLeast(2);
    expect(await readyCount(ch, queue)).toBe(2);
    expect([a.bodies(), b.bodies()]).toEqual([['m0', 'm2'], ['m1']]);

    ch.ack(b.messages[0] as ConsumeMessage);
    ch.ack(a.messages[1] as ConsumeMessage);
    await b.atLeast(2);
    await a.atLeast(3);
    expect([a.bodies(), b.bodies()]).toEqual([
      ['m0', 'm2', 'm4'],
      ['m1', 'm3'],
    ]);
  });

  it('does not limit noAck consumers', async () => {
    const { conn, queue } = await fixture(range(5));
    const ch = await conn.createChannel();
    await ch.prefetch(1);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    await inbox.atLeast(5);
    expect(inbox.bodies()).toEqual(range(5));
  });

  it('is per consumer: two consumers on one channel with prefetch(2) hold four messages', async () => {
    const { conn, queue } = await fixture(range(6));
    const ch = await conn.createChannel();
    await ch.prefetch(2);
    const a = new Inbox();
    const b = new Inbox();
    await ch.consume(queue, a.onMessage);
    await ch.consume(queue, b.onMessage);
    expect(await readyCount(ch, queue)).toBe(2);
    expect(a.messages.length + b.messages.length).toBe(4);
    expect([a.messages.length, b.messages.length]).toEqual([2, 2]);
  });

  it('applies to consumers started after it, not to earlier ones', async () => {
    const { conn, queue } = await fixture(range(4));
    const ch = await conn.createChannel();
    await ch.prefetch(1);
    const limited = new Inbox();
    await ch.consume(queue, limited.onMessage);
    await ch.prefetch(0);
    const unlimited = new Inbox();
    await ch.consume(queue, unlimited.onMessage);
    expect(await readyCount(ch, queue)).toBe(0);
    expect([limited.messages.length, unlimited.messages.length]).toEqual([1, 3]);
  });

  it('channel-wide (global) prefetch is refused clearly, and the channel stays usable', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const err = await rejectionOf(ch.prefetch(10, true));
    expect(err).toBeInstanceOf(GlobalPrefetchError);
    expect(err.code).toBe(540);
    expect(err.message).toContain('global');
    await expect(ch.prefetch(10)).resolves.toEqual({});
  });
});

describe('acknowledgements', () => {
  async function consumed(n: number): Promise<{ ch: Channel; inbox: Inbox; fx: Fixture }> {
    const fx = await fixture(range(n));
    const ch = await fx.conn.createChannel();
    const inbox = new Inbox();
    await ch.consume(fx.queue, inbox.onMessage);
    await inbox.atLeast(n);
    return { ch, inbox, fx };
  }

  it('ack with multiple settles every earlier delivery; the rest come back on close', async () => {
    const { ch, inbox, fx } = await consumed(5);
    ch.ack(inbox.messages[2] as ConsumeMessage, true);
    expect(await readyCount(ch, fx.queue)).toBe(0);
    await ch.close();
    const back = await drainWithFlags(fx.pub, fx.queue);
    expect(back).toEqual([
      ['m3', true],
      ['m4', true],
    ]);
  });

  it('nack with multiple and requeue redelivers, marked redelivered, in order', async () => {
    const { ch, inbox } = await consumed(3);
    ch.nack(inbox.messages[2] as ConsumeMessage, true, true);
    const again = (await inbox.atLeast(6)).slice(3);
    expect(seen(again)).toEqual([
      ['m0', true],
      ['m1', true],
      ['m2', true],
    ]);
    expect(again.map((m) => m.fields.deliveryTag)).toEqual([4, 5, 6]);
    ch.ackAll();
  });

  it('nack and reject without requeue drop the message; reject with requeue redelivers', async () => {
    const { ch, inbox, fx } = await consumed(3);
    ch.nack(inbox.messages[0] as ConsumeMessage, false, false);
    ch.reject(inbox.messages[1] as ConsumeMessage, false);
    ch.reject(inbox.messages[2] as ConsumeMessage, true);
    const [again] = (await inbox.atLeast(4)).slice(3) as [ConsumeMessage];
    expect(seen([again])).toEqual([['m2', true]]);
    ch.ack(again);
    await ch.close();
    expect(await drain(fx.pub, fx.queue)).toEqual([]);
  });

  it('nackAll(false) drops everything outstanding; ackAll settles everything', async () => {
    const { ch, inbox, fx } = await consumed(2);
    ch.nackAll(false);
    await fill(fx.pub, fx.queue, ['x', 'y']);
    await inbox.atLeast(4);
    ch.ackAll();
    await ch.close();
    expect(await drain(fx.pub, fx.queue)).toEqual([]);
  });

  it('acking an unknown or already-acked delivery tag is 406 and closes the channel', async () => {
    const { ch, inbox } = await consumed(1);
    const closed = channelClosed(ch);
    const msg = inbox.messages[0] as ConsumeMessage;
    ch.ack(msg);
    ch.ack(msg);
    const err = await closed;
    expect(err?.code).toBe(406);
    expect(err?.message).toContain('unknown delivery tag 1');
  });

  it('a channel closed by a channel error returns its unacked messages, redelivered', async () => {
    const { ch, inbox, fx } = await consumed(2);
    const closed = channelClosed(ch);
    // A delivery tag the broker never handed out.
    const msg = inbox.messages[1] as ConsumeMessage;
    ch.ack({ ...msg, fields: { ...msg.fields, deliveryTag: 99 } });
    expect((await closed)?.code).toBe(406);
    expect(await drainWithFlags(fx.pub, fx.queue)).toEqual([
      ['m0', true],
      ['m1', true],
    ]);
  });

  it('recover redelivers every unacked message of the channel, marked redelivered', async () => {
    const { ch, inbox } = await consumed(2);
    ch.ack(inbox.messages[0] as ConsumeMessage);
    await ch.recover();
    const [again] = (await inbox.atLeast(3)).slice(2) as [ConsumeMessage];
    expect(seen([again])).toEqual([['m1', true]]);
    expect(again.fields.deliveryTag).toBe(3);
    ch.ack(again);
  });
});

describe('basic.get', () => {
  it('returns the head with the count of messages left, or false when empty', async () => {
    const { conn, queue } = await fixture(['a', 'b', 'c']);
    const ch = await conn.createChannel();
    const first = await getOne(ch, queue, false);
    expect(first.fields).toEqual({
      deliveryTag: 1,
      redelivered: false,
      exchange: '',
      routingKey: queue,
      messageCount: 2,
    });
    const second = await getOne(ch, queue, true);
    expect([second.content.toString(), second.fields.messageCount]).toEqual(['b', 1]);
    ch.ack(first);
    const third = await getOne(ch, queue, false);
    expect([third.content.toString(), third.fields.messageCount, third.fields.deliveryTag]).toEqual([
      'c',
      0,
      3,
    ]);
    expect(await ch.get(queue)).toBe(false);
    // An unacked get comes back, redelivered, when rejected.
    ch.reject(third, true);
    const again = await getOne(ch, queue, true);
    expect([again.content.toString(), again.fields.redelivered]).toEqual(['c', true]);
    expect(await ch.get(queue, { noAck: true })).toBe(false);
  });
});

describe('round-robin and closing', () => {
  it('round-robins among consumers on different connections', async () => {
    const { queue, pub } = await fixture();
    const inboxes = [new Inbox(), new Inbox()];
    for (const inbox of inboxes) {
      const ch = await (await connect()).createChannel();
      await ch.consume(queue, inbox.onMessage, { noAck: true });
    }
    await fill(pub, queue, range(10));
    await inboxes[0]?.atLeast(5);
    await inboxes[1]?.atLeast(5);
    expect(inboxes.map((i) => i.bodies())).toEqual([
      ['m0', 'm2', 'm4', 'm6', 'm8'],
      ['m1', 'm3', 'm5', 'm7', 'm9'],
    ]);
  });

  it('closing a channel returns its unacked messages, redelivered, in their original order', async () => {
    const { conn, pub, queue } = await fixture(range(4));
    const ch = await conn.createChannel();
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage);
    await inbox.atLeast(4);
    ch.ack(inbox.messages[1] as ConsumeMessage);
    await ch.close();
    expect(await drainWithFlags(pub, queue)).toEqual([
      ['m0', true],
      ['m2', true],
      ['m3', true],
    ]);
  });

  it('closing a connection returns its unacked messages (consumed and got), redelivered', async () => {
    const { pub, queue } = await fixture(range(3));
    const consumerConn = await connect();
    const ch = await consumerConn.createChannel();
    await ch.prefetch(2);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { consumerTag: 'c' });
    await inbox.atLeast(2);
    await ch.cancel('c');
    const other = await consumerConn.createChannel();
    await getOne(other, queue, false);
    await consumerConn.close();
    await waitFor(async () => (await readyCount(pub, queue)) === 3, 'the unacked messages to come back');
    const back = await drainWithFlags(pub, queue);
    expect(back.map(([body]) => body).sort()).toEqual(['m0', 'm1', 'm2']);
    expect(back.every(([, redelivered]) => redelivered)).toBe(true);
  });
});

async function drainWithFlags(ch: Channel, queue: string): Promise<[string, boolean][]> {
  const out: [string, boolean][] = [];
  for (;;) {
    const msg = await ch.get(queue, { noAck: true });
    if (msg === false) return out;
    out.push([msg.content.toString(), msg.fields.redelivered]);
  }
}
