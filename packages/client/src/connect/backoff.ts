// The reconnect delay schedule: exponential back-off with jitter, bounded. Pure (the random source
// is passed in), so the schedule is tested without timers.

/** The back-off bounds a recovering connection uses (RecoverOptions' delays, defaults applied). */
export interface BackoffPolicy {
  /** Floor of every delay, in ms; also the base the exponential growth starts from. */
  minDelayMs: number;
  /** Ceiling of every delay, in ms. */
  maxDelayMs: number;
}

/** Default RecoverOptions.minDelayMs: a first retry after 100–200 ms. */
export const DEFAULT_MIN_DELAY_MS = 100;
/** Default RecoverOptions.maxDelayMs: never wait more than 10 s between attempts. */
export const DEFAULT_MAX_DELAY_MS = 10_000;

/**
 * The delay, in ms, before reconnect attempt `attempt` (0 for the first after a loss): uniform over
 * [minDelayMs, min(maxDelayMs, minDelayMs·2^(attempt+1))] ("full jitter" above a floor, so clients
 * that lost the same node spread out instead of retrying in lockstep, and none retries in a busy
 * loop). `random` returns a number in [0, 1), as Math.random does.
 *
 * Example with minDelayMs 100, maxDelayMs 1000: attempt 0 waits 100–200 ms, attempt 1 100–400 ms,
 * attempt 2 100–800 ms, attempt 3 and later 100–1000 ms.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const { minDelayMs, maxDelayMs } = policy;
  // 2^(attempt+1) overflows to Infinity for huge attempts; Math.min keeps the cap finite.
  const cap = Math.max(minDelayMs, Math.min(maxDelayMs, minDelayMs * 2 ** (attempt + 1)));
  return Math.floor(minDelayMs + random() * (cap - minDelayMs));
}

/** Validates user-supplied delays (non-negative, finite, min ≤ max) and applies the defaults. */
export function backoffPolicy(minDelayMs?: number, maxDelayMs?: number): BackoffPolicy {
  const min = minDelayMs ?? DEFAULT_MIN_DELAY_MS;
  const max = maxDelayMs ?? Math.max(min, DEFAULT_MAX_DELAY_MS);
  if (!Number.isFinite(min) || min < 0) throw new RangeError(`minDelayMs must be ≥ 0, got ${min}`);
  if (!Number.isFinite(max) || max < min) {
    throw new RangeError(`maxDelayMs must be finite and ≥ minDelayMs (${min}), got ${max}`);
  }
  return { minDelayMs: min, maxDelayMs: max };
}
