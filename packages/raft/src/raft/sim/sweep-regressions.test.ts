import { describe, expect, it } from 'vitest';
import { NO_MUTATIONS } from '../mutations.ts';
import type { SwarmParams } from './options.ts';
import { runSimulation } from './simulator.ts';
import { SWEEP_REGRESSIONS } from './sweep-regressions.ts';

function asRecordedParams(drawn: SwarmParams): SwarmParams {
  return { ...drawn, storageDepth: 1, foldAppends: false };
}

describe('seeds found by wide sweeps', () => {
  for (const { seed, steps, mutations, violation } of SWEEP_REGRESSIONS) {
    it(`seed ${seed} replays clean, and fails as it did with ${mutations.join(' + ')}`, () => {
      // Recorded before the simulator told replicas of peers down, before it pipelined storage
      // writes and before it folded appends: replayed without those notices, with one Ready in
      // flight per replica and every message sent as it is (and clean with the seed's own draws too).
      const asRecorded = { peerDownNotices: false, params: asRecordedParams };
      expect(runSimulation({ seed, steps, ...asRecorded }).violations).toEqual([]);
      expect(runSimulation({ seed, steps }).violations).toEqual([]);
      const flags = { ...NO_MUTATIONS, ...Object.fromEntries(mutations.map((name) => [name, true])) };
      const broken = runSimulation({ seed, steps, mutations: flags, ...asRecorded });
      expect(broken.violations.join('; ')).toMatch(violation);
    });
  }
});
