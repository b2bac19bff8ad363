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
 */
import type { DeadLetteredCopy } from '@styx/dlx';
import { deadLetterCopy } from '@styx/dlx';
import type { DeadLetterDrops } from './dead-letter-drops.ts';
import type { DeadLetterTarget, RouteDeadLetter } from './dead-letter-route.ts';
import { routeCopy } from './dead-letter-route.ts';
import type { QueueLogger } from './queue-logger.ts';
import type { QueueConfig, QueueReply, RemovalReason, StoredMessage } from './types.ts';

interface Send {
  readonly target: DeadLetterTarget;
  readonly copy: DeadLetteredCopy;
  readonly reason: RemovalReason;
  readonly dlx: string;
}

export interface AtMostOnceOptions {
  readonly vhost: string;
  /** The queue the messages die in. */
  readonly queue: string;
  readonly route: RouteDeadLetter;
  readonly drops: DeadLetterDrops;
  readonly logger: QueueLogger;
}

export class AtMostOnceDeadLetters {
  private readonly options: AtMostOnceOptions;
  /** Enqueues waiting for the microtask that issues them. */
  private sends: Send[] | undefined = undefined;

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
      const copy = deadLetterCopy({
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
      for (const target of routed.deliver) this.queueSend({ target, copy, reason, dlx });
    }
  }

  private queueSend(send: Send): void {
    if (this.sends === undefined) {
      this.sends = [send];
      queueMicrotask(this.issue);
    } else {
      this.sends.push(send);
    }
  }

  private readonly issue = (): void => {
    const sends = this.sends ?? [];
    this.sends = undefined;
    for (const send of sends) {
      send.target.enqueue(send.copy, undefined).then(
        (reply) => this.confirmed(send, reply),
        (err: unknown) => {
          this.options.logger.debug(
            { err, target: send.target.name },
            'at-most-once dead-letter enqueue failed',
          );
          this.options.drops.lost(send.reason, 'refused', send.dlx);
        },
      );
    }
  };

  private confirmed(send: Send, reply: QueueReply): void {
    if (reply.type === 'rejected') this.options.drops.lost(send.reason, 'refused', send.dlx);
  }
}
