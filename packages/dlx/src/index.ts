/**
 * `@styx/dlx`: dead-letter semantics as pure functions, and the bookkeeping of the at-least-once
 * hand-off protocol. Knows nothing of sockets, Raft or the broker; imports only the wire types of
 * `@styx/client/wire`.
 *
 * - {@link deadLetterCopy}: the copy a queue publishes to its DLX (x-death, routing keys, CC/BCC,
 *   expiration), exactly as RabbitMQ 3.10 builds it;
 * - {@link isCycle} / {@link splitCycles}: which targets a dead-letter cycle drops the copy for;
 * - {@link PendingDeadLetters}: the replicated set of messages waiting for hand-off, with its cap;
 * - {@link HandOffScheduler}: attempts, confirms and capped back-off for each hand-off (leader side);
 * - {@link DedupeWatermarks}: the target side, recognising a hand-off sent again.
 */
export type { BackoffPolicy } from './backoff.ts';
export { backoffDelayMs, DEFAULT_BACKOFF, MAX_BACKOFF_MS, validateBackoffPolicy } from './backoff.ts';
export type { CycleSplit } from './cycle.ts';
export { isCycle, splitCycles } from './cycle.ts';
export type { DeadLetteredCopy, DeadLetterInput, DeadLetterMessage } from './dead-letter-copy.ts';
export { deadLetterCopy } from './dead-letter-copy.ts';
export type { DeadLetterReason } from './dead-letter-reason.ts';
export { DEAD_LETTER_REASONS, isDeadLetterReason } from './dead-letter-reason.ts';
export type {
  DedupeLimits,
  DedupeSnapshot,
  DedupeSourceSnapshot,
  DedupeVerdict,
  HandOffId,
} from './dedupe-watermarks.ts';
export {
  DEFAULT_DEDUPE_LIMITS,
  DedupeWatermarks,
  isDedupeWindow,
  MAX_DEDUPE_WINDOW,
  validateDedupeLimits,
  WIDE_DEDUPE_WINDOW,
} from './dedupe-watermarks.ts';
export { DeadLetterInputError, DlxConfigError, DlxSnapshotError, HandOffStateError } from './errors.ts';
export type {
  AttemptPlan,
  ConfirmOutcome,
  HandOffPhase,
  HandOffRoute,
  HandOffSchedulerOptions,
  HandOffSnapshot,
  HandOffState,
} from './hand-off.ts';
export {
  DEFAULT_CONFIRM_TIMEOUT_MS,
  DEFAULT_HAND_OFF_OPTIONS,
  HandOffScheduler,
  validateHandOffOptions,
} from './hand-off.ts';
export { compareKeys } from './key-order.ts';
export type { PendingDeadLetter, PendingLimits, PendingSnapshot } from './pending-dead-letters.ts';
export {
  DEFAULT_PENDING_LIMITS,
  PendingDeadLetters,
  validatePendingLimits,
} from './pending-dead-letters.ts';
export { BCC_HEADER, CC_HEADER, routingKeysOfHeader } from './routing-headers.ts';
export { SharedCopyProperties } from './shared-copy-properties.ts';
export type { DeathEvent, XDeathEntry } from './x-death.ts';
export {
  nextXDeath,
  readXDeath,
  X_DEATH_HEADER,
  X_FIRST_DEATH_EXCHANGE_HEADER,
  X_FIRST_DEATH_QUEUE_HEADER,
  X_FIRST_DEATH_REASON_HEADER,
} from './x-death.ts';
