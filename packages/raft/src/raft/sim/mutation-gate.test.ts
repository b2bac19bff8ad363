import { describe, expect, it } from 'vitest';
import type { MutationName } from '../mutations.ts';
import { MUTATION_NAMES, NO_MUTATIONS, onlyMutation } from '../mutations.ts';
import { CLASSIC_BUG_SCENARIOS } from './classic-bug-scenarios.ts';
import { runSimulation } from './simulator.ts';
import { SWEEP_REGRESSIONS } from './sweep-regressions.ts';

/**
 * The mutation gate: every classic bug of engineering.md §1.6 can be switched back on (mutations.ts),
 * and then a scripted scenario, the random simulator, or both must catch it — within a bounded
 * number of seeds. A gate that cannot fail proves nothing, so each scenario must also pass on the
 * correct core.
 */

/** Mutations the random simulator must also catch, within this many seeds of GATE_STEPS steps. */
const SIM_CAUGHT: readonly MutationName[] = [
  'replyBeforePersist',
  'truncateOnEveryAppend',
  'commitPastProven',
  'acceptStaleTerm',
  'voteTwice',
  'voteIgnoresLog',
  'preVoteElects',
  'installStaleSnapshot',
  // Pipelined storage writes (issue 28): the classic bugs of acknowledging before the sync.
  'ackAppendBeforeSync',
  'countUnsyncedLeaderEntries',
  'voteBeforeSync',
  'completeOutOfOrder',
];
const GATE_SEEDS = 50;
const GATE_STEPS = 2000;

describe('mutation gate', () => {
  it('covers every classic bug', () => {
    // Bugs found by wide sweeps are caught by their seeds (sweep-regressions.test.ts).
    const covered = new Set<MutationName>([
      ...SIM_CAUGHT,
      ...CLASSIC_BUG_SCENARIOS.map((s) => s.mutation),
      ...SWEEP_REGRESSIONS.flatMap((r) => r.mutations),
    ]);
    expect(MUTATION_NAMES.filter((name) => !covered.has(name))).toEqual([]);
  });

  describe('scripted scenarios', () => {
    for (const scenario of CLASSIC_BUG_SCENARIOS) {
      it(`${scenario.bug}: passes on the correct core, fails with ${scenario.mutation}`, () => {
        expect(scenario.run(NO_MUTATIONS)).toEqual([]);
        expect(scenario.run(onlyMutation(scenario.mutation)).length).toBeGreaterThan(0);
      });
    }
  });

  describe('random simulation', () => {
    for (const mutation of SIM_CAUGHT) {
      it(`catches ${mutation} within ${GATE_SEEDS} seeds`, () => {
        let caughtAt: number | undefined;
        for (let seed = 1; seed <= GATE_SEEDS && caughtAt === undefined; seed++) {
          const result = runSimulation({ seed, steps: GATE_STEPS, mutations: onlyMutation(mutation) });
          if (result.violations.length > 0) caughtAt = seed;
        }
        expect(caughtAt, `${mutation} survived ${GATE_SEEDS} seeds`).toBeDefined();
      });
    }
  });
});
