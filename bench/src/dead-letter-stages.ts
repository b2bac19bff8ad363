/**
 * `node bench/src/dead-letter-stages.ts`: where an expiring message's lateness goes (issue 28 item
 * 9: p99 under 20 ms at 5k/s while publishers run), stage by stage.
 *
 * Starts one `styx server` (or a cluster of `--nodes`, clients on node 1) with the management API
 * on, declares source queue (x-message-ttl, a DLX, `--strategy`) → fanout DLX → target queue with
 * a consumer (prefetch 1,000, acking each, as scenario c), publishes `--rate` msgs/s with confirms
 * for `--seconds`, waits until every copy arrived, and prints the client's lateness (arrival −
 * publish − TTL: from the client's clock, so the publish's trip to the broker counts too) beside the
 * broker's own stages from `styx_dead_letter_stage_seconds`, added up over the nodes and counted
 * from just before the stream: deadline → the entry that expired the message (`expiry_proposed`),
 * → its commit (`expiry_committed`), → the copy committed at the target (`copy_committed`). What is
 * left of the client's lateness is the delivery to the consumer. Then broker CPU per message
 * (every node, the stream's window). The nodes are stopped and their data removed at the end.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as styx from '@styx/client';
import { freeLoopbackPort } from './brokers/free-port.ts';
import { processTreeCpuMs } from './brokers/process-stats.ts';
import { startStyxCluster } from './brokers/styx-cluster.ts';
import type { StyxNode } from './brokers/styx-node.ts';
import { startStyxNode } from './brokers/styx-node.ts';
import { positiveIntOption } from './int-option.ts';
import type { StageHistogram } from './stage-histograms.ts';
import {
  addStageHistograms,
  parseStageHistograms,
  stageCount,
  stageQuantile,
  subtractStageHistograms,
} from './stage-histograms.ts';

const USAGE = `Usage: node bench/src/dead-letter-stages.ts [options]

Options:
  --strategy S   at-most-once (default) or at-least-once
  --rate N       messages published per second (default: 5000)
  --seconds N    how long to publish (default: 4)
  --ttl-ms N     the source queue's x-message-ttl (default: 1000)
  --nodes N      1 (default) or a cluster of N nodes, clients on node 1
  -h, --help     this help`;

/** Unconfirmed messages allowed while publishing (scenario c's window). */
const WINDOW = 1000;
/** The target consumer's prefetch (scenario c's). */
const PREFETCH = 1000;
/** How long to wait for the copies once publishing ended, beyond the TTL, ms. */
const DRAIN_TIMEOUT_MS = 60_000;

function fail(message: string): never {
  process.stderr.write(`dead-letter-stages: ${message}\n${USAGE}\n`);
  process.exit(2);
}

function positiveInt(value: string | undefined, fallback: number, name: string): number {
  return positiveIntOption(value, fallback, name, fail);
}

interface Options {
  readonly strategy: 'at-most-once' | 'at-least-once';
  readonly rate: number;
  readonly seconds: number;
  readonly ttlMs: number;
  readonly nodes: number;
}

function options(): Options | undefined {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({
      args: process.argv.slice(2).filter((a) => a !== '--'),
      strict: true,
      options: {
        strategy: { type: 'string' },
        rate: { type: 'string' },
        seconds: { type: 'string' },
        'ttl-ms': { type: 'string' },
        nodes: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help === true) return undefined;
  const strategy = (values.strategy as string | undefined) ?? 'at-most-once';
  if (strategy !== 'at-most-once' && strategy !== 'at-least-once') {
    fail(`--strategy must be at-most-once or at-least-once, got '${strategy}'`);
  }
  return {
    strategy,
    rate: positiveInt(values.rate as string | undefined, 5000, 'rate'),
    seconds: positiveInt(values.seconds as string | undefined, 4, 'seconds'),
    ttlMs: positiveInt(values['ttl-ms'] as string | undefined, 1000, 'ttl-ms'),
    nodes: positiveInt(values.nodes as string | undefined, 1, 'nodes'),
  };
}

/** Every node's stage histograms, added up. */
async function scrapeStages(nodes: readonly StyxNode[]): Promise<StageHistogram[]> {
  let sum: StageHistogram[] = [];
  for (const node of nodes) {
    if (node.managementPort === undefined) throw new Error(`node ${node.name} has no management API`);
    const response = await fetch(`http://127.0.0.1:${node.managementPort}/metrics`);
    if (response.status !== 200) throw new Error(`GET /metrics of ${node.name} answered ${response.status}`);
    sum = addStageHistograms(sum, parseStageHistograms(await response.text()));
  }
  return sum;
}

function quantileMs(sorted: readonly number[], q: number): string {
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return (sorted[i] as number).toFixed(1);
}

function stageMs(h: StageHistogram, q: number): string {
  const s = stageQuantile(h, q);
  return s === undefined ? '-' : (s * 1000).toFixed(1);
}

async function startNodes(root: string, count: number): Promise<StyxNode[]> {
  if (count > 1) return (await startStyxCluster(count, root, [])).nodes;
  const managementPort = await freeLoopbackPort();
  const args = ['--data-dir', join(root, 'node-1'), '--host', '127.0.0.1', '--port', '0'];
  return [
    await startStyxNode('styx', [...args, '--management-port', String(managementPort), '--amqp-port', '0']),
  ];
}

async function stream(nodes: readonly StyxNode[], o: Options): Promise<void> {
  const first = nodes[0] as StyxNode;
  const conn = await styx.connect(first.url);
  const ch = await conn.createConfirmChannel();
  await ch.assertExchange('stages.dlx', 'fanout', { durable: true });
  await ch.assertQueue('stages.dlq', { durable: true });
  await ch.bindQueue('stages.dlq', 'stages.dlx', '');
  await ch.assertQueue('stages.source', {
    durable: true,
    arguments: {
      'x-message-ttl': o.ttlMs,
      'x-dead-letter-exchange': 'stages.dlx',
      'x-dead-letter-strategy': o.strategy,
      'x-overflow': 'reject-publish',
    },
  });
  const total = o.rate * o.seconds;
  const lateness: number[] = [];
  let firstArrival = 0;
  let lastArrival = 0;
  const consumer = await conn.createChannel();
  await consumer.prefetch(PREFETCH);
  await consumer.consume('stages.dlq', (msg) => {
    if (msg === null) return;
    const now = Date.now();
    if (lateness.length === 0) firstArrival = now;
    lastArrival = now;
    lateness.push(now - msg.content.readDoubleLE(0) - o.ttlMs);
    consumer.ack(msg);
  });

  const before = await scrapeStages(nodes);
  const pids = nodes.map((n) => n.pid);
  const cpuBefore = processTreeCpuMs(pids) ?? Number.NaN;
  const start = performance.now();
  let sent = 0;
  let confirmed = 0;
  let nacked = 0;
  const body = Buffer.alloc(64);
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * o.rate));
    while (sent < due && sent - confirmed < WINDOW) {
      body.writeDoubleLE(Date.now(), 0);
      ch.sendToQueue('stages.source', Buffer.from(body), {}, (err) => {
        if (err !== null) nacked++;
        confirmed++;
      });
      sent++;
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await ch.waitForConfirms().catch(() => undefined); // nacks are counted, and fail below
  if (nacked > 0) throw new Error(`${nacked} of ${total} publishes nacked`);
  const published = performance.now();
  const drainBy = published + o.ttlMs + DRAIN_TIMEOUT_MS;
  while (lateness.length < total) {
    if (performance.now() > drainBy) throw new Error(`${lateness.length}/${total} copies arrived`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const cpuMs = (processTreeCpuMs(pids) ?? Number.NaN) - cpuBefore;
  const stages = subtractStageHistograms(await scrapeStages(nodes), before);
  await conn.close();

  lateness.sort((a, b) => a - b);
  const publishSeconds = (published - start) / 1000;
  const out = [
    `${o.nodes} node(s), ${o.strategy}, ${total} messages at ${Math.round(total / publishSeconds)} msgs/s, TTL ${o.ttlMs} ms`,
    `dead-lettered at ${Math.round((total * 1000) / Math.max(1, lastArrival - firstArrival))} msgs/s (first to last arrival)`,
    `broker CPU ${((cpuMs * 1000) / total).toFixed(1)} µs/msg`,
    `${'stage'.padEnd(72)} ${'n'.padStart(7)}  p50 ms  p99 ms`,
    `${'client: lateness (arrival − publish − TTL)'.padEnd(72)} ${String(lateness.length).padStart(7)} ${quantileMs(lateness, 0.5).padStart(7)} ${quantileMs(lateness, 0.99).padStart(7)}`,
  ];
  for (const h of stages) {
    if (stageCount(h) === 0) continue;
    out.push(
      `${`broker: ${h.stage}`.padEnd(72)} ${String(stageCount(h)).padStart(7)} ${stageMs(h, 0.5).padStart(7)} ${stageMs(h, 0.99).padStart(7)}`,
    );
  }
  out.push(
    '(broker stages: estimated from histogram buckets; copy_committed counts from the removing',
    " entry's ts, so it holds expiry_committed; the client's lateness adds the publish's trip and the delivery)",
  );
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main(): Promise<void> {
  const o = options();
  if (o === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const root = await mkdtemp(join(tmpdir(), 'styx-dead-letter-stages-'));
  let nodes: StyxNode[] = [];
  try {
    nodes = await startNodes(root, o.nodes);
    await stream(nodes, o);
  } finally {
    await Promise.all(nodes.map((n) => n.stop()));
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`dead-letter-stages: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
