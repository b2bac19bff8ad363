import { readFileSync } from 'node:fs';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// The management API's topology and definitions endpoints across real processes: a RabbitMQ 3.10
// export imported through one node is the topology of every node (queues with leaders and
// replicas, a user who logs in with RabbitMQ's password hash anywhere), and changes made through
// any node's API land for all.

const WHOLE = JSON.parse(
  readFileSync(new URL('../fixtures/rabbitmq-3.10-definitions.json', import.meta.url), 'utf8'),
) as Record<string, unknown>;

interface QueueJson {
  readonly name: string;
  readonly leader: string | null;
  readonly members: readonly string[];
  readonly messages: number;
  readonly policy: string | null;
}

describe('definitions and topology changes on a three-node cluster', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 180_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('imports a RabbitMQ export through one node; every node lists it, and it is idempotent', async () => {
    const reply = await cluster.api<{ imported: Record<string, number> }>('n2', '/api/definitions', {
      method: 'POST',
      body: JSON.stringify(WHOLE),
    });
    expect(reply.imported).toMatchObject({ queues: 5, exchanges: 4, bindings: 6, policies: 2 });
    for (const via of ['n1', 'n2', 'n3']) {
      const queues = await cluster.api<QueueJson[]>(via, '/api/queues/shop');
      expect(queues.map((q) => q.name).sort(), via).toEqual([
        'audit.eu',
        'orders.dead',
        'orders.delay',
        'orders.unrouted.q',
        'orders.work',
      ]);
      expect(queues.find((q) => q.name === 'orders.work')?.policy).toBe('retry');
    }
    // Durable queues got their replicas and a leader, as a client's declare would have.
    await eventually('every imported queue led', async () => {
      const queues = await cluster.api<QueueJson[]>('n3', '/api/queues/shop');
      return queues.every((q) => q.leader !== null && q.members.length === 3);
    });
    const first = await cluster.api<unknown>('n1', '/api/definitions');
    expect(await cluster.api<unknown>('n3', '/api/definitions')).toEqual(first);
    const again = await cluster.api<{ imported: Record<string, number> }>('n3', '/api/definitions', {
      method: 'POST',
      body: JSON.stringify(WHOLE),
    });
    expect(Object.values(again.imported).every((n) => n === 0)).toBe(true);
    expect(await cluster.api<unknown>('n2', '/api/definitions')).toEqual(first);
  });

  it("lets an imported user log in on any node with RabbitMQ's hash of its password", async () => {
    for (const via of ['n1', 'n3']) {
      const url = cluster.url(via).replace('guest:guest@', 'ops:ops-pw@');
      const connection = await amqp.connect([`${url}/shop`]);
      connection.on('error', () => undefined);
      const ch = await connection.createChannel();
      expect((await ch.checkQueue('orders.work')).queue).toBe('orders.work');
      await connection.close();
    }
  });

  it('declares, binds, purges and deletes through different nodes', async () => {
    const put = (via: string, path: string, body: unknown) =>
      cluster.api(via, path, { method: 'PUT', body: JSON.stringify(body) });
    await put('n1', '/api/exchanges/%2F/cl.x', { type: 'direct' });
    await put('n2', '/api/queues/%2F/cl.q', { arguments: { 'x-queue-type': 'quorum' } });
    await cluster.api('n3', '/api/bindings/%2F/e/cl.x/q/cl.q', {
      method: 'POST',
      body: JSON.stringify({ routing_key: 'k' }),
    });
    const connection = await amqp.connect([cluster.url('n1')]);
    connection.on('error', () => undefined);
    const ch = await connection.createConfirmChannel();
    for (let i = 0; i < 3; i++) ch.publish('cl.x', 'k', Buffer.from(`m${i}`), { persistent: true });
    await ch.waitForConfirms();
    await connection.close();
    await eventually('three messages routed by the binding made through n3', async () => {
      return (await cluster.queue('n2', 'cl.q')).messages_ready === 3;
    });
    await cluster.api('n3', '/api/queues/%2F/cl.q/contents', { method: 'DELETE' });
    await eventually('the queue purged through n3', async () => {
      return (await cluster.queue('n1', 'cl.q')).messages_ready === 0;
    });
    await cluster.api('n2', '/api/queues/%2F/cl.q', { method: 'DELETE' });
    await cluster.api('n1', '/api/exchanges/%2F/cl.x', { method: 'DELETE' });
    for (const via of ['n1', 'n2', 'n3']) {
      const names = (await cluster.api<QueueJson[]>(via, '/api/queues/%2F')).map((q) => q.name);
      expect(names, via).not.toContain('cl.q');
    }
  });
});
