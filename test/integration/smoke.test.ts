import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

// The first-run experience, against a real `styx server` process: the amqplib-shaped script the
// single-node issue is accepted with.
describe('a single broker process', () => {
  let broker: BrokerProcess;
  beforeAll(async () => {
    broker = await startBroker();
  });
  afterAll(async () => {
    await broker.stop();
    await broker.cleanup();
  });

  it('publishes 10,000 messages of 1 KiB with confirms and consumes them in order with prefetch 100', async () => {
    const conn = await amqp.connect(broker.url);
    const ch = await conn.createConfirmChannel();
    await ch.assertExchange('smoke.direct', 'direct', { durable: true });
    const { queue } = await ch.assertQueue('smoke.q', { durable: true });
    await ch.bindQueue(queue, 'smoke.direct', 'smoke');
    const body = Buffer.alloc(1024, 7);
    const total = 10_000;
    for (let i = 0; i < total; i++) {
      body.writeUInt32BE(i, 0);
      ch.publish('smoke.direct', 'smoke', Buffer.from(body), { persistent: true });
      if (i % 1000 === 999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    expect((await ch.checkQueue(queue)).messageCount).toBe(total);

    const consumer = await conn.createChannel();
    await consumer.prefetch(100);
    const seen: number[] = [];
    await new Promise<void>((done, fail) => {
      consumer
        .consume(queue, (msg) => {
          if (msg === null) return fail(new Error('cancelled by server'));
          seen.push(msg.content.readUInt32BE(0));
          expect(msg.content.length).toBe(1024);
          consumer.ack(msg);
          if (seen.length === total) done();
        })
        .catch(fail);
    });
    expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
    await consumer.close();
    const after = await ch.checkQueue(queue);
    expect(after.messageCount).toBe(0);
    await conn.close();
  });

  it('expires 100 short-TTL messages behind a long-TTL one within a second, untouched', async () => {
    const conn = await amqp.connect(broker.url);
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue('smoke.ttl', { durable: false });
    ch.sendToQueue(queue, Buffer.from('long'), { expiration: 60_000 });
    const started = Date.now();
    for (let i = 0; i < 100; i++) ch.sendToQueue(queue, Buffer.from(`short ${i}`), { expiration: '50' });
    // Every publish was taken (a nack would reject); the short ones may already be expiring.
    await ch.waitForConfirms();
    await new Promise((r) => setTimeout(r, Math.max(0, 1000 - (Date.now() - started))));
    expect((await ch.checkQueue(queue)).messageCount).toBe(1);
    const msg = await ch.get(queue, { noAck: true });
    expect(msg === false ? 'empty' : msg.content.toString()).toBe('long');
    await conn.close();
  });
});
