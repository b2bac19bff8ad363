import type { ConfirmChannel, Connection, RecoveringConnection } from '@styx/client';
import * as amqp from '@styx/client';
import { ConfirmError } from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

// Client failover against two real `styx server` processes (independent single nodes, not a
// cluster): the node in use is SIGKILLed mid-publish; the SDK must fail the unconfirmed publishes,
// reconnect to the other node, re-run setup, and carry on there.

/** Rejects after `ms` with `what` in the message: every wait in this file is bounded. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

describe('client failover between two broker processes', () => {
  let nodes: BrokerProcess[] = [];
  beforeAll(async () => {
    nodes = await Promise.all([startBroker(), startBroker()]);
  });
  afterAll(async () => {
    for (const node of nodes) {
      await node.kill();
      await node.cleanup();
    }
  });

  it('fails unconfirmed publishes, reconnects to the other node and re-runs setup', async () => {
    const [first, second] = nodes as [BrokerProcess, BrokerProcess];
    const received: string[] = [];
    const setups: Connection[] = [];
    let publisher: ConfirmChannel | null = null;
    const arrived = (body: string): Promise<void> =>
      within(
        new Promise<void>((resolve) => {
          const poll = setInterval(() => {
            if (received.includes(body)) {
              clearInterval(poll);
              resolve();
            }
          }, 10);
        }),
        5000,
        `delivery of ${body}`,
      );

    const conn: RecoveringConnection = await within(
      amqp.connect([first.url, second.url], {
        recover: {
          minDelayMs: 50,
          maxDelayMs: 500,
          maxAttempts: 20,
          setup: async (c) => {
            setups.push(c);
            const ch = await c.createConfirmChannel();
            await ch.assertQueue('failover.q', { durable: true });
            const sub = await c.createChannel();
            await sub.consume('failover.q', (msg) => {
              if (msg === null) return;
              received.push(msg.content.toString());
              sub.ack(msg);
            });
            publisher = ch;
          },
        },
      }),
      10_000,
      'connect',
    );
    const events: string[] = [];
    conn.on('disconnected', () => events.push('disconnected'));
    const recovered = new Promise<number>((resolve) => conn.once('recovered', (_c, index) => resolve(index)));
    try {
      expect(conn.urlIndex).toBe(0);
      expect(setups).toHaveLength(1);
      const before = publisher as unknown as ConfirmChannel;
      before.sendToQueue('failover.q', Buffer.from('before'));
      await within(before.waitForConfirms(), 5000, 'confirm before the kill');
      await arrived('before');

      // SIGKILL the node in use, then publish before the client can notice: these publishes can
      // never be confirmed, and must be reported as failed, not left hanging nor taken as acked.
      first.child.kill('SIGKILL');
      const outcomes: Promise<Error | null>[] = [];
      for (let i = 0; i < 20; i++) {
        outcomes.push(
          new Promise((resolve) =>
            before.sendToQueue('failover.q', Buffer.from(`lost-${i}`), {}, (err) => resolve(err)),
          ),
        );
      }
      const results = await within(Promise.all(outcomes), 5000, 'confirm callbacks after the kill');
      for (const err of results) {
        expect(err).toBeInstanceOf(ConfirmError);
        expect((err as ConfirmError).reason).toBe('channel-closed');
      }
      await expect(before.waitForConfirms()).rejects.toBeInstanceOf(ConfirmError);

      const started = Date.now();
      expect(await within(recovered, 10_000, 'recovery')).toBe(1);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(events).toEqual(['disconnected']);
      expect(conn.urlIndex).toBe(1);
      expect(setups).toHaveLength(2);
      expect(conn.connection).toBe(setups[1]);

      const after = publisher as unknown as ConfirmChannel;
      expect(after).not.toBe(before);
      after.sendToQueue('failover.q', Buffer.from('after'));
      await within(after.waitForConfirms(), 5000, 'confirm after recovery');
      await arrived('after');
      expect(second.child.exitCode).toBeNull();
    } finally {
      await conn.close();
    }
  }, 30_000);
});
