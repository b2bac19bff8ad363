/**
 * Counters of what flowed through a queue — published, delivered, redelivered, acked, and
 * dead-lettered per reason and strategy — for `/metrics` and the management API.
 *
 * Counted from committed entries as a replica applies them (`count`), so every replica of a queue
 * counts the same events and a new leader's figures carry on close to the old one's. They are
 * plain numbers, not replicated state: they start at zero when the replica opens (entries replayed
 * from the log at start are not counted) and are not in snapshots. Prometheus reads a restart as a
 * counter reset, as it does for any process.
 *
 * Allocation-light on the hot path: one branch per command type, a few additions per entry, no
 * objects made (except on a `deadLetterSettled` entry, where the caller reads the machine's totals).
 */
import type { QueueApplyResult, QueueCommand, RemovalReason, RemovalTotals } from './types.ts';

/** How dead-lettered copies left: RabbitMQ's label values (`dead_letter_strategy`). */
export type DeadLetterStrategyLabel = 'at_most_once' | 'at_least_once';

/** Per reason, mutable (the counters' own records). */
type ReasonCounts = Record<RemovalReason, number>;

function zeroReasons(): ReasonCounts {
  return { rejected: 0, expired: 0, maxlen: 0, delivery_limit: 0 };
}

/** The counters' values at one moment, as readers get them. */
export interface QueueFlowTotals {
  /** Messages enqueued (publishes and dead-lettered copies received; refused and duplicate ones not). */
  readonly published: number;
  /** Messages handed to consumers or to basic.get, first deliveries and redeliveries alike. */
  readonly delivered: number;
  /** Of `delivered`, those delivered before (flagged redelivered). */
  readonly redelivered: number;
  /** Messages acked by their consumer. */
  readonly acked: number;
  /**
   * Dead-lettered, per strategy and reason: at-most-once when the copies were published,
   * at-least-once when every target confirmed (the hand-off settled).
   */
  readonly deadLettered: Readonly<Record<DeadLetterStrategyLabel, RemovalTotals>>;
}

export class QueueFlowCounters implements QueueFlowTotals {
  published = 0;
  delivered = 0;
  redelivered = 0;
  acked = 0;
  readonly deadLettered: Record<DeadLetterStrategyLabel, ReasonCounts> = {
    at_most_once: zeroReasons(),
    at_least_once: zeroReasons(),
  };

  /**
   * Count one applied entry. For a `deadLetterSettled` entry, `settled` is the machine's
   * dead-lettered totals before and after the apply: the difference, less the at-most-once copies
   * of the same apply (a length limit may drop a message then), settled at-least-once.
   */
  count(
    command: QueueCommand,
    result: QueueApplyResult,
    settled?: { readonly before: RemovalTotals; readonly after: RemovalTotals },
  ): void {
    const { reply, effects } = result;
    switch (command.type) {
      case 'enqueue':
        if (reply.type === 'ok') this.published++;
        break;
      case 'settle':
        // `removed` holds exactly the ids this ack settled (unknown ids are skipped by the machine).
        this.acked += result.removed.length;
        break;
      case 'get':
        if (reply.type === 'got') {
          this.delivered++;
          if (reply.redelivered) this.redelivered++;
        }
        break;
      default:
        break;
    }
    const amo = this.deadLettered.at_most_once;
    let amoThisApply: ReasonCounts | undefined;
    for (let i = 0; i < effects.length; i++) {
      const effect = effects[i] as QueueApplyResult['effects'][number];
      switch (effect.type) {
        case 'deliver':
          this.delivered++;
          if (effect.redelivered) this.redelivered++;
          break;
        case 'deadLetter':
          amo[effect.reason] += effect.ids.length;
          if (settled !== undefined) {
            amoThisApply ??= zeroReasons();
            amoThisApply[effect.reason] += effect.ids.length;
          }
          break;
        case 'deadLetterRejected':
          amo[effect.reason]++;
          if (settled !== undefined) {
            amoThisApply ??= zeroReasons();
            amoThisApply[effect.reason]++;
          }
          break;
        default:
          break;
      }
    }
    if (settled !== undefined) {
      const alo = this.deadLettered.at_least_once;
      for (const reason of REASONS) {
        const delta = settled.after[reason] - settled.before[reason] - (amoThisApply?.[reason] ?? 0);
        if (delta > 0) alo[reason] += delta;
      }
    }
  }
}

const REASONS: readonly RemovalReason[] = ['rejected', 'expired', 'maxlen', 'delivery_limit'];
