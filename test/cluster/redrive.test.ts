import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// Redrive across real processes: the dead-letter queue is led by one node and the redrive is asked
// of another (browse, publish and remove all reach the leader from there); every node lists the
// same audit record; the node running the redrive is SIGKILLed midway, and the metadata leader
// takes it over and finishes it: every message leaves the DLQ exactly once by the count, and
// reaches its source queue at least once (a batch published but not yet counted when the node
// died is published again: duplicates allowed, losses not).

type Json = Record<string, unknown>;

const COUNT = 40;

describe('redrive in a cluster', () => {
  let cluster: TestCluster;
  let passed = false;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 180_000);

  afterAll(async () => {
    // The nodes' logs, for whoever looks into a failure.
    if (!passed && cluster !== undefined)
      process.stderr.write(`redrive cluster logs: ${await cluster.saveLogs('styx-redrive')}\n`);
    await cluster?.stop();
  }, 60_000);

  it('runs on a node that does not lead the DLQ, survives that node being killed, and is listed everywhere', async () => {
    const c1 = await cluster.connect('n1');
    const ch = await c1.createConfirmChannel();
    await ch.assertQueue('rd.dlq', { durable: true });
    await ch.assertQueue('rd.work', {
      durable: true,
      deadLetterExchange: '',
      deadLetterRoutingKey: 'rd.dlq',
    });
    for (let i = 0; i < COUNT; i++) ch.sendToQueue('rd.work', Buffer.from(`m${i}`), { persistent: true });
    await ch.waitForConfirms();
    const consumer = await c1.createChannel();
    await consumer.prefetch(COUNT);
    let rejected = 0;
    const { consumerTag } = await consumer.consume('rd.work', (m) => {
      if (m === null) return;
      consumer.reject(m, false);
      rejected++;
    });
    await eventually('every message rejected', async () => rejected === COUNT);
    await consumer.cancel(consumerTag);
    await eventually(
      'the DLQ filled',
      async () => (await cluster.queue('n1', 'rd.dlq')).messages_ready === COUNT,
    );

    const leader = await cluster.leaderOf('rd.dlq');
    const metadataLeader = ((await cluster.api<Json>('n1', '/api/cluster')).metadata_leader as Json | null)
      ?.name;
    // Asked of a node that leads neither the DLQ nor (if it can be helped) the metadata group.
    const via =
      ['n1', 'n2', 'n3'].find((n) => n !== leader && n !== metadataLeader) ??
      (['n1', 'n2', 'n3'].find((n) => n !== leader) as string);
    const survivor = ['n1', 'n2', 'n3'].find((n) => n !== via) as string;

    const dry = await cluster.api<Json>(via, '/api/queues/%2F/rd.dlq/redrive', {
      method: 'POST',
      body: JSON.stringify({ target: 'source', dry_run: true }),
    });
    expect(dry).toMatchObject({ state: 'done', total: COUNT, would_move: COUNT, would_fail: 0 });

    const started = await cluster.api<Json>(via, '/api/queues/%2F/rd.dlq/redrive', {
      method: 'POST',
      body: JSON.stringify({ target: 'source', rate: 10 }),
    });
    const id = started.id as string;
    expect(started.node).toBe(via);
    await eventually(
      'a few messages moved',
      async () => ((await cluster.api<Json>(survivor, `/api/redrives/${id}`)).moved as number) >= 5,
      30_000,
    );
    await cluster.kill(via);

    let record: Json = {};
    await eventually(
      'the redrive taken over and finished',
      async () => {
        record = await cluster.api<Json>(survivor, `/api/redrives/${id}`);
        return record.state !== 'running';
      },
      90_000,
      250,
    );
    expect(record).toMatchObject({ state: 'done', moved: COUNT, failed: 0, remaining: 0 });
    expect(record.takeovers).toBeGreaterThanOrEqual(1);
    expect(record.node).not.toBe(via);
    // Every running node shows the same record.
    for (const name of ['n1', 'n2', 'n3'].filter((n) => n !== via)) {
      const listed = await cluster.api<Json[]>(name, '/api/redrives');
      expect(listed.find((r) => r.id === id)).toMatchObject({ state: 'done', moved: COUNT });
    }
    expect((await cluster.queue(survivor, 'rd.dlq')).messages_ready).toBe(0);

    // Every message is back in its source queue at least once.
    const reader = await (await cluster.connect(survivor)).createChannel();
    const seen = new Map<string, number>();
    for (;;) {
      const m = await reader.get('rd.work', { noAck: true });
      if (m === false) break;
      const body = m.content.toString();
      seen.set(body, (seen.get(body) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual(Array.from({ length: COUNT }, (_, i) => `m${i}`).sort());
    const copies = [...seen.values()].reduce((a, b) => a + b, 0);
    // At most one batch (at 10 msgs/s, 10 messages) published twice.
    expect(copies - COUNT).toBeLessThanOrEqual(10);
    passed = true;
  }, 240_000);
});
