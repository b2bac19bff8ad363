/**
 * Runs the selected cases against each target in turn: one broker process alive at a time, started
 * before its first case and stopped after its last (restarted if a case kills it). For each case:
 * probe its requirements, run it with CPU readings of the broker and the generator, and clean up.
 */
import type { BrokerAdapter } from '../adapters/adapter.ts';
import { ADAPTERS } from '../adapters/registry.ts';
import type { BrokerUnderTest, Target } from '../brokers/broker.ts';
import { ClusterUnsupportedError, TARGET_LABELS } from '../brokers/broker.ts';
import { LAUNCHERS } from '../brokers/launchers.ts';
import { generatorCpuMs, perRootCpuMs } from '../brokers/process-stats.ts';
import type { BenchCase } from '../scenarios/scenario.ts';
import { nowMs } from '../scenarios/support/clock.ts';
import { TrackedCaseContext } from './case-context.ts';
import { histogramMetrics, histogramReport } from './histogram-report.ts';
import { ProbeCache, unmetRequirement } from './probes.ts';
import type { ProgressLine } from './progress-line.ts';
import type { BrokerInfo, CaseResult, CpuReport } from './results.ts';
import { warmUp } from './warm-up.ts';

export interface RunOptions {
  readonly targets: readonly Target[];
  readonly cases: readonly BenchCase[];
  readonly progress: ProgressLine;
  /** No progress for this long fails a case, ms. */
  readonly stallTimeoutMs: number;
  /** Whole-case limit, ms: a case still running then fails (a hung await the stall checks miss). */
  readonly caseTimeoutMs: number;
  /** Called with each result as soon as it is known. */
  readonly onResult?: (r: CaseResult) => void;
}

export interface RunOutcome {
  readonly results: CaseResult[];
  readonly brokers: BrokerInfo[];
}

/** A case ran past RunOptions.caseTimeoutMs. */
export class CaseTimeoutError extends Error {
  readonly code = 'BENCH_CASE_TIMEOUT';
  constructor(ms: number) {
    super(`did not finish within ${Math.round(ms / 1000)} s`);
    this.name = 'CaseTimeoutError';
  }
}

/** The brokers alive right now, so an interrupt (Ctrl-C) can stop them. */
export const liveBrokers = new Set<BrokerUnderTest>();

function skeleton(c: BenchCase, target: Target): Omit<CaseResult, 'status'> {
  return {
    caseId: c.id,
    scenario: c.scenario,
    title: c.title,
    target,
    params: c.params,
    metrics: [],
    histograms: [],
    notes: [],
    cpu: null,
  };
}

/** Starts a broker of `target` on `nodes` nodes and warms it up. */
async function launch(target: Target, nodes: number, o: RunOptions): Promise<BrokerUnderTest> {
  o.progress.log(`starting ${TARGET_LABELS[target]}${nodes > 1 ? ` (${nodes} nodes)` : ''}...`);
  const startedAt = performance.now();
  const broker = await LAUNCHERS[target](nodes);
  liveBrokers.add(broker);
  // The launch time says how long a cluster took to form (the launchers wait until it has).
  const upAfterS = ((performance.now() - startedAt) / 1000).toFixed(1);
  o.progress.log(
    `${TARGET_LABELS[target]} ${broker.version} up at ${broker.url} (pid ${broker.pid}) after ${upAfterS} s; warming up`,
  );
  try {
    await warmUp(broker, ADAPTERS[target], o.stallTimeoutMs);
  } catch (err) {
    // The caller never sees this broker: stop it here, or it (a whole cluster) outlives the run.
    await stop(broker);
    throw err;
  }
  return broker;
}

async function stop(broker: BrokerUnderTest): Promise<void> {
  await broker.stop();
  liveBrokers.delete(broker);
}

async function runOne(
  c: BenchCase,
  broker: BrokerUnderTest,
  adapter: BrokerAdapter,
  probes: ProbeCache,
  o: RunOptions,
): Promise<CaseResult> {
  const base = skeleton(c, broker.target);
  const unmet = await probes.check(c.requires);
  if (unmet !== undefined) return { ...base, ...unmetRequirement(broker.target, unmet) };

  const ctx = new TrackedCaseContext(broker, adapter, c.id, o.stallTimeoutMs, (t) => o.progress.update(t));
  const pids0 = broker.pids.join(',');
  const brokerCpu0 = perRootCpuMs(broker.pids);
  const genCpu0 = generatorCpuMs();
  const wall0 = nowMs();
  const cpu = (): CpuReport => {
    // A case that restarted the broker (l) has other processes now: their times do not subtract.
    const brokerCpu1 = broker.pids.join(',') === pids0 ? perRootCpuMs(broker.pids) : undefined;
    const nodes =
      brokerCpu0 !== undefined && brokerCpu1 !== undefined
        ? brokerCpu1.map((ms, i) => ms - (brokerCpu0[i] as number))
        : undefined;
    return {
      brokerMs: nodes === undefined ? null : nodes.reduce((a, b) => a + b, 0),
      ...(nodes !== undefined && nodes.length > 1 ? { brokerNodesMs: nodes } : {}),
      generatorMs: generatorCpuMs() - genCpu0,
      wallMs: nowMs() - wall0,
    };
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    const outcome = await Promise.race([
      c.run(ctx),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new CaseTimeoutError(o.caseTimeoutMs)), o.caseTimeoutMs);
      }),
    ]);
    const usage = cpu();
    const histograms = outcome.histograms.map(histogramReport);
    return {
      ...base,
      status: 'ok',
      metrics: [...outcome.metrics, ...histograms.flatMap(histogramMetrics)],
      histograms,
      ...(outcome.series === undefined ? {} : { series: outcome.series }),
      notes: [...outcome.notes],
      cpu: usage,
    };
  } catch (err) {
    const usage = cpu();
    const died = !broker.alive() && c.killsNode !== true;
    const reason = died
      ? `the broker died: ${(err as Error).message}\n${broker.recentLogs().slice(-20).join('\n')}`
      : (err as Error).message;
    return { ...base, status: 'error', reason, cpu: usage };
  } finally {
    clearTimeout(timer);
    o.progress.update('cleaning up');
    await ctx.dispose();
  }
}

/**
 * Runs every case on every target, the targets taking turns. Within a turn, a broker is launched for
 * the first case and kept while the following cases want the same number of nodes.
 */
export async function runBench(o: RunOptions): Promise<RunOutcome> {
  const results: CaseResult[] = [];
  const brokers: BrokerInfo[] = [];
  const push = (r: CaseResult): void => {
    results.push(r);
    o.onResult?.(r);
  };
  for (const target of o.targets) {
    const adapter = ADAPTERS[target];
    let broker: BrokerUnderTest | undefined;
    let brokerNodes = 0;
    let casesOnBroker = 0;
    let probes: ProbeCache | undefined;
    // Launches that failed, by node count: their cases are reported without another attempt.
    const failedLaunch = new Map<number, { status: 'skipped' | 'error'; reason: string }>();
    try {
      for (const [i, c] of o.cases.entries()) {
        const nodes = c.nodes ?? 1;
        const failed = failedLaunch.get(nodes);
        if (failed !== undefined) {
          push({ ...skeleton(c, target), ...failed });
          continue;
        }
        if (broker === undefined || brokerNodes !== nodes || (c.freshBroker === true && casesOnBroker > 0)) {
          // First case, another topology, a case that wants a fresh broker, or the broker died
          // during the previous case.
          if (broker !== undefined) await stop(broker);
          broker = undefined;
          try {
            broker = await launch(target, nodes, o);
          } catch (err) {
            const f = {
              status: err instanceof ClusterUnsupportedError ? ('skipped' as const) : ('error' as const),
              reason: (err as Error).message,
            };
            failedLaunch.set(nodes, f);
            o.progress.log(`${TARGET_LABELS[target]}: ${f.reason.split('\n')[0]}`);
            push({ ...skeleton(c, target), ...f });
            continue;
          }
          brokerNodes = nodes;
          casesOnBroker = 0;
          if (!brokers.some((b) => b.target === target)) brokers.push({ target, version: broker.version });
          probes = new ProbeCache(broker, adapter);
        }
        o.progress.begin(`[${TARGET_LABELS[target]} ${i + 1}/${o.cases.length}] ${c.id}`);
        const r = await runOne(c, broker, adapter, probes ?? new ProbeCache(broker, adapter), o);
        o.progress.finish(
          r.status === 'ok' ? `done in ${((r.cpu?.wallMs ?? 0) / 1000).toFixed(1)} s` : r.status,
        );
        push(r);
        casesOnBroker++;
        if (!broker.alive()) {
          if (c.killsNode !== true)
            o.progress.log(`${TARGET_LABELS[target]} died during ${c.id}: restarting it for the next case`);
          await stop(broker);
          broker = undefined;
        }
      }
    } finally {
      if (broker !== undefined) await stop(broker);
    }
  }
  return { results, brokers };
}
