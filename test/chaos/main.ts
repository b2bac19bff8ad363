// `npx -y pnpm@10 chaos`: the Jepsen-style run. Order of a run: network → cluster → workload and
// nemesis together for --minutes → heal everything → stop publishing → drain → check → report.
// Every namespace, rule and process the run made is removed on the way out, whatever the way out
// (the end, a failure, Ctrl-C): main registers one synchronous cleanup for all of them.
import { randomInt } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Options } from './args.ts';
import { parseOptions, USAGE } from './args.ts';
import type { CheckResult } from './checkers.ts';
import { checkAll, formatOp, windowFor } from './checkers.ts';
import { ChaosCluster } from './cluster.ts';
import { ChaosError, UsageError } from './errors.ts';
import { History, readHistory } from './history.ts';
import { DEFAULT_GAP_MS, describeFault, formatGap, Nemesis, planSchedule } from './nemesis.ts';
import { ChaosNetwork, preflight } from './network.ts';
import { seededRandom } from './random.ts';
import { buildReport, renderMarkdown, writeReport } from './report.ts';
import { ALL_QUEUES, TOPOLOGY, Workload } from './workload.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
const say = (text: string): void => {
  process.stderr.write(`${text}\n`);
};

/** Prints what a failed check needs to be understood: the problems with their history windows. */
function printFailures(checks: readonly CheckResult[], ops: Parameters<typeof windowFor>[0]): void {
  for (const check of checks) {
    if (check.valid) continue;
    say(`\n${check.checker}: ${check.problems.length} problem(s)`);
    for (const problem of check.problems.slice(0, 5)) {
      say(`  ${problem.kind} ${problem.id ?? ''} (${problem.queue ?? '?'}): ${problem.detail}`);
      for (const op of windowFor(ops, problem)) say(`    ${formatOp(op)}`);
    }
  }
}

function recheck(file: string): number {
  const ops = readHistory(file);
  const checks = checkAll(ops, TOPOLOGY);
  for (const check of checks)
    say(`${check.checker}: ${check.valid ? 'valid' : 'INVALID'} ${JSON.stringify(check.counts)}`);
  printFailures(checks, ops);
  return checks.every((c) => c.valid) ? 0 : 1;
}

async function runChaos(options: Options): Promise<number> {
  preflight();
  const startedAt = new Date();
  const runDir = resolve(
    REPO_ROOT,
    options.out,
    `${startedAt.toISOString().replace(/[:.]/g, '-')}-seed${options.seed}`,
  );
  mkdirSync(runDir, { recursive: true });
  // One fixed place: runs are one at a time (the network's lock), and a run that was SIGKILLed
  // leaves its nodes' data here for the next run to remove.
  const dataRoot = join(tmpdir(), 'styx-chaos-data');
  let network: ChaosNetwork | undefined;
  let cluster: ChaosCluster | undefined;
  const cleanup = (): void => {
    cluster?.killAllSync();
    if (network === undefined) return; // not ours: another run holds the network and the data
    network.destroySync();
    rmSync(dataRoot, { recursive: true, force: true });
  };
  process.on('exit', cleanup);
  const interrupted = (signal: NodeJS.Signals): void => {
    say(`\n${signal}: stopping the run and removing its namespaces, rules and processes`);
    cleanup();
    process.exit(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);

  const schedule = planSchedule({
    seed: options.seed,
    faults: options.faults,
    nodes: options.nodes,
    durationMs: options.minutes * 60_000,
    queues: ALL_QUEUES.length,
    overlap: options.overlap,
    gapMs: options.gapMs,
  });
  say(
    `seed ${options.seed}: ${options.nodes} nodes, ${options.minutes} min, faults ${options.faults.join(',') || 'none'}` +
      `${options.overlap ? ' (overlapping)' : ''}, quiet gap ${formatGap(options.gapMs)}, workload ${options.workload} at ${options.rate} msg/s` +
      (options.compactEvery === undefined
        ? ''
        : `, queue logs compacting every ${options.compactEvery} entries`) +
      (options.break === undefined ? '' : `; every node deliberately broken: ${options.break}`),
  );
  say(`results in ${runDir}`);
  for (const fault of schedule) say(`  ${describeFault(fault)}`);

  network = await ChaosNetwork.create(options.nodes);
  rmSync(dataRoot, { recursive: true, force: true });
  mkdirSync(dataRoot, { recursive: true });
  say(`network: ${network.hosts.map((h) => `n${h.index}=${h.ip} (${h.namespace})`).join(', ')}`);
  cluster = await ChaosCluster.start(
    network,
    dataRoot,
    join(runDir, 'nodes.log'),
    options.break,
    options.compactEvery,
  );
  say('cluster formed');
  const history = new History(join(runDir, 'history.jsonl'));
  const random = seededRandom(options.seed ^ 0x5eed);
  const workload = new Workload(cluster, history, {
    ratePerSecond: options.rate,
    random,
    kind: options.workload,
  });
  await workload.declare();
  await workload.start();
  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'workload' });

  // With --gap, a long heal pushes the schedule back rather than eat the next quiet gap (the
  // default gap keeps CI's seeds on their planned times).
  const quietAfterHealMs = options.gapMs === DEFAULT_GAP_MS ? 0 : options.gapMs[0];
  const nemesis = new Nemesis(cluster, network, history, schedule, ALL_QUEUES, quietAfterHealMs);
  const stopNemesis = new AbortController();
  const progress = startProgress(history, nemesis, options.minutes * 60_000);
  const sampler = startSampler(history, cluster);
  const nemesisDone = nemesis.run(stopNemesis.signal);
  // The nemesis plans its last fault to end before the workload's time is up; a nemesis that fails
  // (a node that will not restart) ends the run at once, as a failure of the harness.
  const workloadTime = sleep(options.minutes * 60_000);
  await Promise.race([workloadTime, nemesisDone.then(() => workloadTime)]);
  stopNemesis.abort();
  await nemesisDone;

  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'final-heal' });
  progress.note('healing everything');
  await nemesis.healAll();
  // A cluster that does not come back together after every fault is healed is a finding, not a
  // harness failure: the run goes on to check and report what it has.
  let formed = true;
  try {
    await cluster.waitFormed(120_000);
  } catch (error) {
    formed = false;
    const reason = error instanceof Error ? error.message : String(error);
    history.append({ type: 'info', process: 'harness', f: 'phase', value: `not formed: ${reason}` });
    say(`\nthe cluster did not form again within 120 s of the last heal: ${reason}`);
  }
  await workload.stopPublishers(30_000);
  // The drain's bounds grow with what is queued (a deep backlog): 120 s, plus 10 ms a message.
  const depth = await workload.depthTotal();
  const drainMs = (formed ? 120_000 : 30_000) + depth * 10;
  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'drain' });
  history.append({
    type: 'info',
    process: 'harness',
    f: 'depth',
    value: { total: depth, drainBoundMs: drainMs },
  });
  progress.note(`draining ${depth} messages (bound ${Math.round(drainMs / 1000)} s)`);
  await workload.startConsumers();
  const drained = await workload.drain(drainMs);
  await workload.close();
  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'sweep' });
  progress.note('sweeping what the consumers left');
  const swept = await workload.sweep(3_000, 60_000 + depth * 2).catch((error: unknown) => {
    say(`\nthe final sweep failed: ${error instanceof Error ? error.message : String(error)}`);
    return -1;
  });
  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'replica-check' });
  progress.note('asking each node GET /api/checks/queues');
  await replicaCheck(cluster, history);
  history.append({ type: 'info', process: 'harness', f: 'phase', value: 'done' });
  progress.stop();
  sampler.stop();
  await history.close();
  await cluster.stop();

  const checks = checkAll(history.ops, TOPOLOGY);
  const report = buildReport({
    seed: options.seed,
    nodes: options.nodes,
    minutes: options.minutes,
    faults: options.faults,
    ratePerSecond: options.rate,
    startedAt,
    durationS: Math.round((Date.now() - startedAt.getTime()) / 1000),
    drained,
    formed,
    swept,
    ops: history.ops,
    checks,
    schedule,
    testBreak: options.break,
    workload: options.workload,
    overlap: options.overlap,
    gapMs: options.gapMs,
    compactEvery: options.compactEvery,
  });
  const files = await writeReport(runDir, report);
  process.stdout.write(renderMarkdown(report));
  if (!report.valid) {
    say(`\nFAIL — seed ${options.seed}; replay: ${report.replay}`);
    if (!formed) say('the cluster did not form again after the last heal (see the samples in the history)');
    if (!drained) say('the queues did not drain after the last heal (final depths above)');
    say('schedule:');
    for (const fault of schedule) say(`  ${describeFault(fault)}`);
    say("(each problem's history window is in the report above)");
  }
  if (report.replicaCheck === 'unavailable (404)')
    say(
      '\nreplica check NOT DONE: every node answered 404 to GET /api/checks/queues (the endpoint is ' +
        'not in this build); the run is judged without it',
    );
  say(`\nreport: ${files.markdown}\n        ${files.json}\nhistory: ${join(runDir, 'history.jsonl')}`);
  if (report.broken !== undefined) {
    say(
      report.broken.caught
        ? `\nthe deliberately broken broker (${report.broken.name}) was caught by ${report.broken.checker}`
        : `\nthe deliberately broken broker (${report.broken.name}) was NOT caught by ${report.broken.checker}`,
    );
    return report.broken.caught ? 0 : 1;
  }
  return report.valid ? 0 : 1;
}

/**
 * Each node's own view of its queues' replicas, GET /api/checks/queues (200 ok, 503 not), recorded
 * in the history for the replica-check checker. A node that says not ok is asked again for up to
 * 30 s (a replica restarted at the last heal may still be catching up); a 404 is recorded as it is.
 */
async function replicaCheck(cluster: ChaosCluster, history: History): Promise<void> {
  const ask = async (name: string) => {
    try {
      const { status, body } = await cluster.apiAnyStatus(name, '/api/checks/queues', 10_000);
      const answer = (typeof body === 'object' && body !== null ? body : {}) as {
        ok?: boolean;
        queues?: {
          vhost?: string;
          name?: string;
          ok?: boolean;
          status?: string;
          reason?: string;
          problems?: string[];
        }[];
      };
      return {
        node: name,
        status,
        ...(typeof answer.ok === 'boolean' ? { ok: answer.ok } : {}),
        bad: (answer.queues ?? [])
          .filter((q) => q.ok !== true)
          .map((q) => ({
            vhost: q.vhost,
            name: q.name,
            // A queue whose replicas never stood at one applied index has no problems, only a reason.
            problems:
              q.status === 'not_compared'
                ? [`not compared: ${q.reason ?? 'replicas never aligned'}`]
                : (q.problems ?? []),
          })),
        ...(status !== 200 && status !== 503 ? { error: String(body).slice(0, 200) } : {}),
      };
    } catch (error) {
      return { node: name, status: 0, error: error instanceof Error ? error.message : String(error) };
    }
  };
  for (const node of cluster.nodes) {
    const deadline = Date.now() + 30_000;
    let answer = await ask(node.name);
    while (answer.status !== 200 && answer.status !== 404 && Date.now() < deadline) {
      await sleep(2_000);
      answer = await ask(node.name);
    }
    history.append({ type: 'info', process: 'harness', f: 'replica-check', value: answer });
  }
}

/** The live progress line: one rewritten line on a terminal, a line every 10 s otherwise. */
function startProgress(history: History, nemesis: Nemesis, totalMs: number) {
  const counts = { invoke: 0, ok: 0, fail: 0, unknown: 0, deliver: 0 };
  history.onOp((op) => {
    if (op.f === 'publish' && op.type !== 'info') counts[op.type]++;
    else if (op.f === 'deliver') counts.deliver++;
  });
  const tty = process.stderr.isTTY === true;
  let lastOps = 0;
  let lastAt = Date.now();
  let note = '';
  let ticks = 0;
  const clock = (ms: number): string =>
    `${String(Math.floor(ms / 60_000)).padStart(2, '0')}:${String(Math.floor((ms % 60_000) / 1000)).padStart(2, '0')}`;
  const timer = setInterval(() => {
    ticks++;
    const now = Date.now();
    const ops = history.ops.length;
    const rate = Math.round(((ops - lastOps) * 1000) / Math.max(1, now - lastAt));
    lastOps = ops;
    lastAt = now;
    const status = nemesis.status();
    const faults = Object.entries(status.byKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const line =
      `[${clock(history.now())}/${clock(totalMs)}] ${rate} ops/s | publish ok ${counts.ok} fail ${counts.fail} ` +
      `unknown ${counts.unknown} | delivered ${counts.deliver} | faults ${status.done}${faults ? ` (${faults})` : ''}` +
      ` | now: ${note || status.current || 'quiet'}`;
    if (tty) process.stderr.write(`\r\x1b[2K${line}`);
    else if (ticks % 10 === 0) process.stderr.write(`${line}\n`);
  }, 1_000);
  return {
    note(text: string) {
      note = text;
    },
    stop() {
      clearInterval(timer);
      if (tty) process.stderr.write('\n');
    },
  };
}

/**
 * Every 5 s: each node's CPU, memory and state, and how late this timer fired (the harness's own
 * event-loop lag: clients whose heartbeats time out while it is large were starved, not cut off).
 */
function startSampler(history: History, cluster: ChaosCluster) {
  const everyMs = 5_000;
  let due = Date.now() + everyMs;
  cluster.sample(); // the baseline for the first CPU figures
  const timer = setInterval(() => {
    const lagMs = Date.now() - due;
    due = Date.now() + everyMs;
    history.append({
      type: 'info',
      process: 'harness',
      f: 'sample',
      value: { lagMs, nodes: cluster.sample() },
    });
  }, everyMs);
  return { stop: () => clearInterval(timer) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.max(0, ms)));
}

async function main(argv: readonly string[]): Promise<number> {
  let options: Options;
  try {
    options = parseOptions(argv, () => randomInt(1, 2 ** 31));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    say(`${error.message}\n\n${USAGE}`);
    return 2;
  }
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (options.check !== undefined) return recheck(options.check);
  try {
    return await runChaos(options);
  } catch (error) {
    say(
      `\nthe chaos harness failed (seed ${options.seed}): ${error instanceof ChaosError ? error.message : String(error)}`,
    );
    if (!(error instanceof ChaosError) && error instanceof Error && error.stack !== undefined)
      say(error.stack);
    return 3;
  }
}

if (import.meta.main) {
  const code = await main(process.argv.slice(2));
  // exit() runs the 'exit' cleanup; it also ends any client socket still retrying.
  process.exit(code);
}
