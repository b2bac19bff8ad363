import type { MutationName } from '../mutations.ts';

/**
 * Seeds that wide sweeps (100,000 seeds x 5,000 steps, outside CI's range) once failed, each with
 * the bug's root cause behind a mutation flag. The regression test replays every seed: clean on the
 * correct core, and failing the same way with the mutation on — so the seed still reaches the
 * situation the bug needs, and the fix is what makes it pass.
 */
export interface SweepRegression {
  readonly seed: number;
  readonly steps: number;
  /** The bug's flags: the seed fails once all of them are on (some seeds need two bugs at once). */
  readonly mutations: readonly MutationName[];
  /** What the seed reported before the fix. */
  readonly violation: RegExp;
  /**
   * The simulator the sweep ran: 'early' is before it told replicas of peers down, pipelined
   * storage writes and folded appends (the bug replays without them); 'current' replays the seed's
   * own draws.
   */
  readonly recorded: 'early' | 'current';
}

export const SWEEP_REGRESSIONS: readonly SweepRegression[] = [
  {
    seed: 83005684,
    steps: 5000,
    mutations: ['ackReplacedEntries'],
    recorded: 'early',
    violation: /n5 acknowledged index 24 to n2 before persisting it \(durable last 23\)/,
  },
  {
    seed: 82002878,
    steps: 5000,
    mutations: ['installSnapshotWhileApplying'],
    recorded: 'early',
    violation: /ConfChangeError: cannot apply a simple change to a joint configuration/,
  },
  {
    seed: 82003964,
    steps: 5000,
    mutations: ['installSnapshotWhileApplying'],
    recorded: 'early',
    violation: /ConfChangeError: cannot leave a configuration that is not joint/,
  },
  {
    seed: 55505479,
    steps: 5000,
    // Any one of the three fixes heals this seed; scripted scenarios catch each mutation alone.
    mutations: ['silentToStaleLeader', 'termBumpResetsElectionTimer', 'silentToStaleCandidate'],
    recorded: 'early',
    violation: /^convergence: n2@47, n3@65 did not apply up to 68/,
  },
  {
    seed: 92005786,
    steps: 5000,
    // Rejecting lower-term vote requests (silentToStaleCandidate's fix) heals this seed too.
    mutations: ['termBumpResetsElectionTimer', 'silentToStaleCandidate'],
    recorded: 'early',
    violation: /^liveness: no proposal committed within 12080 ms after healing \(leaders: none\)/,
  },
  {
    seed: 7300026441,
    steps: 5000,
    mutations: ['silentToStaleCandidate'],
    recorded: 'current',
    violation: /^liveness: no proposal committed within 13760 ms after healing \(leaders: none\)/,
  },
];
