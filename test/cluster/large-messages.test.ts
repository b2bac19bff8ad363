// A large message across a real 3-node cluster (max_message_size 32 MiB): a 20 MiB body published with confirms through a
// node that does not lead the queue (forwarded to the leader, replicated to every member) and
// consumed through the third node, intact. The body travels as BodyPart frames between client and
// node, and whole between the nodes (queue link and replication).
import { createHash, randomBytes } from 'node:crypto';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

const MIB = 1024 * 1024;
const WAIT_MS = 60_000;

describe('large messages in a 3-node cluster', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];
  const connect = async (name: string): Promise<Connection> => {
    const connection = await amqp.connect(cluster.url(name));
    open.push(connection);
    return connection;
  };

  beforeAll(async () => {
    // Above the 16 MiB default, which would refuse the 20 MiB body (406).
    const args = ['--max-message-size', String(32 * MIB)];
    cluster = await TestCluster.start(3, { nodeArgs: { n1: args, n2: args, n3: args } });
  }, 180_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('a 20 MiB message published on a non-leader node is consumed intact on the third', async () => {
    const declaring = await (await connect('n1')).createChannel();
    await declaring.assertQueue('large.cluster', { durable: true });
    expect(await cluster.leaderOf('large.cluster')).toBe('n1');
    const body = randomBytes(20 * MIB);
    const publisher = await (await connect('n2')).createConfirmChannel();
    await new Promise<void>((resolve, reject) =>
      publisher.sendToQueue('large.cluster', body, { messageId: 'big' }, (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    const consumer = await (await connect('n3')).createChannel();
    const received = await new Promise<amqp.ConsumeMessage>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no delivery on n3')), WAIT_MS);
      void consumer.consume('large.cluster', (msg) => {
        if (msg === null) return;
        clearTimeout(timer);
        consumer.ack(msg);
        resolve(msg);
      });
    });
    expect(received.properties.messageId).toBe('big');
    expect(received.content.length).toBe(body.length);
    const digest = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
    expect(digest(received.content)).toBe(digest(body));
  }, 120_000);
});
