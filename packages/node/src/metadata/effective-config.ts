/**
 * A queue's effective configuration: its declare arguments merged with the policy that applies to
 * it. The precedence rules (Styx's, following RabbitMQ's for these keys):
 *
 * - limits — `message-ttl`, `expires`, `max-length`, `max-length-bytes`, `delivery-limit`: the
 *   smaller of the argument and the policy value when both are set, else whichever is set. A
 *   policy can tighten a limit an application declared, never loosen it.
 * - choices — dead-letter exchange, dead-letter routing key, dead-letter strategy, overflow: the
 *   argument wins when the queue was declared with it; otherwise the policy's value; otherwise the
 *   default. Each key is decided on its own, so a queue declared with `x-dead-letter-exchange`
 *   only takes `dead-letter-routing-key` from a policy (as RabbitMQ does).
 *
 * Worked example: a queue declared with `x-message-ttl: 60000` and `x-overflow: reject-publish`,
 * under a policy `{"message-ttl": 5000, "overflow": "drop-head", "dead-letter-exchange": "dlx"}`,
 * gets TTL 5000 (smaller), overflow reject-publish (argument wins) and DLX 'dlx' (no argument).
 *
 * Pure: the node calls this when a queue starts and after every policy change, and sends the
 * result to the queue as a `setConfig` command in its log when it differs (the queue machine never
 * reads policies itself).
 */
import { tableGet } from '@styx/client/wire';
import type { QueueConfig } from '../queue/types.ts';
import {
  CONSUMER_DISCONNECTED_TIMEOUT_ARG,
  DEFAULT_CONSUMER_DISCONNECTED_TIMEOUT_MS,
  integerArgument,
  queueConfigFromArguments,
} from './queue-arguments.ts';
import type { PolicyRecord, QueueRecord } from './types.ts';

/** A queue's configuration in force and the policy behind it. */
export interface EffectiveQueueConfig {
  readonly config: QueueConfig;
  /** The policy that applies (even when the arguments override all of it); undefined if none. */
  readonly policyName: string | undefined;
}

/**
 * The stored arguments of a queue no longer pass validation. They were validated when the queue
 * was declared, by the same code, so this is a broken invariant (corrupt state), never expected.
 */
export class StoredQueueArgumentsError extends Error {
  readonly code = 'METADATA_STORED_ARGUMENTS_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'StoredQueueArgumentsError';
  }
}

function smaller(argument: number | undefined, policy: number | undefined): number | undefined {
  if (argument === undefined) return policy;
  if (policy === undefined) return argument;
  return Math.min(argument, policy);
}

/**
 * The effective configuration of `queue` under `policy` (the one `MetadataMachine.policyFor`
 * chose for it, or undefined). `queue.durable` picks the default dead-letter strategy.
 */
export function effectiveQueueConfig(
  queue: Pick<QueueRecord, 'vhost' | 'name' | 'durable' | 'arguments'>,
  policy: PolicyRecord | undefined,
): EffectiveQueueConfig {
  const parsed = queueConfigFromArguments(queue.arguments, queue.durable, queue);
  if (!parsed.ok) throw new StoredQueueArgumentsError(parsed.text);
  const own = parsed.config;
  if (policy === undefined) return { config: own, policyName: undefined };
  const d = policy.definition;
  const declared = (key: string): boolean => tableGet(queue.arguments, key) !== undefined;
  const config: QueueConfig = {
    messageTtl: smaller(own.messageTtl, d['message-ttl']),
    expires: smaller(own.expires, d.expires),
    maxLength: smaller(own.maxLength, d['max-length']),
    maxLengthBytes: smaller(own.maxLengthBytes, d['max-length-bytes']),
    deliveryLimit: smaller(own.deliveryLimit, d['delivery-limit']),
    overflow: declared('x-overflow') ? own.overflow : (d.overflow ?? own.overflow),
    deadLetterExchange: declared('x-dead-letter-exchange')
      ? own.deadLetterExchange
      : (d['dead-letter-exchange'] ?? own.deadLetterExchange),
    deadLetterRoutingKey: declared('x-dead-letter-routing-key')
      ? own.deadLetterRoutingKey
      : (d['dead-letter-routing-key'] ?? own.deadLetterRoutingKey),
    deadLetterStrategy: declared('x-dead-letter-strategy')
      ? own.deadLetterStrategy
      : (d['dead-letter-strategy'] ?? own.deadLetterStrategy),
  };
  return { config, policyName: policy.name };
}

/**
 * How long `queue` keeps the consumers of a node it cannot reach before it returns their unacked
 * messages, ms: the `x-consumer-disconnected-timeout` argument wins (a choice, not a limit: an
 * application may want its consumers kept longer than the operator's default), then the policy's
 * `consumer-disconnected-timeout`, then 60 s. The argument was validated at declare.
 */
export function consumerDisconnectedTimeoutMs(
  queue: Pick<QueueRecord, 'arguments'>,
  policy: PolicyRecord | undefined,
): number {
  const argument = integerArgument(queue.arguments, CONSUMER_DISCONNECTED_TIMEOUT_ARG);
  if (argument !== undefined && Number.isSafeInteger(argument) && argument >= 0) return argument;
  return policy?.definition['consumer-disconnected-timeout'] ?? DEFAULT_CONSUMER_DISCONNECTED_TIMEOUT_MS;
}

/** Whether two configurations are the same (so no `setConfig` needs to be proposed). */
export function sameQueueConfig(a: QueueConfig, b: QueueConfig): boolean {
  return (
    a.messageTtl === b.messageTtl &&
    a.expires === b.expires &&
    a.maxLength === b.maxLength &&
    a.maxLengthBytes === b.maxLengthBytes &&
    a.overflow === b.overflow &&
    a.deliveryLimit === b.deliveryLimit &&
    a.deadLetterExchange === b.deadLetterExchange &&
    a.deadLetterRoutingKey === b.deadLetterRoutingKey &&
    a.deadLetterStrategy === b.deadLetterStrategy
  );
}
