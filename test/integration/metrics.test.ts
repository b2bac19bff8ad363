import type { Channel, ConfirmChannel, Connection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import type { LabelledHistogram, ParsedFamily } from '../support/prometheus-text.ts';
import { family, labelledHistograms, parseExposition, sampleValue } from '../support/prometheus-text.ts';
import { getOne, WAIT_MS, waitFor, withTimeout } from './messaging-helpers.ts';

// `GET /metrics/per-object` (and `/metrics`, aggregated) of a real `styx server` after a known
// workload, read with a real Prometheus text-format parser: publish, deliver, ack, reject into a DLX (at-most-once), expire by TTL into
// it (at-least-once), overflow a max-length without a DLX, a hand-off blocked by a missing DLX,
// and a queue whose name holds a quote, a backslash and a newline.

let broker: BrokerProcess;
let conn: Connection;
let ch: ConfirmChannel;
let plain: Channel;

const DLX = 'm.dlx';
const DLQ = 'm.dlq';
const WORK = 'm.work';
const TTL = 'm.ttl';
const MAX = 'm.max';
const BLOCKED = 'm.blocked';
const HOSTILE = 'evil "quoted" \\ back\nslash} # not a comment';

async function scrape(init: RequestInit = {}, path = '/metrics/per-object'): Promise<Response> {
  const url = broker.managementUrl;
  if (url === undefined) throw new Error('management API not started');
  return withTimeout(fetch(`${url}${path}`, init), WAIT_MS, `GET ${path}`);
}

async function metrics(): Promise<ParsedFamily[]> {
  const response = await scrape();
  expect(response.status).toBe(200);
  return parseExposition(await response.text());
}

/** `labels` for queue `name` in vhost '/'. */
function q(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { vhost: '/', queue: name, ...extra };
}

async function publish(queue: string, count: number): Promise<void> {
  for (let i = 0; i < count; i++) ch.sendToQueue(queue, Buffer.from(`${queue}-${i}`));
  await withTimeout(ch.waitForConfirms(), WAIT_MS, 'confirms');
}

beforeAll(async () => {
  broker = await startBroker({ management: true });
  conn = await withTimeout(amqp.connect(broker.url), WAIT_MS, 'connect');
  conn.on('error', () => undefined);
  ch = await conn.createConfirmChannel();
  plain = await conn.createChannel();

  await ch.assertExchange(DLX, 'fanout', { durable: true });
  await ch.assertQueue(DLQ, { durable: true });
  await ch.bindQueue(DLQ, DLX, '');
  await ch.assertQueue(WORK, {
    durable: true,
    arguments: { 'x-dead-letter-exchange': DLX, 'x-dead-letter-strategy': 'at-most-once' },
  });
  await ch.assertQueue(TTL, {
    durable: true,
    arguments: {
      'x-message-ttl': 100,
      'x-dead-letter-exchange': DLX,
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
    },
  });
  await ch.assertQueue(MAX, { durable: true, arguments: { 'x-max-length': 2 } });
  await ch.assertQueue(BLOCKED, {
    durable: true,
    arguments: { 'x-dead-letter-exchange': 'm.missing', 'x-dead-letter-strategy': 'at-least-once' },
  });
  await ch.assertQueue(HOSTILE, { durable: true });

  // WORK: 10 published; 6 got, 4 acked, 2 rejected into the DLX; then one nacked back and got
  // again (a redelivery) and acked: delivered 8, redelivered 1, acked 5, ready 3.
  await publish(WORK, 10);
  const got = [];
  for (let i = 0; i < 6; i++) got.push(await getOne(plain, WORK, false));
  for (const m of got.slice(0, 4)) plain.ack(m);
  for (const m of got.slice(4)) plain.reject(m, false);
  plain.nack(await getOne(plain, WORK, false), false, true);
  const again = await getOne(plain, WORK, false);
  expect(again.fields.redelivered).toBe(true);
  plain.ack(again);

  // TTL: 3 expire after 100 ms, handed off at-least-once to the DLQ.
  await publish(TTL, 3);
  // MAX: 5 published into a max-length of 2 (drop-head), no DLX: 3 dropped.
  await publish(MAX, 5);
  // BLOCKED: 1 rejected into a DLX that does not exist: pending, its hand-off blocked.
  await publish(BLOCKED, 1);
  plain.reject(await getOne(plain, BLOCKED, false), false);
  await publish(HOSTILE, 1);

  // Settled: the DLQ holds the 2 rejected and the 3 expired, the blocked hand-off was tried.
  await waitFor(
    async () => {
      const f = await metrics();
      return (
        sampleValue(f, 'rabbitmq_queue_messages_ready', q(DLQ)) === 5 &&
        sampleValue(f, 'rabbitmq_queue_messages_acked_total', q(WORK)) === 5 &&
        sampleValue(f, 'styx_queue_dead_letter_blocked', q(BLOCKED)) === 1
      );
    },
    'the workload to settle in /metrics',
    10_000,
    100,
  );
}, 60_000);

afterAll(async () => {
  await conn?.close().catch(() => undefined);
  await broker?.stop();
  await broker?.cleanup();
});

describe('GET /metrics/per-object and /metrics', () => {
  it('answers without credentials, in the text format 0.0.4', async () => {
    const response = await scrape();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await response.text();
    expect(text.endsWith('\n')).toBe(true);
    expect(Number(response.headers.get('content-length'))).toBe(Buffer.byteLength(text));
  });

  it('counts the flow of messages per queue', async () => {
    const f = await metrics();
    expect(sampleValue(f, 'rabbitmq_queue_messages_published_total', q(WORK))).toBe(10);
    expect(sampleValue(f, 'rabbitmq_queue_messages_delivered_total', q(WORK))).toBe(8);
    expect(sampleValue(f, 'rabbitmq_queue_messages_redelivered_total', q(WORK))).toBe(1);
    expect(sampleValue(f, 'rabbitmq_queue_messages_acked_total', q(WORK))).toBe(5);
    expect(sampleValue(f, 'rabbitmq_queue_messages_ready', q(WORK))).toBe(3);
    expect(sampleValue(f, 'rabbitmq_queue_messages_unacked', q(WORK))).toBe(0);
    expect(sampleValue(f, 'rabbitmq_queue_messages_ready_bytes', q(WORK))).toBeGreaterThan(0);
    expect(sampleValue(f, 'rabbitmq_queue_messages_published_total', q(DLQ))).toBe(5);
    expect(sampleValue(f, 'rabbitmq_queue_messages_published_total', q(MAX))).toBe(5);
    expect(sampleValue(f, 'rabbitmq_queue_messages_ready', q(MAX))).toBe(2);
    expect(sampleValue(f, 'rabbitmq_queue_messages_ready', q(TTL))).toBe(0);
  });

  it('counts dead-lettering per queue, reason and strategy, and drops per cause', async () => {
    const response = await scrape();
    expect(response.status).toBe(200);
    const text = await response.text();
    const f = parseExposition(text);
    const dead = 'styx_queue_messages_dead_lettered_total';
    expect(sampleValue(f, dead, q(WORK, { reason: 'rejected', dead_letter_strategy: 'at_most_once' }))).toBe(
      2,
    );
    expect(sampleValue(f, dead, q(TTL, { reason: 'expired', dead_letter_strategy: 'at_least_once' }))).toBe(
      3,
    );
    // A queue with a DLX shows every reason of its strategy, zeros included (alerts see the first).
    expect(sampleValue(f, dead, q(WORK, { reason: 'expired', dead_letter_strategy: 'at_most_once' }))).toBe(
      0,
    );
    expect(sampleValue(f, dead, q(WORK, { reason: 'rejected', dead_letter_strategy: 'at_least_once' }))).toBe(
      undefined,
    );
    const dropped = 'styx_queue_messages_dead_letter_dropped_total';
    expect(
      sampleValue(
        f,
        dropped,
        q(MAX, { reason: 'maxlen', cause: 'no_dlx', dead_letter_strategy: 'disabled' }),
      ),
    ).toBe(3);
    expect(sampleValue(f, dropped, q(WORK, { reason: 'rejected', cause: 'lost' }))).toBe(0);
    // A plain queue without a DLX and nothing dropped writes no dead-letter series at all.
    expect(family(f, dead).metrics.some((m) => m.labels?.queue === DLQ)).toBe(false);
    expect(family(f, dropped).metrics.some((m) => m.labels?.queue === DLQ)).toBe(false);

    expect(sampleValue(f, 'styx_queue_dead_letter_pending', q(BLOCKED))).toBe(1);
    expect(sampleValue(f, 'styx_queue_dead_letter_blocked', q(BLOCKED))).toBe(1);
    expect(sampleValue(f, 'styx_queue_dead_letter_pending', q(TTL))).toBe(0);
    expect(sampleValue(f, 'styx_queue_dead_letter_blocked', q(TTL))).toBe(0);

    // The node's totals, with RabbitMQ's names and labels.
    const amo = { queue_type: 'rabbit_quorum_queue', dead_letter_strategy: 'at_most_once' };
    const alo = { queue_type: 'rabbit_quorum_queue', dead_letter_strategy: 'at_least_once' };
    expect(sampleValue(f, 'rabbitmq_global_messages_dead_lettered_rejected_total', amo)).toBe(2);
    expect(sampleValue(f, 'rabbitmq_global_messages_dead_lettered_expired_total', alo)).toBe(3);
    expect(sampleValue(f, 'rabbitmq_global_messages_dead_lettered_maxlen_total', amo)).toBe(0);
    expect(sampleValue(f, 'rabbitmq_global_messages_dead_lettered_confirmed_total', alo)).toBe(3);
    expect(sampleValue(f, 'rabbitmq_global_messages_acknowledged_total')).toBe(5);

    // Dead-lettering's stages: the 3 expired messages' expiry, then every copy's commit at the
    // DLQ (the 2 rejected at-most-once, the 3 expired at-least-once). MAX dropped without a DLX:
    // no copy; BLOCKED's hand-off never confirmed: not timed.
    const stages = labelledHistograms(text, 'styx_dead_letter_stage_seconds');
    expect(family(f, 'styx_dead_letter_stage_seconds').type).toBe('HISTOGRAM');
    const stage = (labels: Record<string, string>): LabelledHistogram => {
      const found = stages.find((h) =>
        Object.entries(labels).every(([key, value]) => h.labels[key] === value),
      );
      if (found === undefined) throw new Error(`no stage ${JSON.stringify(labels)}`);
      expect(found.buckets.get('+Inf')).toBe(found.count);
      return found;
    };
    for (const timed of [
      stage({ stage: 'expiry_proposed' }),
      stage({ stage: 'expiry_committed' }),
      stage({ stage: 'copy_committed', dead_letter_strategy: 'at_least_once' }),
    ]) {
      expect(timed.count).toBe(3);
      // Seconds, not ms: each well under the test's own bound on the wait.
      expect(timed.sum).toBeGreaterThanOrEqual(0);
      expect(timed.sum / timed.count).toBeLessThan(WAIT_MS / 1000);
    }
    expect(stage({ stage: 'copy_committed', dead_letter_strategy: 'at_most_once' }).count).toBe(2);
  });

  it('escapes a hostile queue name so that the parser reads it back exactly', async () => {
    const response = await scrape();
    const text = await response.text();
    // No raw newline inside a label: every line is a comment or a whole sample.
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('# ')) continue;
      expect(line).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? \S+$/);
    }
    const f = parseExposition(text);
    expect(sampleValue(f, 'rabbitmq_queue_messages_ready', q(HOSTILE))).toBe(1);
    expect(sampleValue(f, 'rabbitmq_queue_messages_published_total', q(HOSTILE))).toBe(1);
  });

  it("shows the event loop's delay since the previous scrape", async () => {
    await metrics(); // starts the monitor, if no earlier scrape has
    await new Promise((resolve) => setTimeout(resolve, 200));
    const f = await metrics();
    const max = sampleValue(f, 'nodejs_eventloop_lag_max_seconds') as number;
    const p99 = sampleValue(f, 'nodejs_eventloop_lag_p99_seconds') as number;
    const mean = sampleValue(f, 'nodejs_eventloop_lag_mean_seconds') as number;
    // Delays are non-negative seconds (not ns: a second-long lag on an idle node is a unit error).
    for (const v of [max, p99, mean]) {
      expect(Number.isFinite(v)).toBe(true);
      expect(v).toBeGreaterThan(0);
      expect(v).toBeLessThan(1);
    }
    expect(p99).toBeLessThanOrEqual(max);
  });

  it('shows Raft, the log sync histogram, memory, connections and the cluster', async () => {
    const f = await metrics();
    expect(sampleValue(f, 'rabbitmq_raft_term_total', q(WORK))).toBeGreaterThanOrEqual(1);
    const commit = sampleValue(f, 'rabbitmq_raft_log_commit_index', q(WORK)) as number;
    const applied = sampleValue(f, 'rabbitmq_raft_log_last_applied_index', q(WORK)) as number;
    expect(commit).toBeGreaterThan(10);
    expect(applied).toBeLessThanOrEqual(commit);
    // A group of one wins every election it starts, each after a pre-vote round.
    const elections = sampleValue(f, 'styx_raft_elections_total', q(WORK)) as number;
    expect(elections).toBeGreaterThanOrEqual(1);
    expect(sampleValue(f, 'styx_raft_elections_won_total', q(WORK))).toBe(elections);
    expect(sampleValue(f, 'styx_raft_pre_votes_total', q(WORK))).toBe(elections);
    // A node alone: every group has one member, so no replica lags.
    expect(family(f, 'styx_raft_replica_commit_lag').metrics).toEqual([]);
    expect(sampleValue(f, 'styx_metadata_leader')).toBe(1);

    const sync = family(f, 'styx_log_sync_duration_seconds');
    expect(sync.type).toBe('HISTOGRAM');
    const [h] = sync.metrics;
    // By bound ('1' would come first in key order: it is an integer key).
    const buckets = Object.entries(h?.buckets ?? {}).sort(([a], [b]) => Number(a) - Number(b));
    expect(buckets.at(-1)?.[0]).toBe('+Inf');
    expect(Number(buckets.at(-1)?.[1])).toBe(Number(h?.count));
    expect(Number(h?.count)).toBeGreaterThan(0);
    for (let i = 1; i < buckets.length; i++) {
      expect(Number(buckets[i]?.[1])).toBeGreaterThanOrEqual(Number(buckets[i - 1]?.[1]));
    }

    expect(sampleValue(f, 'rabbitmq_process_resident_memory_bytes')).toBeGreaterThan(10_000_000);
    expect(sampleValue(f, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    expect(sampleValue(f, 'rabbitmq_connections')).toBe(1);
    expect(sampleValue(f, 'rabbitmq_channels')).toBe(2);
    expect(sampleValue(f, 'rabbitmq_queues')).toBe(6);
    expect(sampleValue(f, 'styx_cluster_members')).toBe(1);
    expect(sampleValue(f, 'styx_cluster_members_online')).toBe(1);
    expect(sampleValue(f, 'rabbitmq_unreachable_cluster_peers_count')).toBe(0);
  });

  it('aggregates the per-queue series on /metrics: totals without queue labels', async () => {
    const response = await scrape({}, '/metrics');
    expect(response.status).toBe(200);
    const f = parseExposition(await response.text());
    expect(family(f, 'rabbitmq_queue_messages_published_total').metrics).toEqual([{ value: '25' }]);
    const dead = 'styx_queue_messages_dead_lettered_total';
    expect(sampleValue(f, dead, { reason: 'rejected', dead_letter_strategy: 'at_most_once' })).toBe(2);
    expect(sampleValue(f, dead, { reason: 'expired', dead_letter_strategy: 'at_least_once' })).toBe(3);
    expect(family(f, dead).metrics.some((m) => m.labels?.queue !== undefined)).toBe(false);
    expect(sampleValue(f, 'styx_queue_dead_letter_blocked')).toBe(1);
  });

  it('answers other methods with 405 and the methods it takes, and HEAD without a body', async () => {
    const post = await scrape({ method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect(await post.json()).toEqual({
      error: 'method_not_allowed',
      reason: 'method POST is not allowed here',
    });
    const head = await scrape({ method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });
});
