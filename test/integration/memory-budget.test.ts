import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';

// Over its memory budget the node blocks publishing connections (connection.blocked, and it stops
// reading from them) while consumers keep being served — RabbitMQ's memory alarm, per node.
describe('a node over its memory budget', () => {
  let broker: BrokerProcess;
  beforeAll(async () => {
    // A 1 MiB budget: any running node is over it, so the alarm is raised at the first check.
    broker = await startBroker({ extraArgs: ['--memory-budget', '1'] });
  });
  afterAll(async () => {
    await broker.stop();
    await broker.cleanup();
  });

  it('blocks a publisher and says why, while a consumer still gets its messages', async () => {
    const consumerConn = await amqp.connect(broker.url);
    const cch = await consumerConn.createChannel();
    await cch.assertQueue('budget.q', { durable: false });

    const publisher = await amqp.connect(broker.url);
    const blocked = new Promise<string>((resolve) =>
      publisher.on('blocked', (reason: string) => resolve(reason)),
    );
    const pch = await publisher.createConfirmChannel();
    pch.sendToQueue('budget.q', Buffer.from('first'));
    const reason = await Promise.race([
      blocked,
      new Promise<string>((_, reject) =>
        setTimeout(() => reject(new Error('no blocked event within 5 s')), 5000),
      ),
    ]);
    expect(reason).toMatch(/memory/);

    // The message published before the block is still delivered to the (non-publishing) consumer.
    const got = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('consumer got nothing')), 5000);
      cch
        .consume(
          'budget.q',
          (msg) => {
            if (msg === null) return;
            clearTimeout(timer);
            resolve(msg.content.toString());
          },
          { noAck: true },
        )
        .catch(reject);
    });
    expect(got).toBe('first');
    publisher.on('error', () => undefined);
    await consumerConn.close();
  });
});
