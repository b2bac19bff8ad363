/**
 * Queue declare arguments: validation with RabbitMQ's rules and messages, and the `QueueConfig`
 * they give. Also the per-message `expiration` property, validated on publish.
 *
 * RabbitMQ checks only the arguments it knows and ignores every other key (so do we: x-max-age,
 * x-queue-leader-locator, ... are accepted and have no effect). Styx queues are replicated like
 * RabbitMQ's quorum queues whatever `x-queue-type` says; 'classic' and 'quorum' are accepted,
 * anything else (notably 'stream') is refused. x-max-priority, x-single-active-consumer and
 * x-queue-mode are type-checked as RabbitMQ does but have no effect yet.
 */

import type { FieldTable, FieldValue } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload, ReplyCode, tableGet } from '@styx/client/wire';
import type { OverflowMode, QueueConfig } from '../queue/types.ts';
import { typeName } from './field-values.ts';
import { resourceText } from './replies.ts';

/** Largest TTL / expiry RabbitMQ accepts, ms (its `?MAX_EXPIRY_TIMER`: 2^32 - 1, about 49.7 days). */
export const MAX_EXPIRY_MS = 4_294_967_295;

/**
 * How long a queue keeps the consumers of a node it cannot reach (and their unacked messages)
 * before it gives them up, ms: RabbitMQ 4.3's `consumer_disconnected_timeout` default. Set per queue
 * by `x-consumer-disconnected-timeout` or the policy key `consumer-disconnected-timeout`.
 */
export const DEFAULT_CONSUMER_DISCONNECTED_TIMEOUT_MS = 60_000;

/** The declare argument of a queue's consumer-disconnected timeout (RabbitMQ 4.3's name). */
export const CONSUMER_DISCONNECTED_TIMEOUT_ARG = 'x-consumer-disconnected-timeout';

/** Largest `x-max-priority` (RabbitMQ's `?MAX_SUPPORTED_PRIORITY`). */
export const MAX_PRIORITY = 255;

/** A refused argument or property: `code` is an AMQP reply code (always 406 here). */
export interface ArgumentError {
  readonly code: number;
  readonly text: string;
}

export type QueueArgumentsResult =
  | { readonly ok: true; readonly config: QueueConfig }
  | ({ readonly ok: false } & ArgumentError);

/**
 * The arguments compared on a redeclare (RabbitMQ compares only the ones its queue type knows;
 * the rest may differ freely between declares).
 */
export const QUEUE_EQUIVALENCE_KEYS: readonly string[] = [
  'x-dead-letter-exchange',
  'x-dead-letter-routing-key',
  'x-dead-letter-strategy',
  'x-expires',
  'x-max-length',
  'x-max-length-bytes',
  'x-max-priority',
  'x-message-ttl',
  'x-overflow',
  'x-delivery-limit',
  'x-queue-type',
  'x-queue-mode',
  'x-single-active-consumer',
];

const OVERFLOW_MODES: readonly OverflowMode[] = ['drop-head', 'reject-publish', 'reject-publish-dlx'];
const DEAD_LETTER_STRATEGIES = ['at-most-once', 'at-least-once'] as const;
const QUEUE_TYPES = ['classic', 'quorum'];
const QUEUE_MODES = ['default', 'lazy'];

/** Why a value was refused; printed after the argument name, as RabbitMQ's Erlang error terms. */
type Problem = string;

/**
 * The integer value of argument `key` in `args`: undefined when absent, NaN when not an integer
 * (the caller refuses it with its own error).
 */
export function integerArgument(args: FieldTable, key: string): number | undefined {
  const value = args.entries.find((e) => e.key === key)?.value;
  if (value == null) return undefined;
  return integerOf(value) ?? Number.NaN;
}

function integerOf(v: FieldValue): number | undefined {
  const kind = fieldValueKind(v);
  switch (kind) {
    case 'i8':
    case 'u8':
    case 'i16':
    case 'u16':
    case 'i32':
    case 'u32':
    case 'i64':
    case 'u64': {
      const n = fieldValuePayload(v, kind);
      return Number.isInteger(n) ? n : undefined;
    }
    default:
      return undefined;
  }
}

function stringOf(v: FieldValue): string | undefined {
  const kind = fieldValueKind(v);
  if (kind === 'longStr' || kind === 'shortStr') return fieldValuePayload(v, kind);
  return undefined;
}

function unacceptableType(v: FieldValue): Problem {
  return `{unacceptable_type,${typeName(v)}}`;
}

/** An integer argument: RabbitMQ's check_int_arg (any integer width; strings and floats refused). */
function checkInteger(v: FieldValue, min: 0 | 1, max: number): Problem | number {
  const n = integerOf(v);
  if (n === undefined) return unacceptableType(v);
  if (n < 0) return `{value_negative,${n}}`;
  if (n < min) return `{value_zero,${n}}`;
  if (n > max) return `{value_too_large,${n},${max}}`;
  return n;
}

function checkChoice<T extends string>(v: FieldValue, choices: readonly T[], what: string): Problem | T {
  const s = stringOf(v);
  if (s === undefined) return unacceptableType(v);
  if (!(choices as readonly string[]).includes(s)) return `{invalid_${what},<<"${s}">>}`;
  return s as T;
}

interface Refusal {
  readonly key: string;
  readonly problem: Problem;
}

/**
 * Validate declare arguments and derive the queue's configuration. `durable` picks the default
 * dead-letter strategy: at-least-once for durable queues, at-most-once otherwise (RabbitMQ's
 * at-least-once also needs `x-overflow: reject-publish`; the dead-lettering code decides whether
 * to honour that restriction). `queue` names the queue in the error text when given.
 */
export function queueConfigFromArguments(
  args: FieldTable | null | undefined,
  durable: boolean,
  queue?: { readonly vhost: string; readonly name: string },
): QueueArgumentsResult {
  const config = {
    messageTtl: undefined as number | undefined,
    expires: undefined as number | undefined,
    maxLength: undefined as number | undefined,
    maxLengthBytes: undefined as number | undefined,
    overflow: 'drop-head' as OverflowMode,
    deliveryLimit: undefined as number | undefined,
    deadLetterExchange: undefined as string | undefined,
    deadLetterRoutingKey: undefined as string | undefined,
    deadLetterStrategy: (durable ? 'at-least-once' : 'at-most-once') as QueueConfig['deadLetterStrategy'],
  };
  const refusal = readArguments(args, config);
  if (refusal === undefined) return { ok: true, config };
  const where = queue === undefined ? '' : ` for ${resourceText('queue', queue.vhost, queue.name)}`;
  return {
    ok: false,
    code: ReplyCode.PRECONDITION_FAILED,
    text: `invalid arg '${refusal.key}'${where}: ${refusal.problem}`,
  };
}

type MutableConfig = { -readonly [K in keyof QueueConfig]: QueueConfig[K] };

/** Fills `config` from `args`; the first refusal in RabbitMQ's checking order, if any. */
function readArguments(args: FieldTable | null | undefined, config: MutableConfig): Refusal | undefined {
  if (args == null || args.entries.length === 0) return undefined;
  let v = tableGet(args, 'x-expires');
  if (v !== undefined) {
    const r = checkInteger(v, 1, MAX_EXPIRY_MS);
    if (typeof r === 'string') return { key: 'x-expires', problem: r };
    config.expires = r;
  }
  v = tableGet(args, 'x-message-ttl');
  if (v !== undefined) {
    const r = checkInteger(v, 0, MAX_EXPIRY_MS);
    if (typeof r === 'string') return { key: 'x-message-ttl', problem: r };
    config.messageTtl = r;
  }
  v = tableGet(args, 'x-dead-letter-exchange');
  if (v !== undefined) {
    const s = stringOf(v);
    if (s === undefined) return { key: 'x-dead-letter-exchange', problem: unacceptableType(v) };
    config.deadLetterExchange = s;
  }
  v = tableGet(args, 'x-dead-letter-routing-key');
  if (v !== undefined) {
    const s = stringOf(v);
    if (s === undefined) return { key: 'x-dead-letter-routing-key', problem: unacceptableType(v) };
    if (config.deadLetterExchange === undefined) {
      return { key: 'x-dead-letter-routing-key', problem: 'routing_key_but_no_dlx_defined' };
    }
    config.deadLetterRoutingKey = s;
  }
  v = tableGet(args, 'x-dead-letter-strategy');
  if (v !== undefined) {
    const r = checkChoice(v, DEAD_LETTER_STRATEGIES, 'dead_letter_strategy');
    if (!isChoice(r, DEAD_LETTER_STRATEGIES)) return { key: 'x-dead-letter-strategy', problem: r };
    config.deadLetterStrategy = r;
  }
  for (const key of ['x-max-length', 'x-max-length-bytes'] as const) {
    v = tableGet(args, key);
    if (v === undefined) continue;
    const r = checkInteger(v, 0, Number.MAX_SAFE_INTEGER);
    if (typeof r === 'string') return { key, problem: r };
    if (key === 'x-max-length') config.maxLength = r;
    else config.maxLengthBytes = r;
  }
  v = tableGet(args, 'x-max-priority');
  if (v !== undefined) {
    const n = integerOf(v);
    if (n === undefined) return { key: 'x-max-priority', problem: unacceptableType(v) };
    if (n < 0) return { key: 'x-max-priority', problem: `{value_negative,${n}}` };
    if (n > MAX_PRIORITY) return { key: 'x-max-priority', problem: `{max_value_exceeded,${n}}` };
  }
  v = tableGet(args, 'x-overflow');
  if (v !== undefined) {
    const r = checkChoice(v, OVERFLOW_MODES, 'overflow');
    if (!isChoice(r, OVERFLOW_MODES)) return { key: 'x-overflow', problem: r };
    config.overflow = r;
  }
  v = tableGet(args, 'x-queue-mode');
  if (v !== undefined) {
    const r = checkChoice(v, QUEUE_MODES, 'queue_mode');
    if (!isChoice(r, QUEUE_MODES)) return { key: 'x-queue-mode', problem: r };
  }
  v = tableGet(args, 'x-single-active-consumer');
  if (v !== undefined && fieldValueKind(v) !== 'bool') {
    return { key: 'x-single-active-consumer', problem: unacceptableType(v) };
  }
  v = tableGet(args, 'x-queue-type');
  if (v !== undefined) {
    const s = stringOf(v);
    if (s === undefined) return { key: 'x-queue-type', problem: unacceptableType(v) };
    if (!QUEUE_TYPES.includes(s)) {
      return {
        key: 'x-queue-type',
        problem: `queue type '${s}' is not supported by Styx (use 'quorum' or 'classic'; both are replicated queues)`,
      };
    }
  }
  v = tableGet(args, 'x-delivery-limit');
  if (v !== undefined) {
    const r = checkInteger(v, 0, Number.MAX_SAFE_INTEGER);
    if (typeof r === 'string') return { key: 'x-delivery-limit', problem: r };
    config.deliveryLimit = r;
  }
  v = tableGet(args, CONSUMER_DISCONNECTED_TIMEOUT_ARG);
  if (v !== undefined) {
    // Not part of QueueConfig: the leader's node applies it (broker/owner-suspicion.ts).
    const r = checkInteger(v, 0, MAX_EXPIRY_MS);
    if (typeof r === 'string') return { key: CONSUMER_DISCONNECTED_TIMEOUT_ARG, problem: r };
  }
  return undefined;
}

function isChoice<T extends string>(r: string, choices: readonly T[]): r is T {
  return (choices as readonly string[]).includes(r);
}

const EXPIRATION_PREFIX = /^[+-]?[0-9]+/;

/**
 * The per-message `expiration` property: a decimal integer of milliseconds, 0..2^32-1, as
 * RabbitMQ's `parse_expiration` (Erlang's string:to_integer: an optional sign, digits, nothing
 * after). Anything else is 406 PRECONDITION_FAILED "invalid expiration '...': <reason>".
 */
export function validateExpiration(expiration: string): number | ArgumentError {
  const m = EXPIRATION_PREFIX.exec(expiration);
  let problem: string;
  if (m === null) problem = 'no_integer';
  else if (m[0].length !== expiration.length)
    problem = `{leftover_string,"${expiration.slice(m[0].length)}"}`;
  else {
    const n = Number(m[0]);
    const digits = m[0].replace(/^\+/, '');
    if (n < 0) problem = `{value_negative,${digits}}`;
    else if (n > MAX_EXPIRY_MS) problem = `{value_too_large,${digits}}`;
    // '-0' is 0 to Erlang, and must not become -0 in a TTL.
    else return n === 0 ? 0 : n;
  }
  return { code: ReplyCode.PRECONDITION_FAILED, text: `invalid expiration '${expiration}': ${problem}` };
}
