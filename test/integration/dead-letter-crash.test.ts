import * as amqp from '@styx/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

// At-least-once dead-lettering across a SIGKILL that lands mid-transfer: every rejected message
// reaches the dead-letter queue exactly once (by message id), none is lost and none duplicated —
// the source re-sends what it had not settled, and the target drops what it already had.
describe('at-least-once hand-off with the node SIGKILLed mid-transfer', () => {
  const started: BrokerProcess[] = [];
  afterEach(async () => {
    for (const b of started.splice(0)) {
      await b.kill();
      await b.cleanup();
    }
  });

  const TOTAL = 2000;

  async function rejectAll(url: string, queue: string, stopAfter: number | undefined): Promise<number> {
    const conn = await amqp.connect(url);
    conn.on('error', () => undefined);
    const ch = await conn.createChannel();
    ch.on('error', () => undefined);
    await ch.prefetch(200);
    let rejected = 0;
    await new Promise<void>((done) => {
      const timer = setTimeout(done, 20_000);
      ch.consume(queue, (msg) => {
        if (msg === null) return;
        try {
          ch.reject(msg, false);
        } catch {
          return; // the connection is gone (killed)
        }
        rejected += 1;
        if (stopAfter !== undefined && rejected >= stopAfter) {
          clearTimeout(timer);
          done();
        }
      }).catch(() => done());
      conn.on('close', () => {
        clearTimeout(timer);
        done();
      });
    });
    if (stopAfter === undefined) await conn.close().catch(() => undefined);
    return rejected;
  }

  async function count(url: string, queue: string): Promise<number> {
    const conn = await amqp.connect(url);
    const ch = await conn.createChannel();
    const { messageCount } = await ch.checkQueue(queue);
    await conn.close();
    return messageCount;
  }

  it('delivers every rejected message to the DLQ exactly once', async () => {
    const first = await startBroker();
    started.push(first);
    const setup = await amqp.connect(first.url);
    setup.on('error', () => undefined);
    const ch = await setup.createConfirmChannel();
    ch.on('error', () => undefined);
    await ch.assertExchange('crash.dlx', 'fanout', { durable: true });
    await ch.assertQueue('crash.dlq', { durable: true });
    await ch.bindQueue('crash.dlq', 'crash.dlx', '');
    await ch.assertQueue('crash.src', {
      durable: true,
      arguments: { 'x-dead-letter-exchange': 'crash.dlx', 'x-dead-letter-strategy': 'at-least-once' },
    });
    for (let i = 0; i < TOTAL; i++)
      ch.sendToQueue('crash.src', Buffer.from(`m${i}`), { persistent: true, messageId: String(i) });
    await ch.waitForConfirms();

    // Reject half, then kill the node while rejections and hand-offs are in flight.
    const rejecting = rejectAll(first.url, 'crash.src', TOTAL / 2);
    await rejecting;
    await first.kill();

    const second = await startBroker({ dataDir: first.dataDir });
    started.push(second);
    // Whatever was not rejected (or whose reject did not commit) comes back: reject it now.
    void rejectAll(second.url, 'crash.src', undefined);
    const deadline = Date.now() + 30_000;
    let arrived = 0;
    while (Date.now() < deadline) {
      arrived = await count(second.url, 'crash.dlq');
      if (arrived >= TOTAL) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    // Give a duplicate the chance to show up, had dedupe failed.
    await new Promise((r) => setTimeout(r, 500));

    const drain = await amqp.connect(second.url);
    const dch = await drain.createChannel();
    const ids: string[] = [];
    for (;;) {
      const msg = await dch.get('crash.dlq', { noAck: true });
      if (msg === false) break;
      ids.push(String(msg.properties.messageId));
    }
    await drain.close();
    const distinct = new Set(ids);
    expect(distinct.size).toBe(ids.length); // no duplicates
    expect(distinct.size).toBe(TOTAL); // none lost
    expect(await count(second.url, 'crash.src')).toBe(0);
  }, 90_000);
});
