/**
 * Retry back-off for dead-letter hand-offs: exponential, capped at 5 s, deterministic.
 *
 * Attempt n (1-based) that failed waits `min(maxDelayMs, initialDelayMs * 2^(n-1))`; with the
 * defaults 100, 200, 400, 800, 1600, 3200, 5000, 5000, ... ms. The cap keeps a hand-off blocked on a
 * missing or unroutable DLX no more than 5 s behind a fix (a new exchange or binding also wakes it at
 * once, see `HandOffScheduler.wake`).
 *
 * No randomness: optional jitter is derived from a hash of (seed, key, attempt), so the same inputs
 * always give the same delay (tests replay exactly; replicas agree if the schedule is replicated).
 * Jitter only shortens a delay, by at most `jitterRatio` of it, so the cap still holds.
 */
import { DlxConfigError } from './errors.ts';

/** The upper bound of any hand-off retry delay, in ms. */
export const MAX_BACKOFF_MS = 5_000;

export interface BackoffPolicy {
  /** Delay after the first failed attempt, ms; > 0 and <= maxDelayMs. */
  readonly initialDelayMs: number;
  /** Cap, ms; <= {@link MAX_BACKOFF_MS}. */
  readonly maxDelayMs: number;
  /** Fraction of a delay jitter may remove, 0 (none) .. 1. */
  readonly jitterRatio: number;
  /** Seed of the jitter hash (an integer; e.g. derived from the queue's identity). */
  readonly jitterSeed: number;
}

/** 100 ms doubling to 5 s, no jitter. */
export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({
  initialDelayMs: 100,
  maxDelayMs: MAX_BACKOFF_MS,
  jitterRatio: 0,
  jitterSeed: 0,
});

/** Throws DlxConfigError when `policy` breaks a documented bound. */
export function validateBackoffPolicy(policy: BackoffPolicy): void {
  const { initialDelayMs, maxDelayMs, jitterRatio, jitterSeed } = policy;
  if (!Number.isFinite(initialDelayMs) || initialDelayMs <= 0) {
    throw new DlxConfigError(`backoff initialDelayMs must be > 0, got ${initialDelayMs}`);
  }
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < initialDelayMs || maxDelayMs > MAX_BACKOFF_MS) {
    throw new DlxConfigError(
      `backoff maxDelayMs must be in [initialDelayMs, ${MAX_BACKOFF_MS}], got ${maxDelayMs}`,
    );
  }
  if (!(jitterRatio >= 0 && jitterRatio <= 1)) {
    throw new DlxConfigError(`backoff jitterRatio must be in [0, 1], got ${jitterRatio}`);
  }
  if (!Number.isSafeInteger(jitterSeed)) {
    throw new DlxConfigError(`backoff jitterSeed must be an integer, got ${jitterSeed}`);
  }
}

/**
 * The delay, in ms, before retrying after failed attempt number `attempt` (1-based) of the hand-off
 * identified by `key` (e.g. the message id; it only feeds the jitter).
 */
export function backoffDelayMs(policy: BackoffPolicy, attempt: number, key = 0): number {
  const exponent = Math.max(0, Math.floor(attempt) - 1);
  // 2^exponent overflows nothing below 2^1023, but past ~2^30 any delay is capped anyway.
  const delay =
    exponent >= 30 ? policy.maxDelayMs : Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** exponent);
  if (policy.jitterRatio === 0) return delay;
  const unit = hashToUnit(policy.jitterSeed, key, attempt);
  return delay - Math.floor(delay * policy.jitterRatio * unit);
}

/** A deterministic value in [0, 1) from three integers (murmur3's 32-bit finalizer over a mix). */
function hashToUnit(seed: number, key: number, attempt: number): number {
  let h = fmix32((seed | 0) ^ 0x9e3779b9);
  h = fmix32(h ^ (key >>> 0));
  h = fmix32(h ^ (Math.floor(key / 2 ** 32) >>> 0));
  h = fmix32(h ^ (attempt >>> 0));
  return (h >>> 0) / 2 ** 32;
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}
