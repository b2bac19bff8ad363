/**
 * `node bench/src/failover-storm.ts`: failover of many queues on a 3-node Styx cluster, and the
 * node's return (issue 28 item 4: "failover of thousands of queues without an election storm").
 *
 * Starts 3 nodes (fresh temp data dirs), declares N replicated queues through node 1, puts one
 * confirmed message into each, lets the groups quiesce and reads the cluster's idle CPU. Then:
 * 1. Kill: node 1 is SIGKILLed. A client of node 2 publishes to every queue until each confirms
 *    (failover.ts's retrying channel). Measured: kill → every queue writable (and the p50/p99 of
 *    the queues' times), what the survivors' groups did to get there (pre-vote rounds, elections
 *    started and won — started minus won are split or lost votes —, terms moved per queue that
 *    lost its leader), their CPU and their event loops' worst delay.
 * 2. Return: node 1 starts again on its data. The metadata leader rebalances queue leaders once it
 *    settles (queue-replica-ops.ts). Meanwhile the client publishes round after round to every queue
 *    through node 2. Measured: restart → node 1 leads its share again, the same election figures
 *    on all three nodes, the slowest publish of those rounds, CPU and event-loop delay.
 * The nodes are stopped and their data removed at the end.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import * as styx from '@styx/client';
import type { BenchConnection } from './adapters/client-api.ts';
import { processTreeCpuMs } from './brokers/process-stats.ts';
import type { StyxClusterNode } from './brokers/styx-cluster.ts';
import { startStyxCluster } from './brokers/styx-cluster.ts';
import { startStyxNode } from './brokers/styx-node.ts';
import { declareDurableQueues } from './declare-on-node.ts';
import { positiveIntOption } from './int-option.ts';
import { RETRY_MS, RetryingChannel } from './scenarios/support/retrying-channel.ts';

const USAGE = `Usage: node bench/src/failover-storm.ts [options]

Options:
  --queues N     replicated queues to declare (default: 10000)
  --json         print the figures as one JSON object instead of text
  -h, --help     this help`;

const NODES = 3;
/** Pause after declaring before the idle reading (groups quiesce, GC settles), ms. */
const SETTLE_MS = 10_000;
/** The idle reading's window, ms. */
const IDLE_WINDOW_MS = 5_000;
/** Give up on a phase after this long, ms. */
const PHASE_TIMEOUT_MS = 180_000;
/** How often the return phase looks at who leads, ms. */
const LEADER_POLL_MS = 1_000;
/** Node 1 leads its share again when it leads at least this fraction of N / 3. */
const BALANCED_SHARE = 0.9;

function fail(message: string): never {
  process.stderr.write(`failover-storm: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function log(text: string): void {
  process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${text}\n`);
}

function queueName(i: number): string {
  return `storm.q.${String(i).padStart(5, '0')}`;
}

/** The node-wide sums of `/metrics` (aggregated view: per-queue families summed, no labels). */
interface Scrape {
  readonly led: number;
  readonly preVotes: number;
  readonly elections: number;
  readonly electionsWon: number;
  readonly termSum: number;
  /** Worst / p99 event-loop delay since the previous scrape, ms (undefined on the first). */
  readonly lagMaxMs: number | undefined;
  readonly lagP99Ms: number | undefined;
}

/** One scrape of a node's aggregated `/metrics`. */
async function scrape(node: StyxClusterNode): Promise<Scrape> {
  return scrapeWithin(node, 30_000);
}

/** `scrape`, giving up after `timeoutMs`. */
async function scrapeWithin(node: StyxClusterNode, timeoutMs: number): Promise<Scrape> {
  const started = performance.now();
  const response = await fetch(`http://127.0.0.1:${node.managementPort}/metrics`, {
    signal: AbortSignal.timeout(timeoutMs),
  }).catch((err: unknown) => {
    const ms = Math.round(performance.now() - started);
    throw new Error(`${node.name} /metrics: ${(err as Error).message} (after ${ms} ms)`, { cause: err });
  });
  if (!response.ok) throw new Error(`${node.name} /metrics answered ${response.status}`);
  const values = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#') || line.includes('{')) continue;
    const space = line.lastIndexOf(' ');
    values.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  const ms = (name: string): number | undefined => {
    const v = values.get(name);
    return v === undefined ? undefined : v * 1000;
  };
  return {
    led: values.get('rabbitmq_queues') ?? 0,
    preVotes: values.get('styx_raft_pre_votes_total') ?? 0,
    elections: values.get('styx_raft_elections_total') ?? 0,
    electionsWon: values.get('styx_raft_elections_won_total') ?? 0,
    termSum: values.get('rabbitmq_raft_term_total') ?? 0,
    lagMaxMs: ms('nodejs_eventloop_lag_max_seconds'),
    lagP99Ms: ms('nodejs_eventloop_lag_p99_seconds'),
  };
}

/** A node's figures as it starts. */
const ZERO: Scrape = {
  led: 0,
  preVotes: 0,
  elections: 0,
  electionsWon: 0,
  termSum: 0,
  lagMaxMs: undefined,
  lagP99Ms: undefined,
};

/** What a phase cost: elections on the nodes asked (deltas), their CPU and event-loop delay. */
interface PhaseFigures {
  readonly preVotes: number;
  readonly elections: number;
  readonly electionsWon: number;
  readonly termsMoved: number;
  readonly cpuMs: number;
  readonly lagMaxMs: number;
  readonly lagP99Ms: number;
}

function phaseFigures(before: readonly Scrape[], after: readonly Scrape[], cpuMs: number): PhaseFigures {
  let preVotes = 0;
  let elections = 0;
  let electionsWon = 0;
  let termsMoved = 0;
  let lagMaxMs = 0;
  let lagP99Ms = 0;
  after.forEach((a, i) => {
    const b = before[i];
    preVotes += a.preVotes - (b?.preVotes ?? 0);
    elections += a.elections - (b?.elections ?? 0);
    electionsWon += a.electionsWon - (b?.electionsWon ?? 0);
    termsMoved += a.termSum - (b?.termSum ?? 0);
    lagMaxMs = Math.max(lagMaxMs, a.lagMaxMs ?? 0);
    lagP99Ms = Math.max(lagP99Ms, a.lagP99Ms ?? 0);
  });
  return { preVotes, elections, electionsWon, termsMoved, cpuMs, lagMaxMs, lagP99Ms };
}

function cpuOf(nodes: readonly StyxClusterNode[]): number {
  const ms = processTreeCpuMs(nodes.map((n) => n.pid));
  if (ms === undefined) throw new Error('cannot read the nodes’ CPU times (/proc)');
  return ms;
}

function percentile(sorted: readonly number[], p: number): number {
  const i = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return sorted[Math.max(0, i)] ?? 0;
}

async function waitFor(what: string, done: () => boolean | Promise<boolean>, pollMs = 20): Promise<void> {
  const deadline = performance.now() + PHASE_TIMEOUT_MS;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${PHASE_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** Declare attempts through node 1 before giving up. */
const DECLARE_ATTEMPTS = 10;

/**
 * Declares `names` through `node`; resolves with the connection used. A connection the node closes
 * (on a loaded machine a forwarded metadata change can time out: 541) is opened again and the
 * declares repeated (they are idempotent), DECLARE_ATTEMPTS times at most.
 */
async function declareThrough(node: StyxClusterNode, names: readonly string[]): Promise<styx.Connection> {
  for (let attempt = 1; ; attempt++) {
    const conn = await styx.connect(node.url);
    conn.on('error', (err: Error) => log(`${node.name} connection: ${err.message}`));
    try {
      await declareDurableQueues(conn, names, { onProgress: (n) => log(`declared ${n}/${names.length}`) });
      return conn;
    } catch (err) {
      await conn.close().catch(() => undefined);
      if (attempt === DECLARE_ATTEMPTS) throw err;
      log(`declaring failed (${(err as Error).message}); again`);
    }
  }
}

/** The command line: how many queues, and whether to print JSON; prints the usage and exits on --help. */
function readArgs(): { readonly queues: number; readonly json: boolean } {
  const parsed = (() => {
    try {
      return parseArgs({
        args: process.argv.slice(2).filter((a) => a !== '--'),
        options: {
          help: { type: 'boolean', short: 'h' },
          json: { type: 'boolean' },
          queues: { type: 'string' },
        },
        strict: true,
      }).values;
    } catch (err) {
      return fail((err as Error).message);
    }
  })();
  if (parsed.help === true) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const queues = positiveIntOption(parsed.queues, 10_000, 'queues', fail);
  return { queues, json: parsed.json === true };
}

async function main(): Promise<void> {
  const { queues, json } = readArgs();
  const root = await mkdtemp(join(tmpdir(), 'styx-failover-storm-'));
  // Interrupted: exit, so styx-node.ts's exit listener SIGKILLs the nodes, and remove their data.
  process.on('exit', () => rmSync(root, { recursive: true, force: true }));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));
  // Metrics rendered per scrape (not served from the 5 s cache): each phase reads its own figures.
  const { nodes } = await startStyxCluster(NODES, root, [0, 0, 0], ['--metrics-cache-seconds', '0']);
  const connections: styx.Connection[] = [];
  try {
    const [first, second, third] = nodes as [StyxClusterNode, StyxClusterNode, StyxClusterNode];
    log(`cluster of ${NODES} formed; declaring ${queues} queues through ${first.name}`);
    const names = Array.from({ length: queues }, (_, i) => queueName(i));
    const declareStart = performance.now();
    const declareCpu0 = cpuOf(nodes);
    const conn1 = await declareThrough(first, names);
    const declareSeconds = (performance.now() - declareStart) / 1000;
    const declareCpuMs = cpuOf(nodes) - declareCpu0;
    const body = Buffer.alloc(64, 1);
    const ch1 = await conn1.createConfirmChannel();
    for (let i = 0; i < queues; i++) {
      ch1.sendToQueue(names[i] as string, body, { persistent: true });
      if (i % 1000 === 999) await ch1.waitForConfirms();
    }
    await ch1.waitForConfirms();
    log(`declared in ${declareSeconds.toFixed(1)} s, one message each; settling ${SETTLE_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const idleCpu0 = cpuOf(nodes);
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const idleCpuPercent = ((cpuOf(nodes) - idleCpu0) / IDLE_WINDOW_MS) * 100;

    // ---------------------------------------------------------------- 1. kill node 1
    await conn1.close(); // a client of node 1 would only see its socket die
    const survivors = [second, third];
    const conn2 = await styx.connect(second.url);
    connections.push(conn2);
    conn2.on('error', (err: Error) => log(`node 2 connection: ${err.message}`));
    const publisher = new RetryingChannel(conn2 as unknown as BenchConnection);
    const ledBefore = await Promise.all(nodes.map(scrape)); // also starts/resets the lag monitors
    await new Promise((resolve) => setTimeout(resolve, 200));
    const killBase = await Promise.all(survivors.map(scrape));
    const killCpu0 = cpuOf(survivors);
    log(`leaders before the kill: ${ledBefore.map((s) => s.led).join(' / ')}; killing ${first.name}`);
    const killedAt = performance.now();
    process.kill(first.pid, 'SIGKILL');
    const times: number[] = [];
    await Promise.all(
      names.map(async (q) => {
        while (!(await publisher.publish(q, body))) await new Promise((r) => setTimeout(r, RETRY_MS));
        times.push(performance.now() - killedAt);
        if (times.length % 1000 === 0) log(`${times.length}/${queues} writable`);
      }),
    );
    const killCpuMs = cpuOf(survivors) - killCpu0;
    const killAfter = await Promise.all(survivors.map(scrape));
    times.sort((a, b) => a - b);
    const lostLeader = ledBefore[0]?.led ?? 0;
    const killPhase = phaseFigures(killBase, killAfter, killCpuMs);
    const kill = {
      queuesThatLostTheirLeader: lostLeader,
      // Each survivor holds a replica of every queue: one election per queue moves 2 terms in all.
      termsPerQueue: Number((killPhase.termsMoved / (survivors.length * Math.max(1, lostLeader))).toFixed(2)),
      allWritableMs: Math.round(times.at(-1) ?? 0),
      p50Ms: Math.round(percentile(times, 50)),
      p99Ms: Math.round(percentile(times, 99)),
      ...killPhase,
    };
    log(`kill phase: ${JSON.stringify(kill)}`);
    log(`every queue writable ${kill.allWritableMs} ms after the kill; idle reading with node 1 down`);
    // The queues idle again with node 1 down: do the groups it belongs to quiesce without it?
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const downCpu0 = cpuOf(survivors);
    await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
    const idleDownCpuPercent = ((cpuOf(survivors) - downCpu0) / IDLE_WINDOW_MS) * 100;

    // ---------------------------------------------------------------- 2. node 1 returns
    // The return phase's baseline (and lag windows) on the survivors; node 1 starts from zero.
    const returnBase = await Promise.all(survivors.map(scrape));
    const returnCpu0 = cpuOf(survivors);
    const restartAt = performance.now();
    await first.stop(); // already dead: resolves at once
    const back = Object.assign(await startStyxNode(first.name, first.serverArgs), {
      managementPort: first.managementPort,
      serverArgs: first.serverArgs,
    });
    nodes[0] = back;
    const listeningMs = Math.round(performance.now() - restartAt);
    log(`${first.name} listening again after ${listeningMs} ms; waiting for it to lead its share`);
    await scrape(back); // starts its lag monitor
    // Publish rounds through node 2 while leaders move: the slowest publish is the unavailability seen.
    let rounds = 0;
    let slowestPublishMs = 0;
    let publishing = true;
    const publishRounds = (async () => {
      while (publishing) {
        await Promise.all(
          names.map(async (q) => {
            const t0 = performance.now();
            while (!(await publisher.publish(q, body))) await new Promise((r) => setTimeout(r, RETRY_MS));
            slowestPublishMs = Math.max(slowestPublishMs, performance.now() - t0);
          }),
        );
        rounds++;
      }
    })();
    const share = queues / NODES;
    let led1 = 0;
    let balancedMs = 0;
    await waitFor(
      `${first.name} leading ${Math.round(BALANCED_SHARE * 100)} % of its share`,
      async () => {
        // A node catching up 10,000 groups may answer /metrics late: a failed poll is reported and
        // the next one tried, and the phase's own deadline decides.
        const polled = await scrapeWithin(back, 10_000).catch((err: unknown) => {
          log(`${first.name} /metrics not read (${(err as Error).message}); polling on`);
          return undefined;
        });
        if (polled === undefined) return false;
        balancedMs = Math.round(performance.now() - restartAt);
        if (polled.led !== led1)
          log(
            `${first.name} leads ${polled.led} queues (${balancedMs} ms after its restart; ${rounds} publish rounds done)`,
          );
        led1 = polled.led;
        return led1 >= BALANCED_SHARE * share;
      },
      LEADER_POLL_MS,
    );
    log(`${first.name} leads ${led1} queues ${balancedMs} ms after its restart; one more publish round`);
    const roundsAtBalance = rounds;
    await waitFor('a publish round after the rebalance', () => rounds > roundsAtBalance + 1);
    publishing = false;
    await publishRounds;
    const returnCpuMs = cpuOf(nodes) - returnCpu0; // node 1's whole life since the restart included
    const returnAfter = await Promise.all(nodes.map(scrape));
    const ret = {
      listeningMs,
      balancedMs,
      ledAfter: returnAfter.map((s) => s.led),
      publishRounds: rounds,
      slowestPublishMs: Math.round(slowestPublishMs),
      // Node 1's counters restart from zero with its process; its terms are where it left them.
      ...phaseFigures(
        [{ ...ZERO, termSum: ledBefore[0]?.termSum ?? 0 }, ...returnBase],
        returnAfter,
        returnCpuMs,
      ),
    };
    const figures = {
      queues,
      declareSeconds: Number(declareSeconds.toFixed(1)),
      declareCpuMsPerQueue: Number((declareCpuMs / queues).toFixed(2)),
      idleCpuPercent: Number(idleCpuPercent.toFixed(1)),
      idleNode1DownCpuPercent: Number(idleDownCpuPercent.toFixed(1)),
      kill,
      return: ret,
      loadAverage1m: Number(loadavg()[0]?.toFixed(1)),
    };
    if (json) {
      process.stdout.write(`${JSON.stringify(figures)}\n`);
    } else {
      const lost = (f: PhaseFigures): number => f.elections - f.electionsWon;
      process.stdout.write(
        `${queues} queues on ${NODES} nodes: declared in ${figures.declareSeconds} s ` +
          `(${figures.declareCpuMsPerQueue} ms CPU per queue), idle ${figures.idleCpuPercent} % CPU\n` +
          `kill of node 1 (${kill.queuesThatLostTheirLeader} leaders there): every queue writable after ` +
          `${kill.allWritableMs} ms (p50 ${kill.p50Ms}, p99 ${kill.p99Ms}); survivors: ${kill.preVotes} pre-votes, ` +
          `${kill.elections} elections, ${kill.electionsWon} won, ${lost(kill)} lost or split, ` +
          `${kill.termsPerQueue} terms per queue that lost its leader; CPU ${Math.round(kill.cpuMs)} ms; event loop delay max ` +
          `${Math.round(kill.lagMaxMs)} ms, p99 ${Math.round(kill.lagP99Ms)} ms; then idle at ` +
          `${figures.idleNode1DownCpuPercent} % CPU with node 1 down\n` +
          `return of node 1: listening after ${ret.listeningMs} ms, leads ${ret.ledAfter[0]} queues after ` +
          `${ret.balancedMs} ms (leaders ${ret.ledAfter.join(' / ')}); ${ret.preVotes} pre-votes, ` +
          `${ret.elections} elections, ${ret.electionsWon} won, ${lost(ret)} lost or split, ` +
          `${ret.termsMoved} terms moved; slowest publish ${ret.slowestPublishMs} ms over ` +
          `${ret.publishRounds} rounds; CPU ${Math.round(ret.cpuMs)} ms; event loop delay max ` +
          `${Math.round(ret.lagMaxMs)} ms, p99 ${Math.round(ret.lagP99Ms)} ms ` +
          `(load average ${figures.loadAverage1m})\n`,
      );
    }
  } finally {
    await Promise.all(connections.map((c) => c.close().catch(() => undefined)));
    await Promise.all(nodes.map((n) => n.stop()));
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(
    `failover-storm: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
