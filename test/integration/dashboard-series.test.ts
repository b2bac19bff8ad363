import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Channel, ConfirmChannel, Connection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import type { ParsedFamily } from '../support/prometheus-text.ts';
import { family, parseExposition, sampleValue } from '../support/prometheus-text.ts';
import { dashboardExpressions, metricNamesOf, ruleExpressions } from '../support/promql-names.ts';
import { getOne, WAIT_MS, waitFor, withTimeout } from './messaging-helpers.ts';

// Metrics parity with RabbitMQ's dashboards and alerts, on a real `styx server`: every series that
// RabbitMQ's RabbitMQ-Overview and RabbitMQ-Quorum-Queues-Raft dashboards and the cluster-operator's
// alert rules query (test/fixtures/rabbitmq-dashboard-series.json, names extracted from the
// upstream files), and every series Styx's own dashboard and rules (docs/) query, is exported —
// on `/metrics` (aggregated), `/metrics/per-object` and, for the `rabbitmq_detailed_` ones,
// `/metrics/detailed` with RabbitMQ's family and vhost parameters. Then the values: the global
// counters move by what a workload did, the resources are real figures.

interface SeriesSource {
  readonly repo: string;
  readonly path: string;
  readonly commit: string;
  readonly series: readonly string[];
}

const upstream = JSON.parse(
  readFileSync(join(REPO_ROOT, 'test/fixtures/rabbitmq-dashboard-series.json'), 'utf8'),
) as { sources: SeriesSource[] };

/** The rabbitmq_* names RabbitMQ's dashboards and rules query (Kubernetes' and Erlang's are not ours). */
function upstreamNames(detailed: boolean): string[] {
  const names = new Set<string>();
  for (const source of upstream.sources) {
    for (const name of source.series) {
      if (!name.startsWith('rabbitmq_')) continue;
      if (name.startsWith('rabbitmq_detailed_') === detailed) names.add(name);
    }
  }
  return [...names].sort();
}

function styxDashboardNames(): string[] {
  const dashboard = JSON.parse(readFileSync(join(REPO_ROOT, 'docs/grafana/styx-overview.json'), 'utf8'));
  const rules = readFileSync(join(REPO_ROOT, 'docs/prometheus/styx-rules.yml'), 'utf8');
  const names = metricNamesOf([...dashboardExpressions(dashboard), ...ruleExpressions(rules)]);
  return [...names].sort();
}

/** The names of `families` as PromQL sees them (a histogram is its _bucket, _sum and _count). */
function exportedNames(families: readonly ParsedFamily[]): Set<string> {
  const names = new Set<string>();
  for (const f of families) {
    names.add(f.name);
    if (f.type === 'HISTOGRAM')
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(f.name + suffix);
  }
  return names;
}

function missing(wanted: readonly string[], families: readonly ParsedFamily[]): string[] {
  const have = exportedNames(families);
  return wanted.filter((name) => !have.has(name));
}

let broker: BrokerProcess;
let conn: Connection;
let otherConn: Connection;
let ch: ConfirmChannel;
let plain: Channel;
const OTHER_VHOST = 'parity-other';

async function scrape(path: string): Promise<ParsedFamily[]> {
  const response = await withTimeout(fetch(`${broker.managementUrl}${path}`), WAIT_MS, `GET ${path}`);
  expect(response.status).toBe(200);
  return parseExposition(await response.text());
}

async function manage(method: string, path: string, body: unknown): Promise<void> {
  const response = await fetch(`${broker.managementUrl}${path}`, {
    method,
    headers: {
      Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
      'Content-Type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  expect(response.status, `${method} ${path}`).toBeLessThan(300);
}

function value(f: readonly ParsedFamily[], name: string, labels: Record<string, string> = {}): number {
  const v = sampleValue(f, name, labels);
  if (v === undefined) throw new Error(`no sample of ${name} ${JSON.stringify(labels)}`);
  return v;
}

beforeAll(async () => {
  broker = await startBroker({ management: true });
  conn = await withTimeout(amqp.connect(broker.url), WAIT_MS, 'connect');
  conn.on('error', () => undefined);
  ch = await conn.createConfirmChannel();
  plain = await conn.createChannel();
  await ch.assertQueue('parity.a', { durable: true });
  await ch.assertQueue('parity.b', { durable: true });
  await manage('PUT', `/api/vhosts/${OTHER_VHOST}`, {});
  await manage('PUT', `/api/permissions/${OTHER_VHOST}/guest`, { configure: '.*', write: '.*', read: '.*' });
  otherConn = await withTimeout(amqp.connect(`${broker.url}/${OTHER_VHOST}`), WAIT_MS, 'connect other');
  otherConn.on('error', () => undefined);
  const other = await otherConn.createConfirmChannel();
  await other.assertQueue('parity.elsewhere', { durable: true });
  other.sendToQueue('parity.elsewhere', Buffer.from('x'));
  await withTimeout(other.waitForConfirms(), WAIT_MS, 'confirms');
}, 60_000);

afterAll(async () => {
  await otherConn?.close().catch(() => undefined);
  await conn?.close().catch(() => undefined);
  await broker?.stop();
  await broker?.cleanup();
});

describe("RabbitMQ's dashboards and alert rules", () => {
  it('read series names from the upstream files, with their source noted', () => {
    expect(upstream.sources.map((s) => s.path)).toEqual(
      expect.arrayContaining([
        'deps/rabbitmq_prometheus/docker/grafana/dashboards/RabbitMQ-Overview.json',
        'deps/rabbitmq_prometheus/docker/grafana/dashboards/RabbitMQ-Quorum-Queues-Raft.json',
        'observability/prometheus/rules/rabbitmq/high-connection-churn.yml',
      ]),
    );
    for (const s of upstream.sources) expect(s.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(upstreamNames(false).length).toBeGreaterThan(50);
  });

  it('find every series they query on /metrics and /metrics/per-object', async () => {
    const wanted = upstreamNames(false);
    expect(missing(wanted, await scrape('/metrics'))).toEqual([]);
    expect(missing(wanted, await scrape('/metrics/per-object'))).toEqual([]);
  });

  it('find the rabbitmq_detailed_ series of the per-object alerts on /metrics/detailed', async () => {
    const wanted = upstreamNames(true);
    expect(wanted).toEqual(['rabbitmq_detailed_queue_consumers', 'rabbitmq_detailed_queue_messages']);
    const f = await scrape('/metrics/detailed?family=queue_coarse_metrics&family=queue_consumer_count');
    expect(missing(wanted, f)).toEqual([]);
  });
});

describe("Styx's own dashboard and alert rules (docs/)", () => {
  it('query only series a node exports, on /metrics and /metrics/per-object', async () => {
    const wanted = styxDashboardNames();
    expect(wanted).toEqual(
      expect.arrayContaining(['styx_queue_dead_letter_blocked', 'rabbitmq_identity_info']),
    );
    expect(missing(wanted, await scrape('/metrics'))).toEqual([]);
    expect(missing(wanted, await scrape('/metrics/per-object'))).toEqual([]);
  });
});

describe('identity and the three endpoints', () => {
  it('names the node, the cluster and the endpoint', async () => {
    for (const [path, endpoint] of [
      ['/metrics', 'aggregated'],
      ['/metrics/per-object', 'per-object'],
      ['/metrics/detailed', 'detailed'],
    ] as const) {
      const [identity] = family(await scrape(path), 'rabbitmq_identity_info').metrics;
      expect(identity?.labels?.rabbitmq_endpoint).toBe(endpoint);
      expect(identity?.labels?.rabbitmq_cluster).toBe('styx');
      expect(identity?.labels?.rabbitmq_node).toMatch(/./);
    }
    const [build] = family(await scrape('/metrics'), 'rabbitmq_build_info').metrics;
    expect(build?.labels?.rabbitmq_version).toMatch(/^\d+\.\d+\.\d+/);
    expect(build?.labels?.erlang_version).toMatch(/^v\d+\./); // the Node.js runtime's
  });

  it('aggregates per-queue series on /metrics: no queue labels, the sum of the per-object ones', async () => {
    const aggregated = await scrape('/metrics');
    const perObject = await scrape('/metrics/per-object');
    const ready = family(aggregated, 'rabbitmq_queue_messages_ready');
    expect(ready.metrics).toHaveLength(1);
    expect(ready.metrics[0]?.labels ?? {}).toEqual({});
    let sum = 0;
    for (const m of family(perObject, 'rabbitmq_queue_messages_ready').metrics) sum += Number(m.value);
    expect(Number(ready.metrics[0]?.value)).toBe(sum);
    expect(family(perObject, 'rabbitmq_raft_term').metrics.length).toBeGreaterThanOrEqual(3);
    expect(family(aggregated, 'rabbitmq_raft_term').metrics).toHaveLength(1);
  });

  it('answers /metrics/detailed with the families asked for, for the vhosts asked for', async () => {
    const none = await scrape('/metrics/detailed');
    expect(none.map((f) => f.name).sort()).toEqual(['rabbitmq_build_info', 'rabbitmq_identity_info']);

    const all = await scrape('/metrics/detailed?family=queue_coarse_metrics&family=no_such_family');
    const queues = family(all, 'rabbitmq_detailed_queue_messages').metrics.map((m) => m.labels?.queue);
    expect(queues).toEqual(expect.arrayContaining(['parity.a', 'parity.elsewhere']));
    expect(all.some((f) => f.name === 'rabbitmq_detailed_queue_consumers')).toBe(false);
    expect(all.some((f) => f.name.startsWith('rabbitmq_queue_'))).toBe(false);

    const other = await scrape(`/metrics/detailed?family=queue_coarse_metrics&vhost=${OTHER_VHOST}`);
    expect(family(other, 'rabbitmq_detailed_queue_messages').metrics.map((m) => m.labels?.queue)).toEqual([
      'parity.elsewhere',
    ]);
    expect(value(other, 'rabbitmq_detailed_queue_messages', { queue: 'parity.elsewhere' })).toBe(1);

    const raft = await scrape('/metrics/detailed?family=ra_metrics&family=node_metrics&vhost=%2F');
    expect(
      value(raft, 'rabbitmq_detailed_raft_term', { vhost: '/', queue: 'parity.a' }),
    ).toBeGreaterThanOrEqual(1);
    expect(family(raft, 'rabbitmq_detailed_raft_term').metrics.some((m) => m.labels?.vhost !== '/')).toBe(
      false,
    );
    expect(value(raft, 'rabbitmq_detailed_resident_memory_limit_bytes')).toBeGreaterThan(0);
  });
});

describe('values', () => {
  it('counts what clients published, had routed and confirmed, got, were delivered and acked', async () => {
    const before = await scrape('/metrics');
    const N = 7;
    for (let i = 0; i < N; i++) ch.sendToQueue('parity.a', Buffer.alloc(500 + i));
    await withTimeout(ch.waitForConfirms(), WAIT_MS, 'confirms');
    plain.publish('', 'parity.nowhere', Buffer.from('dropped'));
    plain.publish('', 'parity.nowhere', Buffer.from('returned'), { mandatory: true });
    plain.ack(await getOne(plain, 'parity.a', false));
    await getOne(plain, 'parity.a', true);
    await ch.purgeQueue('parity.b');
    expect(await plain.get('parity.b')).toBe(false);
    const consumed: amqp.ConsumeMessage[] = [];
    await plain.consume('parity.a', (m) => {
      if (m !== null) consumed.push(m);
    });
    await waitFor(() => consumed.length === N - 2, 'the rest consumed', WAIT_MS, 20);
    plain.ackAll();

    const delta = async (name: string): Promise<number> =>
      value(await scrape('/metrics'), name) - value(before, name);
    await waitFor(
      async () => (await delta('rabbitmq_global_messages_acknowledged_total')) === N - 1,
      'the acks counted',
      WAIT_MS,
      20,
    );
    expect(await delta('rabbitmq_global_messages_received_total')).toBe(N + 2);
    expect(await delta('rabbitmq_global_messages_received_confirm_total')).toBe(N);
    expect(await delta('rabbitmq_global_messages_routed_total')).toBe(N);
    expect(await delta('rabbitmq_global_messages_confirmed_total')).toBe(N);
    expect(await delta('rabbitmq_global_messages_unroutable_dropped_total')).toBe(1);
    expect(await delta('rabbitmq_global_messages_unroutable_returned_total')).toBe(1);
    expect(await delta('rabbitmq_channel_messages_unroutable_returned_total')).toBe(1);
    expect(await delta('rabbitmq_global_messages_delivered_get_manual_ack_total')).toBe(1);
    expect(await delta('rabbitmq_global_messages_delivered_get_auto_ack_total')).toBe(1);
    expect(await delta('rabbitmq_global_messages_get_empty_total')).toBe(1);
    expect(await delta('rabbitmq_global_messages_delivered_consume_manual_ack_total')).toBe(N - 2);
    expect(await delta('rabbitmq_global_messages_delivered_total')).toBe(N);
    const after = await scrape('/metrics');
    const sizes = family(after, 'rabbitmq_message_size_bytes').metrics[0];
    const sizesBefore = family(before, 'rabbitmq_message_size_bytes').metrics[0];
    expect(Number(sizes?.count) - Number(sizesBefore?.count)).toBe(N + 2);
    expect(Number(sizes?.buckets?.['1000.0']) - Number(sizes?.buckets?.['100.0'])).toBeGreaterThanOrEqual(N);
    expect(value(after, 'rabbitmq_global_publishers')).toBe(3); // ch, plain and the other vhost's
    expect(value(after, 'rabbitmq_global_consumers')).toBe(1);
    expect(value(after, 'rabbitmq_raft_commit_latency_seconds')).toBeGreaterThan(0);
  });

  it('reports real resources: descriptors, memory and its limit, disk, churn', async () => {
    const f = await scrape('/metrics');
    const fds = value(f, 'rabbitmq_process_open_fds');
    expect(fds).toBeGreaterThan(0);
    expect(value(f, 'rabbitmq_process_max_fds')).toBeGreaterThan(fds);
    expect(value(f, 'rabbitmq_disk_space_available_bytes')).toBeGreaterThan(0);
    expect(value(f, 'rabbitmq_disk_space_available_limit_bytes')).toBe(50_000_000);
    expect(value(f, 'rabbitmq_resident_memory_limit_bytes')).toBeGreaterThan(
      value(f, 'rabbitmq_process_resident_memory_bytes'),
    );
    expect(value(f, 'rabbitmq_alarms_memory_used_watermark')).toBe(0);
    expect(value(f, 'rabbitmq_erlang_uptime_seconds')).toBeGreaterThan(0);
    expect(value(f, 'rabbitmq_connections_opened_total')).toBe(2);
    expect(value(f, 'rabbitmq_connections_closed_total')).toBe(0);
    expect(value(f, 'rabbitmq_channels_opened_total')).toBe(3);
    expect(value(f, 'rabbitmq_queues_created_total')).toBe(3);
    expect(value(f, 'rabbitmq_queues_declared_total')).toBeGreaterThanOrEqual(3);

    const extra = await withTimeout(amqp.connect(broker.url), WAIT_MS, 'connect');
    await extra.close();
    await waitFor(
      async () => value(await scrape('/metrics'), 'rabbitmq_connections_closed_total') === 1,
      'the closed connection counted',
      WAIT_MS,
      20,
    );
  });
});
