/** Every scenario, in the order, and selecting cases by name. */
import { onCluster } from './cluster.ts';
import { consumeAck } from './consume-ack.ts';
import { failover } from './failover.ts';
import { hotExpiry } from './hot-expiry.ts';
import { idleQueues } from './idle-queues.ts';
import { memoryPerMessage } from './memory-per-message.ts';
import { mixedTtl } from './mixed-ttl.ts';
import { publishConfirms } from './publish-confirms.ts';
import { rejectRepublish } from './reject-republish.ts';
import { restartWithBacklog } from './restart.ts';
import { SCALING_SCENARIOS } from './scaling.ts';
import type { BenchCase, Scenario } from './scenario.ts';
import type { Sizes } from './sizes.ts';
import { soak } from './soak.ts';

export const SCENARIOS: readonly Scenario[] = [
  publishConfirms,
  consumeAck,
  hotExpiry,
  rejectRepublish,
  mixedTtl,
  memoryPerMessage,
  onCluster,
  ...SCALING_SCENARIOS,
  restartWithBacklog,
  soak,
  idleQueues,
  failover,
];

/** Scenarios a run without names leaves out: they run when named (or by a group below). */
const OPT_IN = new Set(['h', 'i', 'j', 'k', 'l', 'm', 'n', 'o']);

/** Names that select several scenarios at once. */
export const SCENARIO_GROUPS: Readonly<Record<string, readonly string[]>> = {
  scaling: ['h', 'i', 'j', 'k'],
  leads: ['e', 'l', 'n', 'o'],
  extras: ['h', 'i', 'j', 'k', 'l', 'm', 'n', 'o'],
};

/** A name that matched no scenario or case. */
export class UnknownScenarioError extends Error {
  readonly code = 'BENCH_UNKNOWN_SCENARIO';
  constructor(name: string) {
    super(`no scenario or case matches '${name}' (see --list)`);
    this.name = 'UnknownScenarioError';
  }
}

/**
 * The cases to run. With no names: scenarios a–f (and g in full mode); h–o (the scaling sweeps,
 * restart, soak, idle queues, failover) run only when named, by letter, name or group (SCENARIO_GROUPS).
 * A name selects a scenario by letter ('c') or name ('hot-expiry'), or cases by id or id prefix
 * ('c.burst' selects both strategies of the burst).
 */
export function selectCases(names: readonly string[], sizes: Sizes): BenchCase[] {
  if (names.length === 0)
    return SCENARIOS.filter((s) => !OPT_IN.has(s.id) && (s.id !== 'g' || sizes.mode === 'full')).flatMap(
      (s) => s.cases(sizes),
    );
  const chosen = new Map<string, BenchCase>();
  for (const name of names.flatMap((n) => SCENARIO_GROUPS[n] ?? [n])) {
    const before = chosen.size;
    const matchedScenario = SCENARIOS.find((s) => s.id === name || s.name === name);
    for (const c of matchedScenario?.cases(sizes) ?? []) chosen.set(c.id, c);
    if (matchedScenario === undefined) {
      for (const c of SCENARIOS.flatMap((s) => s.cases(sizes)))
        if (c.id === name || c.id.startsWith(`${name}.`)) chosen.set(c.id, c);
    }
    if (chosen.size === before && matchedScenario === undefined) throw new UnknownScenarioError(name);
  }
  // In the order, whatever order the names came in.
  const order = SCENARIOS.flatMap((s) => s.cases(sizes)).map((c) => c.id);
  return [...chosen.values()].sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
}
