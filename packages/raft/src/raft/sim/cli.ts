import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import type { MutationName } from '../mutations.ts';
import { MUTATION_NAMES } from '../mutations.ts';
import type { WorkerJob, WorkerReport } from './sim-worker.ts';
import { runJob } from './sim-worker.ts';
import type { SimStats } from './simulator.ts';
import { emptyStats } from './simulator.ts';

/**
 * The deterministic simulator's command line:
 *
 *   pnpm --filter @styx/raft sim --seeds N [--start S] [--steps M] [--workers W] [--trace K]
 *   pnpm raft:sweep [-- --start S]      (100,000 seeds x 5,000 steps: about ten minutes on 2 cores)
 *
 * runs seeds S .. S+N-1 (M fault-phase steps each) on W worker threads, prints every failing seed
 * with the command that replays it, and ends with one summary line ending in `violations: V`. The
 * exit code is 1 when any seed failed. `--trace K` prints the last K events of failing seeds;
 * `--mutation NAME` (test only) re-enables one classic bug in every replica.
 */

const USAGE = 'usage: sim --seeds N [--start S] [--steps M] [--workers W] [--trace K] [--mutation NAME]';

function parsePositive(name: string, value: string | undefined, fallback: number, min = 1): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isSafeInteger(parsed) || parsed < min) {
    process.stderr.write(`--${name} must be an integer >= ${min}, got ${value}\n${USAGE}\n`);
    process.exit(2);
  }
  return parsed;
}

function addStats(total: SimStats, stats: SimStats): void {
  for (const key of Object.keys(total) as (keyof SimStats)[]) total[key] += stats[key];
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    // pnpm 10 hands a `--` on to the script (`pnpm raft:sweep -- --start S`): not a separator here.
    args: process.argv.slice(2).filter((arg) => arg !== '--'),
    options: {
      seeds: { type: 'string' },
      start: { type: 'string' },
      steps: { type: 'string' },
      workers: { type: 'string' },
      trace: { type: 'string' },
      mutation: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help === true) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const seeds = parsePositive('seeds', values.seeds, 100);
  const start = parsePositive('start', values.start, 1, 0);
  const steps = parsePositive('steps', values.steps, 5000);
  const traceLast = parsePositive('trace', values.trace, 0, 0);
  const workers = Math.min(seeds, parsePositive('workers', values.workers, availableParallelism()));
  const mutation = values.mutation as MutationName | undefined;
  if (mutation !== undefined && !MUTATION_NAMES.includes(mutation)) {
    process.stderr.write(`unknown mutation ${mutation}; one of: ${MUTATION_NAMES.join(', ')}\n`);
    return 2;
  }

  const began = performance.now();
  const total = emptyStats();
  const failed: WorkerReport[] = [];
  const onReport = (report: WorkerReport): void => {
    addStats(total, report.stats);
    if (report.violations.length === 0) return;
    failed.push(report);
    process.stdout.write(`FAIL seed ${report.seed}: ${report.violations.join('; ')}\n`);
    process.stdout.write(
      `  replay: pnpm --filter @styx/raft sim --seeds 1 --start ${report.seed} --steps ${steps}` +
        `${mutation !== undefined ? ` --mutation ${mutation}` : ''} --trace 200\n`,
    );
    for (const line of report.trace) process.stdout.write(`    ${line}\n`);
  };

  const jobs: WorkerJob[] = [];
  for (let seed = start; seed < start + seeds; seed++) jobs.push({ seed, steps, mutation, traceLast });
  if (workers <= 1) {
    for (const job of jobs) onReport(runJob(job));
  } else {
    await runOnWorkers(jobs, workers, onReport);
  }

  const seconds = ((performance.now() - began) / 1000).toFixed(1);
  const violations = failed.reduce((sum, report) => sum + report.violations.length, 0);
  process.stdout.write(
    `sim: ${seeds} seeds x ${steps} steps (${total.steps + total.livenessSteps} events) in ${seconds} s: ` +
      `elections ${total.elections}, crashes ${total.crashes}, partitions ${total.partitions}, ` +
      `pauses ${total.pauses}, snapshots installed ${total.snapshotsInstalled}, ` +
      `pipelined writes ${total.pipelinedWrites}, crash-kept writes ${total.crashKeptWrites}, ` +
      `folded messages ${total.foldedMessages}, ` +
      `membership changes ${total.membershipChanges}, transfers ${total.transfers}, ` +
      `leaders forgotten ${total.leadersForgotten}, ` +
      `commits ${total.commits}, reads ${total.reads}, writes ${total.writes}, ` +
      `failed seeds ${failed.length}, violations: ${violations}\n`,
  );
  return violations === 0 ? 0 : 1;
}

/** Hand seeds to `count` worker threads one at a time (the slow seeds balance out). */
function runOnWorkers(
  jobs: readonly WorkerJob[],
  count: number,
  onReport: (r: WorkerReport) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let next = 0;
    let running = 0;
    const workerUrl = new URL('./sim-worker.ts', import.meta.url);
    for (let i = 0; i < count; i++) {
      const worker = new Worker(workerUrl, { workerData: 'styx-sim-worker' });
      const feed = (): void => {
        const job = jobs[next];
        if (job === undefined) {
          void worker.terminate();
          if (--running === 0) resolve();
          return;
        }
        next++;
        worker.postMessage(job);
      };
      worker.on('message', (report: WorkerReport) => {
        onReport(report);
        feed();
      });
      worker.on('error', reject);
      running++;
      feed();
    }
  });
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`sim: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 2;
  },
);
