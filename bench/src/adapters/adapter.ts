/**
 * How a scenario talks to one broker: its client library, and how a logical queue (the shared
 * scenario definition) becomes that broker's declare arguments.
 */
import type { Target } from '../brokers/broker.ts';
import type { BenchConnection, BenchQueueOptions } from './client-api.ts';

/** RabbitMQ's two dead-letter strategies (quorum queues), which Styx follows. */
export const STRATEGIES = ['at-most-once', 'at-least-once'] as const;
export type DeadLetterStrategy = (typeof STRATEGIES)[number];

/** A queue as a scenario wants it, independent of the broker. */
export interface QueueSpec {
  /** x-message-ttl, ms. */
  readonly messageTtlMs?: number;
  readonly deadLetterExchange?: string;
  readonly deadLetterRoutingKey?: string;
  /** Only meaningful with a dead-letter exchange. */
  readonly deadLetterStrategy?: DeadLetterStrategy;
}

export interface BrokerAdapter {
  readonly target: Target;
  connect(url: string): Promise<BenchConnection>;
  /** The assertQueue options that give `spec` on this broker. */
  queueOptions(spec: QueueSpec): BenchQueueOptions;
}

/** The arguments both brokers understand alike (RabbitMQ's names). */
export function commonQueueArguments(spec: QueueSpec): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  if (spec.messageTtlMs !== undefined) args['x-message-ttl'] = spec.messageTtlMs;
  if (spec.deadLetterExchange !== undefined) args['x-dead-letter-exchange'] = spec.deadLetterExchange;
  if (spec.deadLetterRoutingKey !== undefined) args['x-dead-letter-routing-key'] = spec.deadLetterRoutingKey;
  // RabbitMQ's default, said out loud: a quorum queue is led by the node its declaring client is on
  // (a case that needs a client on another node counts on it). Styx accepts the argument; its
  // declaring node campaigns first and leads too, and the bench asks it where the leader is.
  args['x-queue-leader-locator'] = 'client-local';
  if (spec.deadLetterExchange !== undefined) {
    const strategy = spec.deadLetterStrategy ?? 'at-most-once';
    args['x-dead-letter-strategy'] = strategy;
    // RabbitMQ falls back to at-most-once, silently, unless overflow is reject-publish; Styx is
    // given the same arguments so both run the same declared semantics.
    if (strategy === 'at-least-once') args['x-overflow'] = 'reject-publish';
  }
  return args;
}
