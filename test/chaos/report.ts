// The end of a run in figures: what the workload did, which faults it met, what the checkers found,
// and how long the clients took to make progress again after each heal. Written as Markdown for
// people and JSON for tools, beside the history and the node logs.
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { BreakVerdict, TestBreak } from './breaks.ts';
import { breakVerdict } from './breaks.ts';
import type { CheckResult } from './checkers.ts';
import { formatOp, windowFor } from './checkers.ts';
import type { Op } from './history.ts';
import type { PlannedFault } from './nemesis.ts';
import { DEFAULT_GAP_MS, describeFault, formatGap } from './nemesis.ts';

/** Nearest-rank percentile (p in 0..100) of `values`; undefined for none. */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1];
}

export interface Recovery {
  /** The heal's fault number. */
  readonly n: number;
  readonly kind: string;
  /** Milliseconds from the heal until every client process made progress, or null if some never did. */
  readonly ms: number | null;
  /**
   * Whether the next fault had begun before every client made progress (the figure then includes
   * some of it): such a recovery is kept out of the clean p50/p99, in the max, and reported apart.
   */
  readonly overlapped: boolean;
  /** When overlapped: the number of the fault it ran into. */
  readonly ranInto?: number;
  /** The processes that never made progress again (when ms is null). */
  readonly stalled: readonly string[];
  /**
   * Another fault was still in force at this heal (`--overlap`): what follows is not the cluster's
   * recovery from this fault alone, so it is kept out of the p50/p99 and reported apart.
   */
  readonly concurrent: boolean;
}

const isClient = (process: string): boolean => process.startsWith('p-') || process.startsWith('c-');
const progress = (op: Op): boolean =>
  (op.f === 'publish' && op.type === 'ok') || (op.f === 'deliver' && op.type === 'ok');

/**
 * Recovery after each heal: the time until every client process (each publisher confirmed one
 * message, each consumer got one) made progress again. A recovery slower than the quiet gap runs
 * into the next fault; it is still measured, and flagged with the fault it ran into (the report
 * keeps it out of the clean p50/p99 but in the max, so nothing slow is hidden).
 */
export function recoveryTimes(ops: readonly Op[]): Recovery[] {
  // Only clients that had made progress before the heal: a deep-backlog run's consumers start at
  // the drain, after every fault, and are not waited for.
  const firstProgress = new Map<string, number>();
  for (const op of ops)
    if (isClient(op.process) && progress(op) && !firstProgress.has(op.process))
      firstProgress.set(op.process, op.index);
  const out: Recovery[] = [];
  for (const [i, heal] of ops.entries()) {
    if (heal.f !== 'heal') continue;
    const value = heal.value as { n?: number; kind?: string; concurrent?: boolean } | undefined;
    const waiting = new Set([...firstProgress].filter(([, first]) => first < heal.index).map(([p]) => p));
    let last = heal.time;
    let overlapped = false;
    let ranInto: number | undefined;
    for (let j = i + 1; j < ops.length && waiting.size > 0; j++) {
      const op = ops[j] as Op;
      if (op.f === 'fault' && !overlapped) {
        overlapped = true;
        ranInto = (op.value as { n?: number } | undefined)?.n;
      }
      if (progress(op) && waiting.delete(op.process)) last = op.time;
    }
    out.push({
      n: value?.n ?? 0,
      kind: value?.kind ?? '?',
      ms: waiting.size === 0 ? last - heal.time : null,
      overlapped,
      ...(ranInto === undefined ? {} : { ranInto }),
      stalled: [...waiting].sort(),
      concurrent: value?.concurrent === true,
    });
  }
  return out;
}

export interface Failover {
  /** The kill's fault number. */
  readonly n: number;
  /** The queue whose leader was killed. */
  readonly queue: string;
  /** The node killed. */
  readonly node: string;
  /**
   * Milliseconds from the kill until every client of the queue (see `clients`) made progress on it
   * again; null if some never did, or if not measured (`skipped`).
   */
  readonly ms: number | null;
  /** The client processes waited for: those that had made progress on the queue before the kill. */
  readonly clients: readonly string[];
  /** Those that never made progress on the queue again. */
  readonly stalled: readonly string[];
  /** Whether the next fault began before every client made progress (kept out of the p50/p99). */
  readonly overlapped: boolean;
  /** When overlapped: the number of the fault it ran into. */
  readonly ranInto?: number;
  /** Whether the killed node had been restarted (the fault's heal) before every client made progress. */
  readonly afterRestart: boolean;
  /**
   * Not measured: `leader unknown` (no node named the queue's leader, so the planned node was killed,
   * which may not have led it) or `no clients` (no client had made progress on the queue before).
   */
  readonly skipped?: 'leader unknown' | 'no clients';
}

/**
 * Failover after each SIGKILL of a queue's leader (a `kill` fault whose history entry names the
 * `queue`): the time from the kill until every client process that had made progress on that queue
 * before it made progress on it again. Progress after a kill must be the new leader's doing, not
 * what the dead one had already sent (a confirm or a delivery still on its way is read after the
 * kill): a publisher's counts when it confirms a publish invoked after the kill; a consumer's, a
 * delivery of a message published after the kill, or a redelivery (what the old leader had handed
 * out, given again). Clients of other queues are not waited for.
 */
export function failoverTimes(ops: readonly Op[]): Failover[] {
  const invokedAt = new Map<string, number>();
  // queue → client process → index of its first progress on that queue.
  const firstOnQueue = new Map<string, Map<string, number>>();
  for (const op of ops) {
    if (op.f === 'publish' && op.type === 'invoke' && op.id !== undefined) invokedAt.set(op.id, op.index);
    if (!isClient(op.process) || !progress(op) || op.queue === undefined) continue;
    const first = firstOnQueue.get(op.queue) ?? new Map<string, number>();
    firstOnQueue.set(op.queue, first);
    if (!first.has(op.process)) first.set(op.process, op.index);
  }
  const out: Failover[] = [];
  for (const [i, kill] of ops.entries()) {
    if (kill.f !== 'fault') continue;
    const value = kill.value as
      | { n?: number; kind?: string; nodes?: string; queue?: unknown; leaderUnknown?: boolean }
      | undefined;
    if (value?.kind !== 'kill' || typeof value.queue !== 'string') continue;
    const queue = value.queue;
    const n = value.n ?? 0;
    const clients = [...(firstOnQueue.get(queue) ?? [])]
      .filter(([, first]) => first < kill.index)
      .map(([p]) => p)
      .sort();
    const entry = { n, queue, node: value.nodes ?? '?', clients };
    const skipped =
      value.leaderUnknown === true ? 'leader unknown' : clients.length === 0 ? 'no clients' : undefined;
    if (skipped !== undefined) {
      out.push({ ...entry, ms: null, stalled: [], overlapped: false, afterRestart: false, skipped });
      continue;
    }
    const after = (id: string | undefined): boolean =>
      id !== undefined && (invokedAt.get(id) ?? -1) > kill.index;
    const fresh = (op: Op): boolean =>
      op.type === 'ok' &&
      ((op.f === 'publish' && after(op.id)) ||
        (op.f === 'deliver' && (op.redelivered === true || after(op.id))));
    const waiting = new Set(clients);
    let last = kill.time;
    let overlapped = false;
    let ranInto: number | undefined;
    let afterRestart = false;
    for (let j = i + 1; j < ops.length && waiting.size > 0; j++) {
      const op = ops[j] as Op;
      if (op.f === 'fault' && !overlapped) {
        overlapped = true;
        ranInto = (op.value as { n?: number } | undefined)?.n;
      }
      if (op.f === 'heal' && (op.value as { n?: number } | undefined)?.n === n) afterRestart = true;
      if (op.queue === queue && waiting.has(op.process) && fresh(op)) {
        waiting.delete(op.process);
        last = op.time;
      }
    }
    out.push({
      ...entry,
      ms: waiting.size === 0 ? last - kill.time : null,
      stalled: [...waiting].sort(),
      overlapped,
      ...(ranInto === undefined ? {} : { ranInto }),
      afterRestart,
    });
  }
  return out;
}

export interface Resources {
  /** Largest lateness of the harness's 5 s sampling timer, ms (its event loop was busy or starved). */
  readonly harnessLagMaxMs: number;
  /** Per node: highest CPU share seen (percent of one core) and largest resident memory, MiB. */
  readonly nodes: Readonly<Record<string, { readonly cpuMax: number; readonly rssMaxMiB: number }>>;
}

/** The peaks of the periodic samples. */
export function resources(ops: readonly Op[]): Resources {
  let harnessLagMaxMs = 0;
  const nodes: Record<string, { cpuMax: number; rssMaxMiB: number }> = {};
  for (const op of ops) {
    if (op.f !== 'sample') continue;
    const value = op.value as {
      lagMs: number;
      nodes: Record<string, { cpu: number; rssMiB: number } | 'down'>;
    };
    harnessLagMaxMs = Math.max(harnessLagMaxMs, value.lagMs);
    for (const [name, sample] of Object.entries(value.nodes)) {
      if (sample === 'down') continue;
      const peak = nodes[name] ?? { cpuMax: 0, rssMaxMiB: 0 };
      nodes[name] = peak;
      peak.cpuMax = Math.max(peak.cpuMax, sample.cpu);
      peak.rssMaxMiB = Math.max(peak.rssMaxMiB, sample.rssMiB);
    }
  }
  return { harnessLagMaxMs, nodes };
}

/** A count with its p50 and max. */
export interface SpreadFigures {
  readonly count: number;
  readonly p50Ms: number | undefined;
  readonly maxMs: number | undefined;
}

/**
 * Figures of timed outcomes (recoveries after heals, failovers after kills), honest about the ones
 * that ran into the next fault: p50 and p99 over the clean ones (done before the next fault began),
 * max over every one that completed, the late ones apart, and those that never completed counted.
 */
export interface TimingFigures {
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  readonly maxMs: number | undefined;
  readonly clean: {
    readonly count: number;
    readonly p50Ms: number | undefined;
    readonly p99Ms: number | undefined;
  };
  readonly overlappedFigures: SpreadFigures;
  /** Some client never made progress again. */
  readonly notRecovered: number;
}

/** `TimingFigures` of `outcomes` (ms null: never completed). */
export function timingFigures(
  outcomes: readonly { readonly ms: number | null; readonly overlapped: boolean }[],
): TimingFigures {
  const done = outcomes.flatMap((o) => (o.ms === null ? [] : [o.ms]));
  const clean = outcomes.flatMap((o) => (o.ms === null || o.overlapped ? [] : [o.ms]));
  const late = outcomes.flatMap((o) => (o.ms !== null && o.overlapped ? [o.ms] : []));
  const p50Ms = percentile(clean, 50);
  const p99Ms = percentile(clean, 99);
  return {
    p50Ms,
    p99Ms,
    maxMs: max(done),
    clean: { count: clean.length, p50Ms, p99Ms },
    overlappedFigures: { count: late.length, p50Ms: percentile(late, 50), maxMs: max(late) },
    notRecovered: outcomes.length - done.length,
  };
}

export interface RunReport {
  readonly seed: number;
  readonly nodes: number;
  readonly minutes: number;
  readonly faults: readonly string[];
  /** The quiet time before the first fault and between faults (`--gap`), ms: [min, max]. */
  readonly gapMs: readonly [number, number];
  readonly ratePerSecond: number;
  readonly startedAt: string;
  readonly durationS: number;
  readonly valid: boolean;
  readonly drained: boolean;
  /** Whether every node saw every member running again after the last heal. */
  readonly formed: boolean;
  /** Messages the final sweep found left in the queues (-1: the sweep failed). */
  readonly swept: number;
  readonly ops: { readonly total: number; readonly publishes: number; readonly deliveries: number };
  readonly faultsByKind: Readonly<Record<string, number>>;
  readonly lost: number;
  readonly unexpected: number;
  readonly duplicates: number;
  /** Over the heals that had no other fault in force (`notRecovered`: some client never progressed). */
  readonly recovery: TimingFigures & {
    /** How many recovered only after the next fault began (= overlappedFigures.count). */
    readonly overlapped: number;
    /** Heals while another fault was in force (`--overlap`), measured apart. */
    readonly concurrent: SpreadFigures;
    readonly each: readonly Recovery[];
  };
  /**
   * Failover after each SIGKILL of a queue's leader (see failoverTimes): p50/p99 over the clean ones
   * (done before the next fault began), max over all that completed; the rest apart.
   */
  readonly failover: TimingFigures & {
    /** Kills of a leader not measured (leader unknown, or no client on the queue). */
    readonly notMeasured: number;
    readonly each: readonly Failover[];
  };
  /** Membership faults whose queues did not get their full replica set back at the heal. */
  readonly membershipNotRestored: number;
  /** Whether the nodes' GET /api/checks/queues existed (false: every node answered 404). */
  readonly replicaCheck: 'ok' | 'not ok' | 'unavailable (404)' | 'not run';
  readonly resources: Resources;
  readonly checks: readonly CheckResult[];
  readonly finalDepths: readonly unknown[];
  readonly schedule: readonly string[];
  /** For each problem (at most 10 printed): the problem and its history window. */
  readonly failures: readonly { readonly problem: string; readonly window: readonly string[] }[];
  readonly replay: string;
  /** A deliberately broken run (`--break`): the break, its checker, and whether it caught it. */
  readonly broken: BreakVerdict | undefined;
}

export interface ReportInput {
  readonly seed: number;
  readonly nodes: number;
  readonly minutes: number;
  readonly faults: readonly string[];
  readonly ratePerSecond: number;
  readonly startedAt: Date;
  readonly durationS: number;
  readonly drained: boolean;
  readonly formed: boolean;
  readonly swept: number;
  readonly ops: readonly Op[];
  readonly checks: readonly CheckResult[];
  readonly schedule: readonly PlannedFault[];
  readonly testBreak?: TestBreak | undefined;
  /** `--workload` when not the default. */
  readonly workload?: string | undefined;
  readonly overlap?: boolean | undefined;
  /** `--gap` in ms; the default (4–9 s) when not given. */
  readonly gapMs?: readonly [number, number] | undefined;
  readonly compactEvery?: number | undefined;
}

export function buildReport(input: ReportInput): RunReport {
  const { ops, checks } = input;
  const total = checks.find((c) => c.checker === 'total-queue');
  const all = recoveryTimes(ops);
  const recoveries = timingFigures(all.filter((r) => !r.concurrent));
  const concurrent = all.filter((r) => r.concurrent).flatMap((r) => (r.ms === null ? [] : [r.ms]));
  const failovers = failoverTimes(ops);
  const measuredFailovers = failovers.filter((f) => f.skipped === undefined);
  const membershipNotRestored = ops.filter(
    (op) => op.f === 'heal' && (op.value as { restored?: boolean } | undefined)?.restored === false,
  ).length;
  const replica = checks.find((c) => c.checker === 'replica-check');
  const replicaCheck =
    replica === undefined || replica.counts.nodes === 0
      ? 'not run'
      : !replica.valid
        ? 'not ok'
        : replica.counts.unavailable === replica.counts.nodes
          ? 'unavailable (404)'
          : 'ok';
  const faultsByKind: Record<string, number> = {};
  for (const op of ops)
    if (op.f === 'fault') {
      const kind = (op.value as { kind?: string } | undefined)?.kind ?? '?';
      faultsByKind[kind] = (faultsByKind[kind] ?? 0) + 1;
    }
  const problems = checks.flatMap((c) => c.problems);
  const gapMs = input.gapMs ?? DEFAULT_GAP_MS;
  const defaultGap = gapMs[0] === DEFAULT_GAP_MS[0] && gapMs[1] === DEFAULT_GAP_MS[1];
  return {
    seed: input.seed,
    nodes: input.nodes,
    minutes: input.minutes,
    faults: input.faults,
    gapMs,
    ratePerSecond: input.ratePerSecond,
    startedAt: input.startedAt.toISOString(),
    durationS: input.durationS,
    valid:
      checks.every((c) => c.valid) &&
      input.drained &&
      input.formed &&
      input.swept === 0 &&
      membershipNotRestored === 0,
    drained: input.drained,
    formed: input.formed,
    swept: input.swept,
    resources: resources(ops),
    ops: {
      total: ops.length,
      publishes: ops.filter((op) => op.f === 'publish' && op.type === 'invoke').length,
      deliveries: ops.filter((op) => op.f === 'deliver').length,
    },
    faultsByKind,
    lost: total?.counts.lost ?? 0,
    unexpected: total?.counts.unexpected ?? 0,
    duplicates: total?.counts.duplicates ?? 0,
    recovery: {
      ...recoveries,
      overlapped: recoveries.overlappedFigures.count,
      concurrent: {
        count: all.filter((r) => r.concurrent).length,
        p50Ms: percentile(concurrent, 50),
        maxMs: max(concurrent),
      },
      each: all,
    },
    failover: {
      ...timingFigures(measuredFailovers),
      notMeasured: failovers.length - measuredFailovers.length,
      each: failovers,
    },
    membershipNotRestored,
    replicaCheck,
    checks,
    finalDepths: ops.filter((op) => op.f === 'depth').map((op) => op.value),
    schedule: input.schedule.map(describeFault),
    failures: problems.slice(0, 10).map((problem) => ({
      problem: `${problem.checker}: ${problem.kind} ${problem.id ?? ''} in ${problem.queue ?? '?'}: ${problem.detail}`,
      window: windowFor(ops, problem).map(formatOp),
    })),
    replay:
      `npx -y pnpm@10 chaos --nodes ${input.nodes} --minutes ${input.minutes} --seed ${input.seed} ` +
      `--faults ${input.faults.join(',') || 'none'} --rate ${input.ratePerSecond}` +
      (input.workload === undefined || input.workload === 'steady' ? '' : ` --workload ${input.workload}`) +
      (input.overlap === true ? ' --overlap' : '') +
      (defaultGap ? '' : ` --gap ${gapMs[0] / 1000}-${gapMs[1] / 1000}`) +
      (input.workload === 'backlog'
        ? ` --compact-every ${input.compactEvery ?? 0}`
        : input.compactEvery === undefined
          ? ''
          : ` --compact-every ${input.compactEvery}`) +
      (input.testBreak === undefined ? '' : ` --break ${input.testBreak}`),
    broken: input.testBreak === undefined ? undefined : breakVerdict(input.testBreak, checks),
  };
}

function max(values: readonly number[]): number | undefined {
  return values.length === 0 ? undefined : Math.max(...values);
}

const ms = (value: number | undefined): string => (value === undefined ? '–' : `${value} ms`);

export function renderMarkdown(report: RunReport): string {
  const lines = [
    `# Styx chaos run: ${title(report)}`,
    '',
    ...(report.broken === undefined
      ? []
      : [
          `Every node ran deliberately broken (\`STYX_TEST_BREAK=${report.broken.name}\`); the ` +
            `**${report.broken.checker}** checker ${report.broken.caught ? 'caught it' : 'did NOT catch it'}.`,
          '',
        ]),
    `Seed ${report.seed}, ${report.nodes} nodes, ${report.minutes} min of workload at ${report.ratePerSecond} msg/s, ` +
      `faults ${report.faults.join(', ') || 'none'}, quiet gap ${formatGap(report.gapMs)}; started ${report.startedAt}, took ${report.durationS} s.`,
    '',
    `Replay: \`${report.replay}\``,
    '',
    '| figure | value |',
    '| --- | --- |',
    `| operations in the history | ${report.ops.total} |`,
    `| publishes (invoked) | ${report.ops.publishes} |`,
    `| deliveries | ${report.ops.deliveries} |`,
    `| lost | ${report.lost} |`,
    `| unexpected | ${report.unexpected} |`,
    `| duplicates | ${report.duplicates} |`,
    `| cluster formed again after the last heal | ${report.formed ? 'yes' : 'NO'} |`,
    `| queues drained by the workload's consumers after the last heal | ${report.drained ? 'yes' : 'NO'} |`,
    `| messages the final sweep found left in the queues | ${report.swept < 0 ? 'sweep failed' : report.swept} |`,
    `| recovery after a heal, p50 / p99 (clean: before the next fault) / max (all but concurrent, late ones included) | ${ms(report.recovery.p50Ms)} / ${ms(report.recovery.p99Ms)} / ${ms(report.recovery.maxMs)} |`,
    `| heals recovered clean (in the p50 / p99) | ${report.recovery.clean.count} |`,
    `| heals whose recovery ran into the next fault (not in the p50 / p99): count, p50 / max | ${report.recovery.overlappedFigures.count}, ${ms(report.recovery.overlappedFigures.p50Ms)} / ${ms(report.recovery.overlappedFigures.maxMs)} |`,
    `| heals never recovered | ${report.recovery.notRecovered} |`,
    `| heals while another fault was in force (in none of the above): count, p50 / max | ${report.recovery.concurrent.count}, ${ms(report.recovery.concurrent.p50Ms)} / ${ms(report.recovery.concurrent.maxMs)} |`,
    `| failover after a queue leader's SIGKILL, p50 / p99 (clean) / max (all) | ${ms(report.failover.p50Ms)} / ${ms(report.failover.p99Ms)} / ${ms(report.failover.maxMs)} |`,
    `| membership faults not restored to the full replica set | ${report.membershipNotRestored} |`,
    `| nodes' replica check (GET /api/checks/queues) | ${report.replicaCheck} |`,
    '',
    '## Faults by kind',
    '',
    ...(Object.keys(report.faultsByKind).length === 0
      ? ['none']
      : Object.entries(report.faultsByKind).map(([kind, n]) => `- ${kind}: ${n}`)),
    '',
    '## Checkers',
    '',
    ...report.checks.map(
      (c) =>
        `- **${c.checker}**: ${c.valid ? 'valid' : 'INVALID'} — ${Object.entries(c.counts)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
    ),
    '',
    '## Recovery after each heal',
    '',
    ...report.recovery.each.map(
      (r) =>
        `- #${r.n} ${r.kind}: ${r.ms === null ? `not recovered (stalled: ${r.stalled.join(', ')})` : `${r.ms} ms`}${
          r.ms !== null && r.overlapped ? ` (ran into #${r.ranInto ?? '?'})` : ''
        }${r.concurrent ? ' (another fault still in force)' : ''}`,
    ),
    '',
    "## Failover after a queue leader's SIGKILL",
    '',
    'From the SIGKILL of the node leading a queue until every client that had made progress on that ' +
      'queue before made progress on it again (a publisher: a confirm of a message published after ' +
      'the kill; a consumer: a delivery of one, or a redelivery). Clients of other queues are not waited for.',
    '',
    ...(report.failover.each.length === 0
      ? ['none']
      : [
          `- p50 / p99 over the ${report.failover.clean.count} done before the next fault began: ` +
            `${ms(report.failover.p50Ms)} / ${ms(report.failover.p99Ms)}; max over all: ${ms(report.failover.maxMs)}`,
          `- ran into the next fault: ${report.failover.overlappedFigures.count}, p50 / max ` +
            `${ms(report.failover.overlappedFigures.p50Ms)} / ${ms(report.failover.overlappedFigures.maxMs)}`,
          `- never: ${report.failover.notRecovered}; not measured: ${report.failover.notMeasured}`,
        ]),
    ...report.failover.each.map(
      (f) =>
        `- #${f.n} ${f.queue}, ${f.node} killed: ${
          f.skipped !== undefined
            ? `not measured (${f.skipped})`
            : f.ms === null
              ? `never (stalled: ${f.stalled.join(', ')})`
              : `${f.ms} ms`
        }${f.ms !== null && f.afterRestart ? ' (after the restart)' : ''}${
          f.ms !== null && f.overlapped ? ` (ran into #${f.ranInto ?? '?'})` : ''
        }`,
    ),
    '',
    '## Resources (peaks of the 5 s samples)',
    '',
    `- harness event-loop lag: ${report.resources.harnessLagMaxMs} ms`,
    ...Object.entries(report.resources.nodes).map(
      ([name, peak]) => `- ${name}: CPU ${peak.cpuMax} % of a core, ${peak.rssMaxMiB} MiB resident`,
    ),
    '',
    '## Final queue depths',
    '',
    ...report.finalDepths.map((d) => `- ${JSON.stringify(d)}`),
    '',
    '## Schedule',
    '',
    ...report.schedule.map((s) => `- ${s}`),
  ];
  if (report.failures.length > 0) {
    lines.push('', '## Failures (first 10, each with its history window)', '');
    for (const failure of report.failures)
      lines.push(`### ${failure.problem}`, '', '```', ...failure.window, '```', '');
  }
  return `${lines.join('\n')}\n`;
}

function title(report: RunReport): string {
  if (report.broken === undefined) return report.valid ? 'PASS' : 'FAIL';
  return report.broken.caught
    ? `broken on purpose (${report.broken.name}), CAUGHT by ${report.broken.checker}`
    : `broken on purpose (${report.broken.name}), NOT CAUGHT by ${report.broken.checker}`;
}

export async function writeReport(
  dir: string,
  report: RunReport,
): Promise<{ markdown: string; json: string }> {
  await mkdir(dir, { recursive: true });
  const markdown = join(dir, 'report.md');
  const json = join(dir, 'report.json');
  await writeFile(markdown, renderMarkdown(report));
  await writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  return { markdown, json };
}
