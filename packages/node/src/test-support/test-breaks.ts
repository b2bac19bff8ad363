/**
 * Deliberately broken behaviour, for proving the chaos suite's checkers (test/chaos) can catch
 * what they claim to: each break is a real bug a broker could have, switched on for a whole node
 * process by the environment variable `STYX_TEST_BREAK` (a comma-separated list). Unset — always,
 * outside those runs — nothing changes: every check below is a module-level constant, read once.
 *
 * - `confirm-before-commit`: a publish is confirmed once its leader has appended it, before a quorum
 *   has it (what an isolated or killed leader had appended is then lost, confirmed).
 * - `hand-off-before-commit`: a dead-letter hand-off is confirmed to its source before the target
 *   commits it, so the source settles (forgets) a copy the target may never keep: the target's
 *   leader replies once it appended the copy, and a node forwarding a copy to a leader elsewhere
 *   replies once it sent it (one attempt, no retry).
 * - `reorder-deliveries`: a channel holds back one delivery in 50 and sends it after the next one.
 * - `redeliver-unflagged`: a channel sends every redelivery (a message its queue had delivered
 *   before) with redelivered=false.
 * - `transfer-without-bodies`: a queue snapshot sent to a lagging or new replica carries no message
 *   bodies, so that replica holds live messages it cannot deliver (the bug of issue 19).
 *
 * These are not fault switches (a node has no "pretend to be partitioned" flag: the harness owns
 * every fault); they are the bugs the faults are meant to expose.
 */

export const TEST_BREAK_ENV = 'STYX_TEST_BREAK';

export const TEST_BREAKS = [
  'confirm-before-commit',
  'hand-off-before-commit',
  'reorder-deliveries',
  'redeliver-unflagged',
  'transfer-without-bodies',
] as const;
export type TestBreak = (typeof TEST_BREAKS)[number];

export interface ParsedTestBreaks {
  readonly breaks: ReadonlySet<TestBreak>;
  /** Names given that are not breaks: the server refuses to start with any. */
  readonly unknown: readonly string[];
}

export function parseTestBreaks(text: string | undefined): ParsedTestBreaks {
  const breaks = new Set<TestBreak>();
  const unknown: string[] = [];
  for (const name of (text ?? '').split(',').map((s) => s.trim())) {
    if (name === '') continue;
    if ((TEST_BREAKS as readonly string[]).includes(name)) breaks.add(name as TestBreak);
    else unknown.push(name);
  }
  return { breaks, unknown };
}

/** This process's breaks, from its environment. */
export const testBreaks: ParsedTestBreaks = parseTestBreaks(process.env[TEST_BREAK_ENV]);

export const CONFIRM_BEFORE_COMMIT = testBreaks.breaks.has('confirm-before-commit');
export const HAND_OFF_BEFORE_COMMIT = testBreaks.breaks.has('hand-off-before-commit');
export const REORDER_DELIVERIES = testBreaks.breaks.has('reorder-deliveries');
export const REDELIVER_UNFLAGGED = testBreaks.breaks.has('redeliver-unflagged');
export const TRANSFER_WITHOUT_BODIES = testBreaks.breaks.has('transfer-without-bodies');

/**
 * Testing only, not a break: `STYX_TEST_COMPACT_EVERY=N` makes every durable queue log compact after
 * exactly N entries (the default policy: 20,000, later on a deep backlog by its snapshot-size ratio),
 * so that a short chaos run reaches the paths a compacted log takes (a lagging or new replica
 * catching up from a snapshot). Read once.
 */
export const TEST_COMPACT_EVERY_ENV = 'STYX_TEST_COMPACT_EVERY';
const compactEvery = Number(process.env[TEST_COMPACT_EVERY_ENV] ?? '');
export const TEST_COMPACT_EVERY: number | undefined =
  Number.isSafeInteger(compactEvery) && compactEvery > 0 ? compactEvery : undefined;
