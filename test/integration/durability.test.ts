import * as amqp from '@styx/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

// "A confirm means the data is durable": a broker SIGKILLed and started again on the same data dir
// has every message it confirmed, and unacked ones come back redelivered.
describe('durable queues across SIGKILL', () => {
  const started: BrokerProcess[] = [];
  afterEach(async () => {
    for (const b of started.splice(0)) {
      await b.kill();
      await b.cleanup();
    }
  });

  async function drain(url: string, queue: string, expected: number): Promise<amqp.ConsumeMessage[]> {
    const conn = await amqp.connect(url);
    const ch = await conn.createChannel();
    await ch.prefetch(500);
    const got: amqp.ConsumeMessage[] = [];
    await new Promise<void>((done, fail) => {
      const timer = setTimeout(() => fail(new Error(`only ${got.length}/${expected} consumed`)), 20_000);
      ch.consume(queue, (msg) => {
        if (msg === null) return;
        got.push(msg);
        ch.ack(msg);
        if (got.length === expected) {
          clearTimeout(timer);
          done();
        }
      }).catch(fail);
    });
    await conn.close();
    return got;
  }

  it('keeps 5,000 confirmed 1 KiB messages through SIGKILL and restart', async () => {
    const first = await startBroker();
    started.push(first);
    const conn = await amqp.connect(first.url);
    conn.on('error', () => undefined); // the kill below drops this connection
    const ch = await conn.createConfirmChannel();
    await ch.assertQueue('durable.5k', { durable: true });
    const body = Buffer.alloc(1024, 1);
    for (let i = 0; i < 5000; i++) {
      const b = Buffer.from(body);
      b.writeUInt32BE(i, 0);
      ch.sendToQueue('durable.5k', b, { persistent: true });
    }
    await ch.waitForConfirms();
    await first.kill();

    const second = await startBroker({ dataDir: first.dataDir });
    started.push(second);
    const got = await drain(second.url, 'durable.5k', 5000);
    expect(got.map((m) => m.content.readUInt32BE(0))).toEqual(Array.from({ length: 5000 }, (_, i) => i));
    expect(got.every((m) => m.content.length === 1024)).toBe(true);
  });

  it('keeps every message confirmed before a SIGKILL that lands mid-stream', async () => {
    const first = await startBroker();
    started.push(first);
    const conn = await amqp.connect(first.url);
    conn.on('error', () => undefined);
    const ch = await conn.createConfirmChannel();
    ch.on('error', () => undefined);
    await ch.assertQueue('durable.stream', { durable: true });
    const confirmed = new Set<number>();
    let seq = 0;
    let killed = false;
    const publishing = (async () => {
      while (!killed) {
        const n = seq++;
        const b = Buffer.alloc(1024);
        b.writeUInt32BE(n, 0);
        try {
          ch.sendToQueue('durable.stream', b, { persistent: true }, (err) => {
            if (err === null || err === undefined) confirmed.add(n);
          });
        } catch {
          return;
        }
        if (n % 200 === 199) await new Promise((r) => setImmediate(r));
      }
    })();
    // Kill once a few thousand are confirmed, while publishes are still in flight.
    const deadline = Date.now() + 20_000;
    while (confirmed.size < 3000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await first.kill();
    killed = true;
    await publishing;
    const confirmedAtKill = [...confirmed];
    expect(confirmedAtKill.length).toBeGreaterThanOrEqual(3000);

    const second = await startBroker({ dataDir: first.dataDir });
    started.push(second);
    const check = await amqp.connect(second.url);
    const cch = await check.createChannel();
    const { messageCount } = await cch.checkQueue('durable.stream');
    await check.close();
    const got = await drain(second.url, 'durable.stream', messageCount);
    const ids = got.map((m) => m.content.readUInt32BE(0));
    const present = new Set(ids);
    expect(present.size).toBe(ids.length); // no duplicates
    for (const n of confirmedAtKill) expect(present.has(n)).toBe(true);
  });
});
