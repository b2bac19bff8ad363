/** Assembling the report and writing its files: report.json, report.md, lateness.svg. */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import type { Target } from '../brokers/broker.ts';
import type { BenchReport, BrokerInfo, CaseResult } from '../runner/results.ts';
import type { Sizes } from '../scenarios/sizes.ts';
import { latenessSvg } from './lateness-chart.ts';
import { markdownReport } from './markdown.ts';
import { computeRatios } from './ratios.ts';
import { scalingPanels, scalingSvg, soakPanels, soakSvg } from './scaling-chart.ts';

function gitCommit(cwd: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

/** What a run in `sizes` changes from the definitions. */
export function sizeNotes(sizes: Sizes): string[] {
  if (sizes.mode === 'full') return [];
  const k = (n: number): string => `${n / 1000}k`;
  return [
    `Quick mode: fewer messages than the issue's 100k so that each broker column runs in about a minute and a half: ` +
      `a ${k(sizes.publish)}, b ${k(sizes.consume)}, c burst ${k(sizes.burst)}, c stream ${k(sizes.stream)}, ` +
      `paced streams ${sizes.pacedSeconds} s each, d ${k(sizes.reject)}; e's long message lives ` +
      `${sizes.longTtlMs / 1000} s instead of 60 s; f reads memory at ${k(sizes.memory)} queued instead of 1M; ` +
      "g (3-node cluster) runs only with --full or when named. Run with --full for the issue's sizes.",
    `Quick mode for the scenarios run when named: sweep points of ${sizes.sweepSeconds} s, queues and ` +
      `connections up to ${Math.max(...sizes.sweepQueues)}, clusters up to ${Math.max(...sizes.sweepNodes)} nodes; ` +
      `restart with ${k(sizes.restart)} queued; soak of ${sizes.soakCycles} cycles of ${k(sizes.soakMessages)}; ` +
      `${sizes.idleQueues.toLocaleString('en-US')} idle queues; failover of ${sizes.failoverQueues} queues.`,
  ];
}

export interface ReportInput {
  readonly startedAt: Date;
  readonly sizes: Sizes;
  readonly targets: readonly Target[];
  readonly brokers: readonly BrokerInfo[];
  readonly results: readonly CaseResult[];
  readonly repoRoot: string;
  readonly extraNotes?: readonly string[];
}

export function buildReport(input: ReportInput): BenchReport {
  return {
    startedAt: input.startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    mode: input.sizes.mode,
    targets: input.targets,
    brokers: input.brokers,
    host: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      memoryGiB: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      gitCommit: gitCommit(input.repoRoot),
    },
    notes: [...sizeNotes(input.sizes), ...(input.extraNotes ?? [])],
    results: input.results,
    ratios: computeRatios(input.results),
  };
}

/** Writes report.json, report.md, lateness.svg (and scaling.svg, soak.svg) into `dir`, and the JSON also to `jsonPath`. */
export async function writeReport(report: BenchReport, dir: string, jsonPath?: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const json = `${JSON.stringify(report, null, 2)}\n`;
  await writeFile(join(dir, 'report.json'), json);
  await writeFile(join(dir, 'report.md'), markdownReport(report));
  await writeFile(join(dir, 'lateness.svg'), latenessSvg(report.results));
  // Only when the run has something to draw in them (the sweeps and the soak run when named).
  if (scalingPanels(report.results).length > 0)
    await writeFile(join(dir, 'scaling.svg'), scalingSvg(report.results));
  if (soakPanels(report.results).length > 0) await writeFile(join(dir, 'soak.svg'), soakSvg(report.results));
  if (jsonPath !== undefined) {
    await mkdir(dirname(jsonPath), { recursive: true });
    await writeFile(jsonPath, json);
  }
}
