import { parentPort, workerData } from 'node:worker_threads';
import type { MutationName } from '../mutations.ts';
import { onlyMutation } from '../mutations.ts';
import type { SimResult } from './simulator.ts';
import { runSimulation } from './simulator.ts';

/** What the CLI asks a worker to run. */
export interface WorkerJob {
  readonly seed: number;
  readonly steps: number;
  readonly mutation: MutationName | undefined;
  readonly traceLast: number;
}

/** What a worker reports for one seed (a SimResult without the drawn parameters). */
export type WorkerReport = Omit<SimResult, 'params'>;

/** Run one seed as the CLI describes it. Shared by the worker threads and the in-process path. */
export function runJob(job: WorkerJob): WorkerReport {
  const result = runSimulation({
    seed: job.seed,
    steps: job.steps,
    traceLast: job.traceLast,
    ...(job.mutation !== undefined ? { mutations: onlyMutation(job.mutation) } : {}),
  });
  return {
    seed: result.seed,
    violations: result.violations,
    stats: result.stats,
    traceHash: result.traceHash,
    trace: result.trace,
  };
}

// As a worker thread: run every job the parent sends, answer each with its report.
if (parentPort !== null && workerData === 'styx-sim-worker') {
  const port = parentPort;
  port.on('message', (job: WorkerJob) => {
    port.postMessage(runJob(job));
  });
}
