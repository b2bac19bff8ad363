/**
 * The dead-letter losses a queue's leader sees while routing copies — a copy a cycle drops at a
 * target, an at-most-once copy with nowhere to go or refused — counted per reason and logged as
 * one summed line per interval (`AggregatedLog`): never silent, never a line per message.
 *
 * Leader-local: counted by the replica that routed the copies, from when it started; the machine's
 * replicated counters (`MachineDeadLetterTotals`) cover what every replica agrees on.
 */
import type { AggregatedLog } from './aggregated-log.ts';
import type { RemovalReason, RemovalTotals } from './types.ts';

/**
 * How an at-most-once copy was lost: its DLX missing, nothing bound, a target queue not running
 * (the node starting), or a target refusing it (full, deleted).
 */
export type AtMostOnceLoss = 'no-exchange' | 'unroutable' | 'unavailable' | 'refused';

export class DeadLetterDrops {
  private readonly log: AggregatedLog;
  private readonly cycle: Record<RemovalReason, number> = {
    rejected: 0,
    delivery_limit: 0,
    expired: 0,
    maxlen: 0,
  };
  private readonly atMostOnce: Record<RemovalReason, number> = {
    rejected: 0,
    delivery_limit: 0,
    expired: 0,
    maxlen: 0,
  };

  constructor(log: AggregatedLog) {
    this.log = log;
  }

  /** `n` copies dead-lettered for `reason` were not delivered to target queues that would close a cycle. */
  cycleDropped(reason: RemovalReason, n: number): void {
    this.cycle[reason] += n;
    this.log.add(`cycle/${reason}`, n);
  }

  /** `n` at-most-once copies dead-lettered for `reason` were lost (`how`, through exchange `dlx`). */
  lost(reason: RemovalReason, how: AtMostOnceLoss, dlx: string, n = 1): void {
    this.atMostOnce[reason] += n;
    this.log.add(`${how} '${dlx}'/${reason}`, n);
  }

  cycleTotals(): RemovalTotals {
    return { ...this.cycle };
  }

  atMostOnceTotals(): RemovalTotals {
    return { ...this.atMostOnce };
  }

  /** Log what is still summed (the queue is closing). */
  close(): void {
    this.log.close();
  }
}
