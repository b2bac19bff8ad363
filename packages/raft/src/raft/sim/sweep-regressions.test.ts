import { describe, expect, it } from 'vitest';
import { NO_MUTATIONS } from '../mutations.ts';
import { runSimulation } from './simulator.ts';
import { SWEEP_REGRESSIONS } from './sweep-regressions.ts';

describe('seeds found by wide sweeps', () => {
  for (const { seed, steps, mutations, violation } of SWEEP_REGRESSIONS) {
    it(`seed ${seed} replays clean, and fails as it did with ${mutations.join(' + ')}`, () => {
      // Recorded before the simulator told replicas of peers down: replayed without those notices
      // (and clean with them too).
      expect(runSimulation({ seed, steps, peerDownNotices: false }).violations).toEqual([]);
      expect(runSimulation({ seed, steps }).violations).toEqual([]);
      const flags = { ...NO_MUTATIONS, ...Object.fromEntries(mutations.map((name) => [name, true])) };
      const broken = runSimulation({ seed, steps, mutations: flags, peerDownNotices: false });
      expect(broken.violations.join('; ')).toMatch(violation);
    });
  }
});
