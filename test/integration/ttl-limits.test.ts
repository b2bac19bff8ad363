import type { Channel, ConsumeMessage } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  confirmOutcome,
  drain,
  fill,
  getOne,
  Inbox,
  rejectionOf,
  sleep,
  unique,
  useBroker,
  waitFor,
} from './messaging-helpers.ts';

// Message TTL, queue expiry and length limits against a real `styx server`, with RabbitMQ's
// meaning. These queues have no dead-letter exchange, so what expires or overflows is dropped (counted);
// dead-lettering itself is tested in dead-lettering.test.ts.
// TTLs here are short; waits poll with a generous bound, so a slow machine is slower, not flaky.
const { connect } = useBroker();

/** A short TTL, ms: long enough to publish a few messages first, short enough to keep tests fast. */
const SHORT_TTL = 150;

async function readyCount(ch: Channel, queue: string): Promise<number> {
  return (await ch.checkQueue(queue)).messageCount;
}

async function untilReady(ch: Channel, queue: string, count: number, what: string): Promise<void> {
  await waitFor(async () => (await readyCount(ch, queue)) === count, what);
}

describe('message TTL', () => {
  it('the effective TTL is the smaller of x-message-ttl and the message expiration', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue: longQueue } = await ch.assertQueue(unique('q.ttl.long'), {
      durable: false,
      messageTtl: 60_000,
    });
    const { queue: shortQueue } = await ch.assertQueue(unique('q.ttl.short'), {
      durable: false,
      messageTtl: SHORT_TTL,
    });
    await fill(ch, longQueue, ['expiring'], { expiration: SHORT_TTL });
    await fill(ch, longQueue, ['kept']);
    await fill(ch, shortQueue, ['queue ttl wins'], { expiration: 60_000 });
    await fill(ch, shortQueue, ['queue ttl only']);
    await untilReady(ch, longQueue, 1, 'the short per-message TTL to expire');
    await untilReady(ch, shortQueue, 0, 'the short queue TTL to expire');
    const kept = await getOne(ch, longQueue);
    expect(kept.content.toString()).toBe('kept');
    expect(await drain(ch, shortQueue)).toEqual([]);
  });

  it('a message expires on time wherever it sits: behind a long-lived head, or returned to the queue', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ttl.middle'), { durable: false });
    await fill(ch, queue, ['returned'], { expiration: SHORT_TTL * 2 });
    await fill(ch, queue, ['long head'], { expiration: 60_000 });
    await fill(ch, queue, ['short in the middle'], { expiration: SHORT_TTL });
    await fill(ch, queue, ['no ttl']);
    // Take the first and give it back: it now waits in the returned list, ahead of everything.
    const taken = await getOne(ch, queue, false);
    ch.reject(taken, true);
    await untilReady(ch, queue, 2, 'both short-lived messages to expire');
    expect(await drain(ch, queue)).toEqual(['long head', 'no ttl']);
  });

  it('expiration 0 reaches a waiting consumer, and is dropped at once when none waits', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ttl.zero'), { durable: false });
    await fill(ch, queue, ['nobody waits'], { expiration: 0 });
    expect(await ch.get(queue, { noAck: true })).toBe(false);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    await fill(ch, queue, ['delivered'], { expiration: '0' });
    const [msg] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect([msg.content.toString(), msg.properties.expiration]).toEqual(['delivered', '0']);
  });

  it('only ready messages expire: an unacked one expires when it comes back, at once if overdue', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ttl.unacked'), {
      durable: false,
      messageTtl: SHORT_TTL,
    });
    await fill(ch, queue, ['held by get', 'held by consumer', 'ready']);
    const byGet = await getOne(ch, queue, false);
    const consumerCh = await conn.createChannel();
    await consumerCh.prefetch(1);
    const inbox = new Inbox();
    await consumerCh.consume(queue, inbox.onMessage);
    const [byConsumer] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect([byGet.content.toString(), byConsumer.content.toString()]).toEqual([
      'held by get',
      'held by consumer',
    ]);
    // 'ready' was published after the held ones with the same TTL: once it is gone, theirs has passed.
    await untilReady(ch, queue, 0, 'the ready message to expire');
    // Held messages were not expired under their holders: each goes only when it comes back.
    ch.reject(byGet, true);
    expect(await ch.get(queue)).toBe(false);
    await consumerCh.close();
    expect(await readyCount(ch, queue)).toBe(0);
    expect(await ch.get(queue)).toBe(false);
  });

  it('an unacked message returned before its TTL is back, with the rest of its TTL', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ttl.back'), { durable: false });
    await fill(ch, queue, ['long'], { expiration: 60_000 });
    const held = await getOne(ch, queue, false);
    ch.nack(held, false, true);
    const back = await getOne(ch, queue);
    expect([back.content.toString(), back.fields.redelivered, back.properties.expiration]).toEqual([
      'long',
      true,
      '60000',
    ]);
  });

  it('an invalid expiration is 406 and closes the channel; limits 0 and 2^32-1 are valid', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.ttl.invalid'), { durable: false });
    for (const expiration of ['soon', '-1', '1.5', '4294967296', '10 ']) {
      const pub = await conn.createChannel();
      const closed = channelClosed(pub);
      pub.sendToQueue(queue, Buffer.from('x'), { expiration });
      const err = await closed;
      expect(err?.code, expiration).toBe(406);
      expect(err?.message, expiration).toContain(`invalid expiration '${expiration}'`);
    }
    await fill(ch, queue, ['max'], { expiration: '4294967295' });
    expect(await drain(ch, queue)).toEqual(['max']);
  });
});

describe('x-expires', () => {
  it('deletes a queue left unused, but not while it has a consumer', async () => {
    const conn = await connect();
    const ch = await conn.createChannel();
    const { queue: idle } = await ch.assertQueue(unique('q.expires.idle'), {
      durable: false,
      expires: SHORT_TTL,
    });
    const { queue: used } = await ch.assertQueue(unique('q.expires.used'), {
      durable: false,
      expires: SHORT_TTL,
    });
    const { consumerTag } = await ch.consume(used, () => {}, { noAck: true });
    // Probe with mandatory publishes: publishing is not a use (a passive declare would be, and
    // would restart the expiry clock), and an unroutable mandatory message comes back.
    const probe = await conn.createConfirmChannel();
    const returned = new Set<string>();
    probe.on('return', (msg) => returned.add(msg.fields.routingKey));
    const gone = async (queue: string): Promise<boolean> => {
      probe.sendToQueue(queue, Buffer.from('probe'), { mandatory: true });
      await probe.waitForConfirms();
      return returned.has(queue);
    };
    await waitFor(() => gone(idle), 'the unused queue to expire');
    // Several expiry periods later the consumed queue is still there.
    await sleep(SHORT_TTL * 3);
    expect(await gone(used)).toBe(false);
    await ch.cancel(consumerTag);
    await waitFor(() => gone(used), 'the queue to expire once its consumer left');
    const check = await conn.createChannel();
    expect((await rejectionOf(check.checkQueue(used))).code).toBe(404);
  });
});

describe('length limits', () => {
  it('x-max-length with drop-head keeps the newest messages', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.maxlen'), { durable: false, maxLength: 3 });
    await fill(ch, queue, ['m0', 'm1', 'm2', 'm3', 'm4']);
    expect(await drain(ch, queue)).toEqual(['m2', 'm3', 'm4']);
  });

  it('x-max-length counts ready messages only, not unacked ones', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.maxlen.ready'), { durable: false, maxLength: 2 });
    await fill(ch, queue, ['m0', 'm1']);
    const consumerCh = await conn.createChannel();
    await consumerCh.prefetch(2);
    const inbox = new Inbox();
    await consumerCh.consume(queue, inbox.onMessage);
    await inbox.atLeast(2);
    await fill(ch, queue, ['m2', 'm3', 'm4']);
    expect(await readyCount(ch, queue)).toBe(2);
    expect(await drain(ch, queue)).toEqual(['m3', 'm4']);
    expect(inbox.bodies()).toEqual(['m0', 'm1']);
  });

  it('x-max-length 0 keeps nothing ready, but a waiting consumer still gets each message', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.maxlen.zero'), { durable: false, maxLength: 0 });
    await fill(ch, queue, ['dropped']);
    expect(await ch.get(queue)).toBe(false);
    const inbox = new Inbox();
    await ch.consume(queue, inbox.onMessage, { noAck: true });
    await fill(ch, queue, ['passed through']);
    await inbox.atLeast(1);
    expect(inbox.bodies()).toEqual(['passed through']);
  });

  it('x-max-length-bytes limits the body bytes of ready messages', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.maxbytes'), {
      durable: false,
      arguments: { 'x-max-length-bytes': 10 },
    });
    await fill(ch, queue, ['aaaa', 'bbbb', 'cccc', '']);
    expect(await drain(ch, queue)).toEqual(['bbbb', 'cccc', '']);
  });

  it('reject-publish refuses (nacks) what would go past either limit, counting ready messages', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue: bytes } = await ch.assertQueue(unique('q.maxbytes.reject'), {
      durable: false,
      overflow: 'reject-publish',
      arguments: { 'x-max-length-bytes': 8 },
    });
    expect(await confirmOutcome(ch, '', bytes, 'aaaa')).toBe('ack');
    expect(await confirmOutcome(ch, '', bytes, 'bbbbb')).toBe('nack');
    expect(await confirmOutcome(ch, '', bytes, 'cccc')).toBe('ack');
    expect(await drain(ch, bytes)).toEqual(['aaaa', 'cccc']);

    const { queue: count } = await ch.assertQueue(unique('q.maxlen.reject'), {
      durable: false,
      overflow: 'reject-publish',
      maxLength: 1,
    });
    expect(await confirmOutcome(ch, '', count, 'm0')).toBe('ack');
    const held = await getOne(ch, count, false);
    expect(await confirmOutcome(ch, '', count, 'm1')).toBe('ack');
    expect(await confirmOutcome(ch, '', count, 'm2')).toBe('nack');
    ch.ack(held);
    expect(await drain(ch, count)).toEqual(['m1']);
  });

  it('reject-publish-dlx refuses like reject-publish', async () => {
    const conn = await connect();
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('q.maxlen.dlx'), {
      durable: false,
      overflow: 'reject-publish-dlx',
      maxLength: 2,
    });
    const outcomes = [];
    for (const body of ['m0', 'm1', 'm2']) outcomes.push(await confirmOutcome(ch, '', queue, body));
    expect(outcomes).toEqual(['ack', 'ack', 'nack']);
    expect(await drain(ch, queue)).toEqual(['m0', 'm1']);
    const check = await conn.createChannel();
    expect((await rejectionOf(check.assertQueue(queue, { durable: false, maxLength: 3 }))).code).toBe(406);
  });
});
