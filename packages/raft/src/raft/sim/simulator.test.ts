import { describe, expect, it } from 'vitest';
import type { SimResult, SimStats } from './simulator.ts';
import { emptyStats, runSimulation } from './simulator.ts';

/** The CI sweep: ~200 seeds of ~2,000 steps (a few seconds; the CLI runs the long sweeps). */
const SWEEP_SEEDS = 200;
const SWEEP_STEPS = 2000;

function replay(result: SimResult, steps: number): string {
  return (
    `seed ${result.seed}: ${result.violations.join('; ')} ` +
    `(replay: pnpm --filter @styx/raft sim --seeds 1 --start ${result.seed} --steps ${steps} --trace 200)`
  );
}

describe('deterministic simulation', () => {
  it(`sweeps ${SWEEP_SEEDS} seeds x ${SWEEP_STEPS} steps with no violation, under real faults`, () => {
    const total: SimStats = emptyStats();
    const failures: string[] = [];
    for (let seed = 1; seed <= SWEEP_SEEDS; seed++) {
      const result = runSimulation({ seed, steps: SWEEP_STEPS });
      for (const key of Object.keys(total) as (keyof SimStats)[]) total[key] += result.stats[key];
      if (result.violations.length > 0) failures.push(replay(result, SWEEP_STEPS));
    }
    expect(failures).toEqual([]);
    expect(total.steps).toBe(SWEEP_SEEDS * SWEEP_STEPS);
    // The faults are real: the totals show them.
    expect(total.elections).toBeGreaterThan(SWEEP_SEEDS);
    expect(total.crashes).toBeGreaterThan(SWEEP_SEEDS);
    expect(total.partitions).toBeGreaterThan(SWEEP_SEEDS);
    expect(total.pauses).toBeGreaterThan(SWEEP_SEEDS / 2);
    expect(total.snapshotsInstalled).toBeGreaterThan(SWEEP_SEEDS / 10);
    expect(total.membershipChanges).toBeGreaterThan(SWEEP_SEEDS / 10);
    expect(total.transfers).toBeGreaterThan(SWEEP_SEEDS / 10);
    expect(total.commits).toBeGreaterThan(SWEEP_SEEDS * 10);
    expect(total.reads).toBeGreaterThan(SWEEP_SEEDS * 10);
    expect(total.writes).toBeGreaterThan(SWEEP_SEEDS * 10);
    // Pipelined storage is exercised: Readys go to disk while earlier ones sync, and crashes keep
    // some unsynced writes as well as losing others.
    expect(total.pipelinedWrites).toBeGreaterThan(SWEEP_SEEDS * 10);
    expect(total.crashKeptWrites).toBeGreaterThan(SWEEP_SEEDS / 10);
  });

  it('replays a seed bit for bit', () => {
    const first = runSimulation({ seed: 4242, steps: 3000 });
    const second = runSimulation({ seed: 4242, steps: 3000 });
    expect(second.traceHash).toBe(first.traceHash);
    expect(second.stats).toEqual(first.stats);
    expect(second.params).toEqual(first.params);
    const other = runSimulation({ seed: 4243, steps: 3000 });
    expect(other.traceHash).not.toBe(first.traceHash);
  });

  it('keeps the last events of a run for the failure report when asked', () => {
    const result = runSimulation({ seed: 3, steps: 200, traceLast: 10 });
    expect(result.trace).toHaveLength(10);
    expect(result.trace.some((line) => line.includes('deliver'))).toBe(true);
  });

  it('a network that never heals is reported as a liveness violation', () => {
    const result = runSimulation({
      seed: 11,
      steps: 300,
      livenessBoundMs: 1,
      params: (p) => ({ ...p, network: { ...p.network, delayMinMs: 50 } }),
    });
    expect(result.violations.some((v) => v.startsWith('liveness'))).toBe(true);
  });
});
