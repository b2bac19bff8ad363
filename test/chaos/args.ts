// The command line of `npx -y pnpm@10 chaos`.
import { parseArgs } from 'node:util';
import type { TestBreak } from './breaks.ts';
import { CAUGHT_BY, TEST_BREAKS } from './breaks.ts';
import { UsageError } from './errors.ts';
import type { FaultKind } from './nemesis.ts';
import { DEFAULT_FAULTS, DEFAULT_GAP_MS, FAULT_KINDS } from './nemesis.ts';
import type { WorkloadKind } from './workload.ts';
import { WORKLOADS } from './workload.ts';

export const USAGE = `Usage: npx -y pnpm@10 chaos [options]

Starts a Styx cluster of real processes, each node in its own network namespace, runs a workload
through the SDK (publishers with confirms, consumers acking, consumers rejecting into a dead-letter
exchange, messages expiring into one) while a seeded nemesis kills, pauses, partitions and slows
nodes; then heals everything, drains the queues and checks the history (total queue, dead letters,
order, redelivery flag) and each node's own GET /api/checks/queues (replica check). Needs root
(ip netns, iptables, tc). Results go to test/chaos/results/<time>-seed<S>/: report.md, report.json,
history.jsonl and the nodes' logs.

Options:
  --nodes N        cluster size, 3 or 5 (default 3)
  --minutes N      how long the workload runs under faults (default 2; fractions allowed)
  --seed S         seed of the schedule and the workload's choices (default: random, printed)
  --faults LIST    comma-separated, from kill,pause,partition,slow,kill-each,membership (default:
                   kill,pause,partition,slow; "all" for all six; "none" for none):
                     kill-each   SIGKILL every node in turn, each down 3-6 s and restarted before
                                 the next
                     membership  styx ctl delete_member+add_member, shrink+grow, rebalance, or a
                                 leadership transfer (delete_member of the leader, add_member back);
                                 healed when the queue has its full replica set again, caught up
  --gap MIN-MAX    quiet time before the first fault and between faults, seconds (default 4-9; e.g.
                   15-20): recovery after a heal is measured until every client made progress, and
                   one slower than the gap runs into the next fault (kept out of the p50/p99,
                   reported apart)
  --overlap        about half the faults get a second one of another class (network: partition,
                   slow; process: kill, pause, kill-each; membership) starting while the first is
                   in force; each heals itself, and recovery after a heal made while the other was
                   still in force is reported apart
  --workload W     steady (default): consumers keep every queue shallow; backlog: publishers with
                   confirms and NO consumers while the faults run (queues and DLQs grow deep, tens
                   of thousands), consumers only at the drain, which empties every queue (its time
                   bound grows with the depth) and is checked by id
  --rate N         messages per second over all publishers (default 240; 480 with a backlog)
  --compact-every N  every node's queue logs compact after N entries (STYX_TEST_COMPACT_EVERY)
                   instead of the default policy's 20,000, so a short run reaches snapshot catch-up
                   (default 2000 with --workload backlog; 0 for the node's own policy)
  --out DIR        where results go (default test/chaos/results)
  --break NAME     run every node deliberately broken, to show a checker catches the bug; the run
                   succeeds (exit 0) only when that checker fails the history:
${TEST_BREAKS.map((b) => `                     ${b.padEnd(24)}caught by ${CAUGHT_BY[b]}`).join('\n')}
  --check FILE     check an existing history.jsonl again instead of running (no root needed)
  -h, --help       show this help

Exit status: 0 the history checks out (with --break: its checker caught the bug), 1 a checker failed
(seed, schedule and history windows are printed; with --break: the bug went uncaught), 2 bad usage,
3 the harness itself failed.
`;

export interface Options {
  readonly nodes: 3 | 5;
  readonly minutes: number;
  readonly seed: number;
  readonly faults: readonly FaultKind[];
  readonly overlap: boolean;
  /** `--gap`: quiet time before the first fault and between faults, ms, [min, max]. */
  readonly gapMs: readonly [number, number];
  readonly workload: WorkloadKind;
  readonly rate: number;
  /** STYX_TEST_COMPACT_EVERY for the nodes; undefined for their own policy. */
  readonly compactEvery: number | undefined;
  readonly out: string;
  /** A deliberately broken broker (`--break`), or undefined for the real one. */
  readonly break: TestBreak | undefined;
  readonly check: string | undefined;
  readonly help: boolean;
}

export function parseOptions(argv: readonly string[], randomSeed: () => number): Options {
  // pnpm passes a `--` through when people type `pnpm chaos -- --seed 1`: skip it.
  const args = argv[0] === '--' ? argv.slice(1) : [...argv];
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        nodes: { type: 'string' },
        minutes: { type: 'string' },
        seed: { type: 'string' },
        faults: { type: 'string' },
        overlap: { type: 'boolean' },
        gap: { type: 'string' },
        workload: { type: 'string' },
        rate: { type: 'string' },
        'compact-every': { type: 'string' },
        out: { type: 'string' },
        break: { type: 'string' },
        check: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const str = (name: string): string | undefined => values[name] as string | undefined;
  const nodes = Number(str('nodes') ?? '3');
  if (nodes !== 3 && nodes !== 5) throw new UsageError(`--nodes must be 3 or 5, not ${str('nodes')}`);
  const minutes = Number(str('minutes') ?? '2');
  if (!(minutes > 0)) throw new UsageError(`--minutes must be a positive number, not ${str('minutes')}`);
  const seedText = str('seed');
  const seed = seedText === undefined ? randomSeed() : Number(seedText);
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new UsageError(`--seed must be a non-negative integer, not ${seedText}`);
  const workload = str('workload') ?? 'steady';
  if (!(WORKLOADS as readonly string[]).includes(workload))
    throw new UsageError(`unknown workload "${workload}" (known: ${WORKLOADS.join(', ')})`);
  const rate = Number(str('rate') ?? (workload === 'backlog' ? '480' : '240'));
  if (!(rate > 0)) throw new UsageError(`--rate must be a positive number, not ${str('rate')}`);
  const compactText = str('compact-every') ?? (workload === 'backlog' ? '2000' : '0');
  const compactEvery = Number(compactText);
  if (!Number.isSafeInteger(compactEvery) || compactEvery < 0)
    throw new UsageError(`--compact-every must be a non-negative integer, not ${compactText}`);
  const faultsText = str('faults');
  let faults: FaultKind[] = [...DEFAULT_FAULTS];
  if (faultsText === 'all') faults = [...FAULT_KINDS];
  else if (faultsText !== undefined) {
    faults = [];
    for (const name of faultsText
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '' && s !== 'none')) {
      if (!(FAULT_KINDS as readonly string[]).includes(name))
        throw new UsageError(`unknown fault "${name}" (known: ${FAULT_KINDS.join(', ')})`);
      if (!faults.includes(name as FaultKind)) faults.push(name as FaultKind);
    }
  }
  const gapMs = parseGap(str('gap'));
  const breakName = str('break');
  if (breakName !== undefined && !(TEST_BREAKS as readonly string[]).includes(breakName))
    throw new UsageError(`unknown break "${breakName}" (known: ${TEST_BREAKS.join(', ')})`);
  return {
    nodes,
    minutes,
    seed,
    faults,
    overlap: values.overlap === true,
    gapMs,
    workload: workload as WorkloadKind,
    rate,
    compactEvery: compactEvery === 0 ? undefined : compactEvery,
    out: str('out') ?? 'test/chaos/results',
    break: breakName as TestBreak | undefined,
    check: str('check'),
    help: values.help === true,
  };
}

/** `--gap MIN-MAX` in seconds (fractions allowed, 0 < MIN <= MAX) → ms; the default when absent. */
export function parseGap(text: string | undefined): readonly [number, number] {
  if (text === undefined) return DEFAULT_GAP_MS;
  const match = /^\s*(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)\s*$/.exec(text);
  const min = Math.round(Number(match?.[1]) * 1000);
  const max = Math.round(Number(match?.[2]) * 1000);
  if (match === null || !(min > 0) || !(max >= min))
    throw new UsageError(`--gap must be MIN-MAX in seconds with 0 < MIN <= MAX (e.g. 15-20), not ${text}`);
  return [min, max];
}
