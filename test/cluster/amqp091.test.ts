// AMQP 0-9-1 on every node of a three-node cluster: amqplib, connected to a node that does not lead
// the queue, publishes with confirms and consumes, as it would on the leader (issue 27 item 2).
import type { ChannelModel, ConsumeMessage } from 'amqplib';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/broker-process.ts';
import type { QueueJson } from '../support/cluster-processes.ts';
import { managementApi, TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

describe('AMQP 0-9-1 through a node that does not lead the queue', () => {
  let cluster: TestCluster;
  const amqpPorts: Record<string, number> = {};
  const open: ChannelModel[] = [];

  beforeAll(async () => {
    for (const name of ['n1', 'n2', 'n3']) amqpPorts[name] = await freePort();
    cluster = await TestCluster.start(3, {
      nodeArgs: Object.fromEntries(
        Object.entries(amqpPorts).map(([name, port]) => [name, ['--amqp-port', String(port)]]),
      ),
    });
  }, 180_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  });

  it('publishes with confirms and consumes every message, in order', async () => {
    const sdk = await cluster.connect('n1');
    const setup = await sdk.createChannel();
    await setup.assertQueue('amqp-cluster', { durable: true });
    let leader: string | undefined;
    await eventually('the queue has a leader', async () => {
      const q = await managementApi<QueueJson>(
        cluster.node('n1').broker.managementUrl,
        '/api/queues/%2F/amqp-cluster',
      );
      leader = q.leader;
      return typeof leader === 'string';
    });
    expect(['n1', 'n2', 'n3']).toContain(leader);
    const via = ['n1', 'n2', 'n3'].find((n) => n !== leader) as string;
    const connection = await amqp.connect(`amqp://guest:guest@127.0.0.1:${amqpPorts[via]}`);
    connection.on('error', () => undefined);
    open.push(connection);
    const ch = await connection.createConfirmChannel();
    for (let i = 0; i < 200; i++) ch.sendToQueue('amqp-cluster', Buffer.from(`c${i}`), { persistent: true });
    await ch.waitForConfirms();
    const got: string[] = [];
    const consumer = await connection.createChannel();
    await consumer.prefetch(50);
    await consumer.consume('amqp-cluster', (m: ConsumeMessage | null) => {
      if (m === null) return;
      got.push(m.content.toString());
      consumer.ack(m);
    });
    await eventually('200 deliveries', async () => got.length === 200);
    expect(got).toEqual(Array.from({ length: 200 }, (_, i) => `c${i}`));
  }, 120_000);
});
