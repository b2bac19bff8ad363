/**
 * At-most-once dead-lettering, run by the leader for the machine's `deadLetter` and
 * `deadLetterRejected` effects: build each copy (`@styx/dlx` deadLetterCopy) from the body while it
 * is still in the body store, route it through the DLX, drop the targets a cycle closes, and enqueue
 * it at the others without waiting for confirms — the message is already gone from the queue
 * (RabbitMQ's default strategy). Every copy that goes nowhere — DLX missing, nothing bound, a cycle,
 * a target refusing it — is counted and logged (`DeadLetterDrops`), never dropped silently.
 *
 * Copies and routes are computed synchronously, inside the apply (the bodies are deleted right
 * after); the enqueues are issued one microtask later, because an apply must never re-enter a log
 * (a copy may route back to this very queue).
 *
 * At most `MAX_COPIES_IN_FLIGHT` enqueues wait for their answer at once; the other copies wait
 * here, in order, and go as answers come back. Without the bound an expiry of thousands of
 * messages proposed thousands of entries at once: on a 3-node cluster a full-speed TTL stream's
 * commits went from ~100 ms to 2 s (the publishes' too), and the copies reached their consumer
 * 4.6 s late at 1.9k/s while at-least-once, windowed, ran at 4k/s. The waiting copies are in
 * memory only, as the in-flight ones were: the strategy's promise is at most once.
 */
import type { DeadLetteredCopy } from '@styx/dlx';
import { SharedCopyProperties } from '@styx/dlx';
import type { Clock } from '@styx/raft';
import type { DeadLetterDrops } from './dead-letter-drops.ts';
import type { DeadLetterTarget, RouteDeadLetter } from './dead-letter-route.ts';
import { routeCopy } from './dead-letter-route.ts';
import type { DeadLetterTimings } from './dead-letter-timings.ts';
import type { QueueLogger } from './queue-logger.ts';
import type { QueueConfig, QueueReply, RemovalReason, StoredMessage } from './types.ts';

/** Copies being enqueued (answer not yet back) at once, at most; see the header. */
export const MAX_COPIES_IN_FLIGHT = 1_024;

interface Send {
  readonly target: DeadLetterTarget;
  readonly copy: DeadLetteredCopy;
  readonly reason: RemovalReason;
  readonly dlx: string;
  /** The ts of the entry that removed the message (ms), for `timings`. */
  readonly deadLetteredAt: number;
}

export interface AtMostOnceOptions {
  readonly vhost: string;
  /** The queue the messages die in. */
  readonly queue: string;
  readonly route: RouteDeadLetter;
  readonly drops: DeadLetterDrops;
  readonly logger: QueueLogger;
  readonly clock: Clock;
  /** Where the time from removal to the copy's commit at its target goes (metrics); none when absent. */
  readonly timings?: DeadLetterTimings;
}

export class AtMostOnceDeadLetters {
  private readonly options: AtMostOnceOptions;
  /** Copies waiting to be enqueued, oldest first from `waitingHead`. */
  private waiting: Send[] = [];
  private waitingHead = 0;
  private issueScheduled = false;
  private inFlight = 0;
  /** Copies of a burst share their properties, encoded once (see SharedCopyProperties). */
  private readonly copies = new SharedCopyProperties();

  constructor(options: AtMostOnceOptions) {
    this.options = options;
  }

  /**
   * Dead-letter `messages` (removed for `reason` by the entry stamped `deadLetteredAt`, ms) under
   * `config`. A config without DLX never reaches here (the machine drops and counts those).
   */
  publish(
    messages: readonly StoredMessage[],
    reason: RemovalReason,
    deadLetteredAt: number,
    config: QueueConfig,
  ): void {
    const dlx = config.deadLetterExchange;
    if (dlx === undefined || messages.length === 0) return;
    const { vhost, queue, route, drops } = this.options;
    const timeSeconds = Math.floor(deadLetteredAt / 1000);
    for (const message of messages) {
      const copy = this.copies.copy({
        message,
        queue,
        reason,
        dlx,
        dlk: config.deadLetterRoutingKey,
        timeSeconds,
      });
      const routed = routeCopy(copy, vhost, route);
      if (routed.cycleDropped.length > 0) drops.cycleDropped(reason, routed.cycleDropped.length);
      if (routed.status !== 'routed') {
        drops.lost(reason, routed.status, dlx);
        continue;
      }
      if (routed.deliver.length === 0) {
        // Nothing bound (or every target closes a cycle: counted above, not as unroutable).
        if (routed.cycleDropped.length === 0) drops.lost(reason, 'unroutable', dlx);
        continue;
      }
      for (const target of routed.deliver) this.queueSend({ target, copy, reason, dlx, deadLetteredAt });
    }
  }

  private queueSend(send: Send): void {
    this.waiting.push(send);
    this.scheduleIssue();
  }

  private scheduleIssue(): void {
    if (this.issueScheduled || this.waitingHead === this.waiting.length) return;
    this.issueScheduled = true;
    queueMicrotask(this.issue);
  }

  private readonly issue = (): void => {
    this.issueScheduled = false;
    const waiting = this.waiting;
    while (this.inFlight < MAX_COPIES_IN_FLIGHT && this.waitingHead < waiting.length) {
      const send = waiting[this.waitingHead] as Send;
      // Let go of the copy: the array may hold thousands more behind it.
      waiting[this.waitingHead++] = undefined as unknown as Send;
      this.inFlight++;
      send.target.enqueue(send.copy, undefined).then(
        (reply) => this.answered(send, reply),
        (err: unknown) => {
          this.options.logger.debug(
            { err, target: send.target.name },
            'at-most-once dead-letter enqueue failed',
          );
          this.answered(send, undefined);
        },
      );
    }
    if (this.waitingHead === waiting.length) {
      this.waiting = [];
      this.waitingHead = 0;
    } else if (this.waitingHead > 1024 && this.waitingHead * 2 > waiting.length) {
      this.waiting = waiting.slice(this.waitingHead);
      this.waitingHead = 0;
    }
  };

  /** `reply` undefined: the enqueue failed (the target unreachable, closed). */
  private answered(send: Send, reply: QueueReply | undefined): void {
    this.inFlight--;
    if (reply === undefined || reply.type === 'rejected') {
      this.options.drops.lost(send.reason, 'refused', send.dlx);
    } else {
      const { timings, clock } = this.options;
      timings?.copied('at-most-once', send.deadLetteredAt, clock.now());
    }
    this.scheduleIssue();
  }
}
