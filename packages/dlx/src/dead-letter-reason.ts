/**
 * Why a message was dead-lettered: the four triggers of RabbitMQ's guide, spelled as the `reason`
 * field of `x-death` and the `x-first-death-reason` header carry them.
 *
 * - `rejected`: basic.reject / basic.nack with `requeue=false`;
 * - `expired`: its TTL (per-message `expiration` or the queue's `x-message-ttl`) passed;
 * - `maxlen`: dropped because the queue exceeded `x-max-length` / `x-max-length-bytes`;
 * - `delivery_limit`: returned more times than `x-delivery-limit`.
 */
export const DEAD_LETTER_REASONS = ['rejected', 'expired', 'maxlen', 'delivery_limit'] as const;

/** One of {@link DEAD_LETTER_REASONS}. */
export type DeadLetterReason = (typeof DEAD_LETTER_REASONS)[number];

const REASONS: ReadonlySet<string> = new Set(DEAD_LETTER_REASONS);

/** True when `value` names one of the four reasons (for input that crossed a boundary untyped). */
export function isDeadLetterReason(value: unknown): value is DeadLetterReason {
  return typeof value === 'string' && REASONS.has(value);
}
