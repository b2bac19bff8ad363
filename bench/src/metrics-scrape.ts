/**
 * `node bench/src/metrics-scrape.ts`: what one Prometheus scrape of `GET /metrics` (per queue: `/metrics/per-object`, the largest) costs on a node
 * with many queues (issue 21 item 6: "cheap to scrape with 10,000 queues").
 *
 * Starts one `styx server` (fresh temp data dir, management API on a free loopback port), declares
 * N durable queues — one in ten with a dead-letter exchange (at-most-once and at-least-once
 * alternately, so their dead-letter series are written), the rest plain — publishes one message to
 * each, then scrapes /metrics/per-object S times in a row after a few unmeasured warm-up scrapes, and prints
 * the scrape time as the client sees it (request to last byte, loopback) at p50/p99/max, the body
 * size and the number of sample lines. The node is stopped and its data dir removed at the end.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as styx from '@styx/client';
import { freeLoopbackPort } from './brokers/free-port.ts';
import { startStyxNode } from './brokers/styx-node.ts';
import { declareDurableQueues } from './declare-on-node.ts';
import { positiveIntOption } from './int-option.ts';

const USAGE = `Usage: node bench/src/metrics-scrape.ts [options]

Options:
  --queues N     queues to declare (default: 10000)
  --scrapes N    measured scrapes (default: 30), after 3 unmeasured ones
  --json         print the figures as one JSON object instead of text
  -h, --help     this help`;

const WARM_UP_SCRAPES = 3;
/** Linux's USER_HZ, the unit of /proc/PID/stat's CPU times. */
const CLOCK_TICKS_PER_SECOND = 100;

function fail(message: string): never {
  process.stderr.write(`metrics-scrape: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function positiveInt(value: string | undefined, fallback: number, name: string): number {
  return positiveIntOption(value, fallback, name, fail);
}

function queueName(i: number): string {
  return `bench.q.${String(i).padStart(5, '0')}`;
}

/** CPU time (user + system) the process `pid` has used so far, ms (Linux: /proc/PID/stat). */
async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command (which may hold spaces) start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] as number;
}

async function main(): Promise<void> {
  let values: ReturnType<typeof parse>['values'];
  function parse() {
    return parseArgs({
      args: process.argv.slice(2).filter((a) => a !== '--'),
      strict: true,
      options: {
        queues: { type: 'string' },
        scrapes: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  }
  try {
    values = parse().values;
  } catch (err) {
    fail((err as Error).message);
  }
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const queues = positiveInt(values.queues, 10_000, 'queues');
  const scrapes = positiveInt(values.scrapes, 30, 'scrapes');

  const dataDir = await mkdtemp(join(tmpdir(), 'styx-metrics-bench-'));
  const managementPort = await freeLoopbackPort();
  const node = await startStyxNode('metrics-bench', [
    '--data-dir',
    dataDir,
    '--port',
    '0',
    '--management-port',
    String(managementPort),
  ]);
  try {
    const conn = await styx.connect(node.url);
    const ch = await conn.createConfirmChannel();
    await ch.assertExchange('bench.dlx', 'fanout', { durable: true });
    await ch.assertQueue('bench.dlq', { durable: true });
    await ch.bindQueue('bench.dlq', 'bench.dlx', '');

    const declareStart = performance.now();
    const names = Array.from({ length: queues }, (_, i) => queueName(i));
    await declareDurableQueues(conn, names, {
      argumentsOf: (i) =>
        i % 10 === 0
          ? {
              'x-dead-letter-exchange': 'bench.dlx',
              'x-dead-letter-strategy': i % 20 === 0 ? 'at-least-once' : 'at-most-once',
            }
          : {},
      onProgress: (declared) => process.stderr.write(`\rdeclared ${declared}/${queues}`),
    });
    const declareSeconds = (performance.now() - declareStart) / 1000;
    for (let i = 0; i < queues; i++) {
      ch.sendToQueue(queueName(i), Buffer.from('x'));
      if (i % 1000 === 999) await ch.waitForConfirms();
    }
    await ch.waitForConfirms();
    process.stderr.write(`\rdeclared ${queues} queues in ${declareSeconds.toFixed(1)} s, one message each\n`);

    const url = `http://127.0.0.1:${managementPort}/metrics/per-object`;
    let bytes = 0;
    let lines = 0;
    const times: number[] = [];
    let cpuBefore = 0;
    for (let i = 0; i < WARM_UP_SCRAPES + scrapes; i++) {
      if (i === WARM_UP_SCRAPES) cpuBefore = await cpuMs(node.pid);
      const start = performance.now();
      const response = await fetch(url).catch((err: unknown) => {
        const cause = (err as { cause?: unknown }).cause;
        throw new Error(
          `GET /metrics/per-object failed (${String(cause ?? err)}); node alive: ${node.alive()}\n${node
            .recentLogs()
            .filter((l) => !l.includes('"level":30'))
            .slice(-5)
            .join('\n')}`,
        );
      });
      const body = await response.text();
      const ms = performance.now() - start;
      if (response.status !== 200) throw new Error(`GET /metrics/per-object answered ${response.status}`);
      if (i >= WARM_UP_SCRAPES) times.push(ms);
      bytes = Buffer.byteLength(body);
      lines = 0;
      for (const line of body.split('\n')) if (line !== '' && !line.startsWith('#')) lines++;
    }
    // The node's CPU per scrape: what a scrape costs it whatever else runs on the machine (an idle
    // node's own ticks are included, a few ms over the run).
    const cpuPerScrapeMs = ((await cpuMs(node.pid)) - cpuBefore) / scrapes;
    await conn.close();
    const sorted = [...times].sort((a, b) => a - b);
    const figures = {
      queues,
      scrapes,
      p50Ms: Number(percentile(sorted, 50).toFixed(1)),
      p99Ms: Number(percentile(sorted, 99).toFixed(1)),
      maxMs: Number((sorted.at(-1) as number).toFixed(1)),
      nodeCpuMsPerScrape: Number(cpuPerScrapeMs.toFixed(1)),
      loadAverage1m: Number(loadavg()[0]?.toFixed(1)),
      bytes,
      sampleLines: lines,
    };
    if (values.json === true) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      process.stdout.write(
        `GET /metrics/per-object with ${queues} queues, ${scrapes} scrapes: p50 ${figures.p50Ms} ms, p99 ${figures.p99Ms} ms, ` +
          `max ${figures.maxMs} ms; node CPU ${figures.nodeCpuMsPerScrape} ms per scrape; ` +
          `${(bytes / 1024 / 1024).toFixed(2)} MiB, ${lines} samples (load average ${figures.loadAverage1m})\n`,
      );
    }
  } finally {
    await node.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `metrics-scrape: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
