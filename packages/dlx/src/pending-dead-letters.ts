/**
 * The source side of at-least-once dead-lettering, as replicated state: which messages a queue has
 * dead-lettered but not yet handed off, with their own count and byte total and the cap on both.
 *
 * A queue's state machine embeds one `PendingDeadLetters` and changes it only in `apply`: `add` when a
 * command dead-letters a message (reject, expiry, overflow, delivery limit), `settle` when it applies
 * `deadLetterSettled` — which the leader proposes only after every target confirmed (or a cycle
 * dropped the copy for it). So every replica agrees on what is pending, and a new leader resumes
 * exactly those hand-offs. Pending messages are not ready: they are never delivered or counted as
 * ready, and they keep their body in the body store until settled.
 *
 * The cap: while `isFull()`, publishes to the queue are nacked (reject-publish), so a dead-letter
 * target that is down or missing cannot make the source grow without bound. Messages already in the
 * queue may still become pending past the cap (they are dead-lettered, never dropped): the queue's
 * total (ready + unacked + pending) cannot grow while the cap holds, which is the bound that matters.
 *
 * Costs: add, settle, get O(1); lowestId O(log n) amortized; snapshot O(n). Plain data in and out.
 */
import type { DeadLetterReason } from './dead-letter-reason.ts';
import { isDeadLetterReason } from './dead-letter-reason.ts';
import { DeadLetterInputError, DlxConfigError, DlxSnapshotError, HandOffStateError } from './errors.ts';
import { NumberMinHeap } from './number-min-heap.ts';

/** When publishes to the source queue are nacked because too much waits for hand-off. */
export interface PendingLimits {
  /** Messages waiting for hand-off; >= 1. Bounds the machine's memory (~100 B of metadata each). */
  readonly maxMessages: number;
  /** Body bytes waiting for hand-off; >= 1. Bounds the body store's space held by stuck copies. */
  readonly maxBytes: number;
}

/** 100 000 messages or 128 MiB of bodies, whichever comes first. */
export const DEFAULT_PENDING_LIMITS: PendingLimits = Object.freeze({
  maxMessages: 100_000,
  maxBytes: 128 * 1024 * 1024,
});

/** One message waiting for its dead-letter hand-off. */
export interface PendingDeadLetter {
  /** The message's id in the source queue (with the queue's incarnation: the hand-off's stable id). */
  readonly id: number;
  readonly reason: DeadLetterReason;
  /** Body bytes, counted against `maxBytes`. */
  readonly size: number;
  /**
   * The committed entry's time (ms since the epoch) of the command that dead-lettered it. The copy's
   * `x-death` time is `Math.floor(deadLetteredAt / 1000)`: every retry builds the same copy.
   */
  readonly deadLetteredAt: number;
}

/** `PendingDeadLetters` as plain data (JSON-safe), entries in the order they were added. */
export interface PendingSnapshot {
  readonly version: 1;
  readonly entries: readonly PendingDeadLetter[];
}

/** Throws DlxConfigError when `limits` break a documented bound. */
export function validatePendingLimits(limits: PendingLimits): void {
  if (!Number.isSafeInteger(limits.maxMessages) || limits.maxMessages < 1) {
    throw new DlxConfigError(`pending maxMessages must be an integer >= 1, got ${limits.maxMessages}`);
  }
  if (!Number.isSafeInteger(limits.maxBytes) || limits.maxBytes < 1) {
    throw new DlxConfigError(`pending maxBytes must be an integer >= 1, got ${limits.maxBytes}`);
  }
}

export class PendingDeadLetters {
  private readonly entries = new Map<number, PendingDeadLetter>();
  /** Ids ever added; may still hold settled ids (deleted lazily by lowestId, compacted by add). */
  private readonly ids = new NumberMinHeap();
  private totalBytes = 0;
  private currentLimits: PendingLimits;

  constructor(limits: PendingLimits = DEFAULT_PENDING_LIMITS) {
    validatePendingLimits(limits);
    this.currentLimits = limits;
  }

  /** Messages waiting for hand-off. */
  get count(): number {
    return this.entries.size;
  }

  /** Body bytes waiting for hand-off. */
  get bytes(): number {
    return this.totalBytes;
  }

  get limits(): PendingLimits {
    return this.currentLimits;
  }

  /** New limits (a policy or argument change); pending messages are kept even if now over them. */
  setLimits(limits: PendingLimits): void {
    validatePendingLimits(limits);
    this.currentLimits = limits;
  }

  /** True while publishes to the queue must be nacked: the count or the bytes reached the cap. */
  isFull(): boolean {
    return (
      this.entries.size >= this.currentLimits.maxMessages || this.totalBytes >= this.currentLimits.maxBytes
    );
  }

  /** Records a dead-lettered message. Throws HandOffStateError when `id` is already pending. */
  add(entry: PendingDeadLetter): void {
    validateEntry(entry);
    if (this.entries.has(entry.id)) throw new HandOffStateError(entry.id, 'already pending');
    this.entries.set(entry.id, entry);
    this.totalBytes += entry.size;
    // Keep the lazily-cleaned heap within 2x the live ids (+ slack), so it stays O(pending).
    if (this.ids.size >= 2 * this.entries.size + 64) this.ids.reset(this.entries.keys());
    else this.ids.push(entry.id);
  }

  /**
   * Forgets a handed-off message (on `deadLetterSettled`). Returns it, or undefined when it was not
   * pending — a settle applied twice is a no-op, so the command is idempotent.
   */
  settle(id: number): PendingDeadLetter | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    this.totalBytes -= entry.size;
    return entry;
  }

  get(id: number): PendingDeadLetter | undefined {
    return this.entries.get(id);
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  /** Pending messages in the order they were added (a new leader resumes them in this order). */
  values(): IterableIterator<PendingDeadLetter> {
    return this.entries.values();
  }

  /**
   * The smallest pending id, or undefined when none is pending. With the queue's smallest live
   * message id it gives the dedupe horizon the source sends along (see `DedupeWatermarks.accept`).
   */
  lowestId(): number | undefined {
    for (;;) {
      const top = this.ids.peek();
      if (top === undefined || this.entries.has(top)) return top;
      this.ids.pop();
    }
  }

  toSnapshot(): PendingSnapshot {
    return { version: 1, entries: Array.from(this.entries.values(), (e) => ({ ...e })) };
  }

  /** Rebuilds from `toSnapshot()`'s output. Throws DlxSnapshotError when it is malformed. */
  static fromSnapshot(
    snapshot: PendingSnapshot,
    limits: PendingLimits = DEFAULT_PENDING_LIMITS,
  ): PendingDeadLetters {
    if (snapshot?.version !== 1 || !Array.isArray(snapshot.entries)) {
      throw new DlxSnapshotError('pending dead letters: unknown version or no entries');
    }
    const pending = new PendingDeadLetters(limits);
    for (const e of snapshot.entries) {
      try {
        pending.add({ id: e.id, reason: e.reason, size: e.size, deadLetteredAt: e.deadLetteredAt });
      } catch (cause) {
        throw new DlxSnapshotError(`pending dead letters: ${(cause as Error).message}`);
      }
    }
    return pending;
  }
}

function validateEntry(entry: PendingDeadLetter): void {
  if (!Number.isSafeInteger(entry.id) || entry.id < 0) {
    throw new DeadLetterInputError(`pending id must be a non-negative integer, got ${entry.id}`);
  }
  if (!Number.isSafeInteger(entry.size) || entry.size < 0) {
    throw new DeadLetterInputError(`pending size must be a non-negative integer, got ${entry.size}`);
  }
  if (!Number.isFinite(entry.deadLetteredAt)) {
    throw new DeadLetterInputError(`pending deadLetteredAt must be finite, got ${entry.deadLetteredAt}`);
  }
  if (!isDeadLetterReason(entry.reason)) {
    throw new DeadLetterInputError(`unknown dead-letter reason ${String(entry.reason)}`);
  }
}
