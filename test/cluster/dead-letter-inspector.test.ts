import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// The dead-letter inspector and explain across real processes: a DLQ led by one node is browsed,
// filtered and explained through the management API of the others, and again once its leader died
// and another took over. Browsing takes nothing: the messages are still there to consume after.

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

interface Page {
  readonly leader: string;
  readonly ready: number;
  readonly messages: readonly {
    readonly body: { readonly preview: string };
    readonly headers: Record<string, unknown>;
    readonly dead_lettering: {
      readonly x_death: readonly { reason: string; queue: string; count: number }[];
    };
  }[];
}

describe('the dead-letter inspector on a three-node cluster', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 180_000);

  afterAll(async () => {
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('browses a DLQ from every node (two of which do not lead it), and after its leader died', async () => {
    const c1 = await amqp.connect([cluster.url('n1')]);
    c1.on('error', () => undefined);
    open.push(c1);
    const ch = await c1.createConfirmChannel();
    await ch.assertQueue('insp.dlq', { durable: true });
    await ch.assertQueue('insp.work', {
      durable: true,
      arguments: { 'x-dead-letter-exchange': '', 'x-dead-letter-routing-key': 'insp.dlq' },
    });
    for (const [n, tenant] of [
      [0, 'acme'],
      [1, 'initech'],
      [2, 'acme'],
    ] as const) {
      ch.sendToQueue('insp.work', Buffer.from(`order ${n}`), { persistent: true, headers: { tenant } });
    }
    await ch.waitForConfirms();
    // A consumer rejects all three: dead-lettered at-least-once into insp.dlq.
    await ch.consume('insp.work', (m) => {
      if (m !== null) ch.nack(m, false, false);
    });
    await eventually('three messages in the DLQ', async () => {
      const q = await cluster.queue('n2', 'insp.dlq');
      return q.messages_ready === 3;
    });

    // The leader may move (the cluster spreads leaderships): each page names the node that read it.
    await cluster.leaderOf('insp.dlq');
    for (const via of ['n1', 'n2', 'n3']) {
      const page = await cluster.api<Page>(via, '/api/queues/%2F/insp.dlq/messages');
      expect(page.leader).toBe(await cluster.leaderOf('insp.dlq'));
      expect(page.messages.map((m) => m.body.preview)).toEqual(['order 0', 'order 1', 'order 2']);
      expect(page.messages[0]?.dead_lettering.x_death).toMatchObject([
        { reason: 'rejected', queue: 'insp.work', count: 1 },
      ]);
    }
    const acme = await cluster.api<Page>(
      'n3',
      '/api/queues/%2F/insp.dlq/messages?header=tenant:acme&reason=rejected',
    );
    expect(acme.messages.map((m) => m.body.preview)).toEqual(['order 0', 'order 2']);
    const explained = await cluster.api<{ routing: { routes: { queues: string[] }[] }; warnings: unknown[] }>(
      'n3',
      '/api/queues/%2F/insp.work/dead-lettering',
    );
    expect(explained.routing.routes.map((r) => r.queues)).toEqual([['insp.dlq']]);

    // The leader dies: another replica leads, and any node browses through it.
    await ch.close().catch(() => undefined);
    const dead = await cluster.leaderOf('insp.dlq');
    await cluster.kill(dead);
    const alive = ['n1', 'n2', 'n3'].filter((n) => n !== dead);
    const leader = await cluster.leaderOf('insp.dlq', [dead]);
    const other = alive.find((n) => n !== leader) as string;
    await eventually('a page read by the new leader', async () => {
      const page = await cluster.api<Page>(other, '/api/queues/%2F/insp.dlq/messages');
      return page.leader !== dead && page.messages.length === 3;
    });
    const page = await cluster.api<Page>(other, '/api/queues/%2F/insp.dlq/messages?limit=1&offset=2');
    expect(page.leader).not.toBe(dead);
    expect(page.ready).toBe(3);
    expect(page.messages.map((m) => m.body.preview)).toEqual(['order 2']);

    // Nothing was taken: a consumer on the remaining nodes gets all three.
    const c2 = await amqp.connect([cluster.url(other)]);
    c2.on('error', () => undefined);
    open.push(c2);
    const consumer = await c2.createChannel();
    const got: string[] = [];
    await consumer.consume('insp.dlq', (m) => {
      if (m === null) return;
      got.push(m.content.toString());
      consumer.ack(m);
    });
    await eventually('the DLQ consumed', async () => got.length === 3);
    expect(got).toEqual(['order 0', 'order 1', 'order 2']);
  }, 120_000);
});
