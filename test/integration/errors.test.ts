import type { ConsumeMessage } from '@styx/client';
import { describe, expect, it } from 'vitest';
import {
  channelClosed,
  fill,
  getOne,
  Inbox,
  rejectionOf,
  unique,
  useBroker,
  WAIT_MS,
  waitFor,
  withTimeout,
} from './messaging-helpers.ts';

// Error scopes against a real `styx server`: 403/404/405/406 close only the channel they happen
// on; connection errors close the connection (and release what it held); other clients never
// notice. Malformed frames and other raw-protocol faults are covered by bad-input.test.ts.
const { connect, connectTracked } = useBroker();

describe('channel errors close only their channel', () => {
  it('403, 404, 405 and 406 leave the connection, its other channels and other clients working', async () => {
    const conn = await connect();
    const pub = await conn.createConfirmChannel();
    const { queue } = await pub.assertQueue(unique('q.bystander'), { durable: false });
    const bystander = await conn.createChannel();
    const inbox = new Inbox();
    await bystander.consume(queue, inbox.onMessage, { noAck: true });
    const otherClient = await connect();
    const { queue: exclusive } = await (await otherClient.createChannel()).assertQueue('', {
      exclusive: true,
    });

    const cases: [number, (ch: Awaited<ReturnType<typeof conn.createChannel>>) => Promise<unknown>][] = [
      [403, (ch) => ch.assertQueue('amq.reserved')],
      [404, (ch) => ch.checkQueue(unique('missing'))],
      [405, (ch) => ch.consume(exclusive, () => {})],
      [406, (ch) => ch.assertExchange('amq.direct', 'fanout')],
    ];
    for (const [code, op] of cases) {
      const ch = await conn.createChannel();
      const closed = channelClosed(ch);
      expect((await rejectionOf(op(ch), `${code}`)).code).toBe(code);
      expect((await closed)?.code).toBe(code);
    }
    await fill(pub, queue, ['still flowing']);
    await inbox.atLeast(1);
    expect(inbox.bodies()).toEqual(['still flowing']);
    await expect((await otherClient.createChannel()).checkQueue(exclusive)).resolves.toMatchObject({
      queue: exclusive,
    });
  });

  it('a channel error on publish fails that channel’s outstanding confirms only', async () => {
    const conn = await connect();
    const good = await conn.createConfirmChannel();
    const bad = await conn.createConfirmChannel();
    const { queue } = await good.assertQueue('', { exclusive: true });
    const closed = channelClosed(bad);
    const lost = new Promise<Error | null>((resolve) =>
      bad.publish(unique('missing'), '', Buffer.from('x'), {}, (err) => resolve(err)),
    );
    expect((await closed)?.code).toBe(404);
    expect((await withTimeout(lost, WAIT_MS, 'the failed confirm'))?.message).toBe('channel closed');
    good.sendToQueue(queue, Buffer.from('ok'));
    await good.waitForConfirms();
  });
});

describe('connection errors close the connection', () => {
  it('an unknown exchange type is 503: the connection closes and releases what it held', async () => {
    const victim = await connectTracked();
    const bystander = await connectTracked();
    const pub = await bystander.conn.createConfirmChannel();
    const { queue } = await pub.assertQueue(unique('q.victim'), { durable: false });
    await fill(pub, queue, ['held']);
    const holder = await victim.conn.createChannel();
    const inbox = new Inbox();
    await holder.consume(queue, inbox.onMessage);
    const [held] = (await inbox.atLeast(1)) as [ConsumeMessage];
    expect(held.fields.redelivered).toBe(false);
    const { queue: exclusive } = await holder.assertQueue('', { exclusive: true });

    const ch = await victim.conn.createChannel();
    const err = await rejectionOf(ch.assertExchange(unique('x'), 'bogus'));
    expect(err.message).toMatch(/Channel ended|Connection closed/);
    const closeErr = (await withTimeout(victim.closed, WAIT_MS, 'the connection to close')) as
      | (Error & { code?: number })
      | undefined;
    expect(closeErr?.code).toBe(503);
    expect(closeErr?.message).toMatch(/exchange type 'bogus'/);
    expect(victim.errors.map((e) => e.code)).toEqual([503]);
    expect(() => holder.ack(held)).toThrow();

    // The unacked message is back, redelivered; the exclusive queue is gone; the bystander never noticed.
    await waitFor(
      async () => (await pub.checkQueue(queue)).messageCount === 1,
      'the unacked message to return',
    );
    const back = await getOne(pub, queue);
    expect([back.content.toString(), back.fields.redelivered]).toEqual(['held', true]);
    await waitFor(async () => {
      const probe = await bystander.conn.createChannel();
      return probe.checkQueue(exclusive).then(
        () => probe.close().then(() => false),
        (e: { code?: number }) => e.code === 404,
      );
    }, 'the exclusive queue to go');
    expect(bystander.errors).toEqual([]);
  });

  it('reusing a consumer tag on a channel is 530 NOT_ALLOWED and closes the connection', async () => {
    const tracked = await connectTracked();
    const ch = await tracked.conn.createChannel();
    const { queue } = await ch.assertQueue('', { exclusive: true });
    await ch.consume(queue, () => {}, { consumerTag: 'twice' });
    await rejectionOf(ch.consume(queue, () => {}, { consumerTag: 'twice' }));
    const err = (await withTimeout(tracked.closed, WAIT_MS, 'the connection to close')) as
      | (Error & { code?: number })
      | undefined;
    expect(err?.code).toBe(530);
    expect(err?.message).toContain("attempt to reuse consumer tag 'twice'");
  });
});
