/**
 * How long dead-lettering takes on this node's queue leaders, in stages, for the node's `/metrics`
 * (`styx_dead_letter_stage_seconds`): a lateness total (deadline → the copy reaching a consumer)
 * does not say which stage to cut, and issue 28 holds expiry lateness to a p99 of 20 ms under load.
 *
 * - `expiry_proposed`: an expired message's deadline → the ts of the entry that removed it: how
 *   precisely the expiry timer (or the next publish, whose entry expires what is due too) followed
 *   the deadline;
 * - `expiry_committed`: that entry's ts → its apply on the leader (the entry's commit), counted once
 *   per message it expired;
 * - `copy_committed`, per strategy: the removal entry's ts → the dead-lettered copy committed at
 *   its target queue (at-least-once: confirmed by every target, so the wait in the hand-off window
 *   counts too), for every reason, not only expiry.
 * The copy's delivery to a consumer of the target belongs to the target queue (its consumers'
 * credit), not here.
 */
import { LatencyHistogram } from '@styx/raft';
import type { QueueConfig } from './types.ts';

export type DeadLetterStrategy = QueueConfig['deadLetterStrategy'];

/** Bucket bounds, seconds: 0.5 ms (a quiet node) to 10 s (a leader whose entries do not commit). */
export const DEAD_LETTER_STAGE_BOUNDS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

export class DeadLetterTimings {
  readonly expiryProposed = new LatencyHistogram(DEAD_LETTER_STAGE_BOUNDS);
  readonly expiryCommitted = new LatencyHistogram(DEAD_LETTER_STAGE_BOUNDS);
  readonly copyCommitted: Readonly<Record<DeadLetterStrategy, LatencyHistogram>> = {
    'at-most-once': new LatencyHistogram(DEAD_LETTER_STAGE_BOUNDS),
    'at-least-once': new LatencyHistogram(DEAD_LETTER_STAGE_BOUNDS),
  };

  /**
   * An entry stamped `entryTs` expired messages `overdueMs` past their deadlines (the machine's
   * `expired` effect) and was applied here at `appliedAt` (ms since the epoch).
   */
  expired(overdueMs: readonly number[], entryTs: number, appliedAt: number): void {
    const committed = nonNegativeSeconds(appliedAt - entryTs);
    for (const ms of overdueMs) {
      this.expiryProposed.observe(nonNegativeSeconds(ms));
      this.expiryCommitted.observe(committed);
    }
  }

  /** A copy of a message removed by the entry stamped `deadLetteredAt` committed at its target at `now`. */
  copied(strategy: DeadLetterStrategy, deadLetteredAt: number, now: number): void {
    this.copyCommitted[strategy].observe(nonNegativeSeconds(now - deadLetteredAt));
  }
}

/** ms → s; a wall clock stepped back (a leader elsewhere stamped the entry) reads as 0. */
function nonNegativeSeconds(ms: number): number {
  return ms > 0 ? ms / 1000 : 0;
}
