// `--break NAME`: run the cluster deliberately broken (the node's STYX_TEST_BREAK, see
// packages/node/src/test-support/test-breaks.ts) to show a checker catches that bug. Each break
// names the checker that must catch it; such a run succeeds only when that checker fails.
import type { TestBreak } from '@styx/node';
import { TEST_BREAK_ENV, TEST_BREAKS } from '@styx/node';
import type { CheckResult } from './checkers.ts';

export type { TestBreak };
export { TEST_BREAK_ENV, TEST_BREAKS };
/** `--compact-every N`: the nodes' STYX_TEST_COMPACT_EVERY (test-breaks.ts; a tuning, not a break). */
export const TEST_COMPACT_EVERY_ENV = 'STYX_TEST_COMPACT_EVERY';

/** The checker each break must trip, and why it is the one that sees it. */
export const CAUGHT_BY: Readonly<Record<TestBreak, CheckResult['checker']>> = {
  // A confirmed publish the leader only appended is lost when a partition or a kill truncates it.
  'confirm-before-commit': 'total-queue',
  // A hand-off settled at its source before the DLQ committed it: the dead-letter never arrives.
  'hand-off-before-commit': 'dead-letter',
  // A delivery sent after a later one, not marked redelivered.
  'reorder-deliveries': 'order',
  // A message its queue delivered before, sent again with redelivered=false.
  'redeliver-unflagged': 'redelivery',
  // A lagging or new replica installs a snapshot without bodies; once it leads, the messages it
  // holds have no body: confirmed messages never come out (lost), and the drain never ends.
  'transfer-without-bodies': 'total-queue',
};

export interface BreakVerdict {
  readonly name: TestBreak;
  readonly checker: CheckResult['checker'];
  /** Whether that checker failed the history (what a run with this break must show). */
  readonly caught: boolean;
}

export function breakVerdict(name: TestBreak, checks: readonly CheckResult[]): BreakVerdict {
  const checker = CAUGHT_BY[name];
  return { name, checker, caught: checks.some((c) => c.checker === checker && !c.valid) };
}
