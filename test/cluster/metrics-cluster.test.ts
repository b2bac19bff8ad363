import type { ConfirmChannel } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { ParsedFamily } from '../support/prometheus-text.ts';
import { family, parseExposition, sampleValue } from '../support/prometheus-text.ts';

// GET /metrics/per-object on a 3-node cluster of real processes: each node serves its own figures; a queue's
// message series come from its leader only (so a sum over nodes counts it once), its Raft series
// from every replica, and the leader reports each replica's commit lag: a paused follower's grows.

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

const QUEUE = 'mc.q';
let cluster: TestCluster;
let conn: Connection;
let ch: ConfirmChannel;

async function scrape(node: string): Promise<ParsedFamily[]> {
  const response = await fetch(`${cluster.node(node).broker.managementUrl}/metrics/per-object`, {
    signal: AbortSignal.timeout(15_000),
  });
  expect(response.status).toBe(200);
  return parseExposition(await response.text());
}

async function publish(count: number): Promise<void> {
  for (let i = 0; i < count; i++) ch.sendToQueue(QUEUE, Buffer.from(String(i)), { persistent: true });
  await ch.waitForConfirms();
}

const q = { vhost: '/', queue: QUEUE };

beforeAll(async () => {
  cluster = await TestCluster.start(3);
  conn = await amqp.connect(cluster.url('n1'));
  conn.on('error', () => undefined);
  ch = await conn.createConfirmChannel();
  await ch.assertQueue(QUEUE, { durable: true });
  await publish(5);
}, 180_000);

afterAll(async () => {
  await conn?.close().catch(() => undefined);
  await cluster?.stop();
}, 60_000);

describe('GET /metrics on a cluster', () => {
  it("writes a queue's message series on its leader only and its Raft series on every replica", async () => {
    const leader = await cluster.leaderOf(QUEUE);
    await eventually(
      'every replica to have applied the 5 messages',
      async () => {
        for (const node of ['n1', 'n2', 'n3']) {
          const f = await scrape(node);
          const applied = sampleValue(f, 'rabbitmq_raft_log_last_applied_index', q) ?? 0;
          const commit = sampleValue(f, 'rabbitmq_raft_log_commit_index', q) ?? -1;
          if (applied < commit || commit < 5) return false;
        }
        return true;
      },
      30_000,
    );
    let published = 0;
    for (const node of ['n1', 'n2', 'n3']) {
      const f = await scrape(node);
      expect(sampleValue(f, 'styx_cluster_members')).toBe(3);
      expect(sampleValue(f, 'rabbitmq_raft_term_total', q)).toBeGreaterThanOrEqual(1);
      const ready = sampleValue(f, 'rabbitmq_queue_messages_ready', q);
      if (node === leader) expect(ready).toBe(5);
      else expect(ready).toBe(undefined);
      published += sampleValue(f, 'rabbitmq_queue_messages_published_total', q) ?? 0;
    }
    // Summed over the nodes, the queue counts once.
    expect(published).toBe(5);
  });

  it("counts what each node's Raft host sent its peers, entries as often as followers need them", async () => {
    const leader = await cluster.leaderOf(QUEUE);
    const before = await scrape(leader);
    const sent = (f: ParsedFamily[], what: string): number => sampleValue(f, `styx_raft_${what}_total`) ?? -1;
    await publish(30);
    const after = await scrape(leader);
    const delta = (what: string): number => sent(after, what) - sent(before, what);
    // 30 entries to each of 2 followers, none sent twice (no rejection on a healthy cluster); the
    // node's other groups (metadata) may add a few of their own.
    expect(delta('entries_sent')).toBeGreaterThanOrEqual(60);
    expect(delta('entries_sent')).toBeLessThan(120);
    expect(delta('append_rejections_received')).toBe(0);
    expect(delta('appends_sent')).toBeGreaterThanOrEqual(2);
    expect(delta('messages_sent')).toBeGreaterThanOrEqual(delta('appends_sent'));
    expect(delta('peer_batches_sent')).toBeGreaterThanOrEqual(2);
    // Every batch is one frame, and a write carries one frame or more: never more writes than frames.
    expect(delta('peer_writes')).toBeGreaterThanOrEqual(1);
    expect(delta('peer_writes')).toBeLessThanOrEqual(delta('peer_batches_sent'));
  });

  it("reports on the leader each replica's commit lag, which grows for a paused follower", async () => {
    const leader = await cluster.leaderOf(QUEUE);
    const lagOf = (f: ParsedFamily[], replica: string): number | undefined =>
      sampleValue(f, 'styx_raft_replica_commit_lag', { ...q, replica });
    const before = await scrape(leader);
    const replicas = family(before, 'styx_raft_replica_commit_lag')
      .metrics.filter((m) => m.labels?.queue === QUEUE)
      .map((m) => m.labels?.replica)
      .sort();
    expect(replicas).toEqual(['n1', 'n2', 'n3']);
    expect(lagOf(before, leader)).toBe(0);

    const follower = ['n1', 'n2', 'n3'].find((n) => n !== leader) as string;
    cluster.pause(follower);
    try {
      await publish(20);
      const after = await scrape(leader);
      expect(lagOf(after, follower)).toBeGreaterThanOrEqual(20);
      expect(lagOf(after, leader)).toBe(0);
    } finally {
      cluster.resume(follower);
    }
    await eventually(
      'the resumed follower to catch up',
      async () => lagOf(await scrape(leader), follower) === 0,
      30_000,
    );
  }, 90_000);
});
