/**
 * The source side of an at-least-once dead-letter hand-off, attempt by attempt: which targets have
 * confirmed, when to retry, when the hand-off is done. Pure bookkeeping — no clock (the caller passes
 * `now`, ms), no timers, no I/O — so it can be tested step by step and replayed.
 *
 * The protocol (DESIGN.md, "How a message flows" 6) for one pending message, driven by the source
 * queue's leader:
 * 1. `track(id, now)` when the message becomes pending (or, on becoming leader, for every message
 *    `PendingDeadLetters` holds): the first attempt is due at once.
 * 2. For each id in `due(now)`: build the copy (`deadLetterCopy`, from the committed entry), route it
 *    through the DLX, drop the targets a cycle closes (`splitCycles`: count and log them), then
 *    `start(id, now, { queues, cycleDropped })`, which answers:
 *    - `send`: enqueue the copy at each listed queue, through the same asynchronous enqueue/confirm
 *      interface as any publish, carrying the stable hand-off id (source incarnation + message id);
 *    - `unroutable`: no DLX, or it routes nowhere: the message stays pending, retried at `retryAt`
 *      with capped exponential back-off (`backoff.ts`), or earlier when `wake(now)` reports a new
 *      exchange or binding;
 *    - `settled`: every target has confirmed or was dropped by a cycle: propose `deadLetterSettled`.
 * 3. `confirm(id, queue)` per target confirm; `settled` means: propose `deadLetterSettled` now.
 *    `fail(id, now)` on a target's nack (full, deleted...) schedules a retry with back-off. An attempt
 *    whose confirms do not all arrive within `confirmTimeoutMs` shows up in `due()` again.
 * 4. `forget(id)` once `deadLetterSettled` is applied.
 * No transaction spans two queues' logs: the target commits its enqueue (and dedupes a repeat by the
 * hand-off id, `DedupeWatermarks`), then the source commits the settle. A crash between the two only
 * causes a retry that the target recognises.
 *
 * Retries go only to targets that have not confirmed yet: a confirmed target stays confirmed across
 * attempts (and a confirm arriving late from an earlier attempt still counts). Routing is redone at
 * every attempt, so a binding added meanwhile gets the copy too. Which attempt a message is at is
 * leader-local by design (RabbitMQ's dead-letter worker keeps it the same way): a new leader starts
 * over from attempt 0, and the dedupe makes the repeats harmless. The state is nonetheless plain,
 * deterministic data with a snapshot, should a caller want to replicate it.
 *
 * Costs: track, start, confirm, fail, forget O(targets + log tracked); due O((due + stale) log
 * tracked); nextDeadline O(log tracked) amortized; wake O(tracked) (a topology change, rare). Due
 * times sit in a min-heap with lazy deletion: a re-scheduled or forgotten hand-off leaves its old
 * pair behind, skipped when it surfaces, and the heap is rebuilt when such pairs outnumber the live
 * ones — so a burst of 100k pending messages does not make every pump scan them all.
 */
import type { BackoffPolicy } from './backoff.ts';
import { backoffDelayMs, DEFAULT_BACKOFF, validateBackoffPolicy } from './backoff.ts';
import { DeadlineHeap } from './deadline-heap.ts';
import { DeadLetterInputError, DlxConfigError, DlxSnapshotError, HandOffStateError } from './errors.ts';

/**
 * Default time an attempt waits for all its confirms before it is due again, ms. Each enqueue at a
 * target answers or fails within about 15 s (a cluster queue's forwarding deadline), so this only
 * bounds an answer that never comes; at 30 s, such a hand-off kept its copy out of the DLQ for half
 * a minute after the fault that lost the answer had healed. A repeat sent while the first is still
 * on its way is deduped by the target.
 */
export const DEFAULT_CONFIRM_TIMEOUT_MS = 10_000;

export interface HandOffSchedulerOptions {
  readonly backoff: BackoffPolicy;
  /**
   * How long an attempt waits for all its confirms, ms (>= 1). Short enough to recover from a lost
   * confirm, long enough not to resend while a target is merely slow to commit (a repeat is deduped,
   * but costs a transfer).
   */
  readonly confirmTimeoutMs: number;
}

export const DEFAULT_HAND_OFF_OPTIONS: HandOffSchedulerOptions = Object.freeze({
  backoff: DEFAULT_BACKOFF,
  confirmTimeoutMs: DEFAULT_CONFIRM_TIMEOUT_MS,
});

/**
 * - `waiting`: the next attempt is due at `nextAttemptAt`;
 * - `in-flight`: copies sent, confirms outstanding; due again (timed out) at `nextAttemptAt`;
 * - `settling`: all confirmed, `deadLetterSettled` proposed; never due.
 */
export type HandOffPhase = 'waiting' | 'in-flight' | 'settling';

/** One tracked hand-off, as `get` and snapshots show it. */
export interface HandOffState {
  /** The message's id in the source queue. */
  readonly id: number;
  readonly phase: HandOffPhase;
  /** Attempts started so far (0 before the first). */
  readonly attempt: number;
  /** When the hand-off is due for an attempt (ms since the epoch); Infinity while settling. */
  readonly nextAttemptAt: number;
  /** Target queues that confirmed the copy, in confirm order. */
  readonly targetsConfirmed: readonly string[];
  /** The targets the latest attempt routed to (cycle drops excluded). */
  readonly awaiting: readonly string[];
}

/** Where one attempt's copy routed. */
export interface HandOffRoute {
  /** Target queues that get the copy (after `splitCycles`). */
  readonly queues: readonly string[];
  /** Target queues a cycle dropped the copy for: settled for this hand-off without a send. */
  readonly cycleDropped: readonly string[];
}

/** What to do for an attempt; see the module comment. */
export type AttemptPlan =
  | {
      readonly type: 'send';
      readonly attempt: number;
      /** The targets that have not confirmed yet: enqueue the copy at each. */
      readonly queues: readonly string[];
      /** When the attempt times out if confirms are missing, ms. */
      readonly timeoutAt: number;
    }
  | { readonly type: 'unroutable'; readonly attempt: number; readonly retryAt: number }
  | { readonly type: 'settled'; readonly attempt: number };

/**
 * - `settled`: that confirm completed the attempt: propose `deadLetterSettled`;
 * - `waiting`: recorded, other confirms still outstanding (or no attempt in flight);
 * - `ignored`: the message is not tracked (settled already) or is already settling.
 */
export type ConfirmOutcome = 'settled' | 'waiting' | 'ignored';

/**
 * `HandOffScheduler` as plain data. JSON round-trips it: a settling entry's `nextAttemptAt`
 * (Infinity, null in JSON) is not read back.
 */
export interface HandOffSnapshot {
  readonly version: 1;
  readonly entries: readonly HandOffState[];
}

interface Entry {
  readonly id: number;
  phase: HandOffPhase;
  attempt: number;
  nextAttemptAt: number;
  readonly confirmed: Set<string>;
  awaiting: readonly string[];
  /** The `due` call that last returned this entry (so one call returns it once). */
  dueCall: number;
}

/** Stale heap pairs tolerated beyond twice the tracked entries before the heap is rebuilt. */
const HEAP_SLACK = 1024;

const NO_QUEUES: readonly string[] = Object.freeze([]);

/** Throws DlxConfigError when `options` break a documented bound. */
export function validateHandOffOptions(options: HandOffSchedulerOptions): void {
  validateBackoffPolicy(options.backoff);
  if (!Number.isSafeInteger(options.confirmTimeoutMs) || options.confirmTimeoutMs < 1) {
    throw new DlxConfigError(`confirmTimeoutMs must be an integer >= 1, got ${options.confirmTimeoutMs}`);
  }
}

export class HandOffScheduler {
  private readonly entries = new Map<number, Entry>();
  private readonly options: HandOffSchedulerOptions;
  /** (nextAttemptAt, id) of every entry that can be due, plus stale pairs (see the module comment). */
  private readonly heap = new DeadlineHeap();
  private dueCalls = 0;

  constructor(options: HandOffSchedulerOptions = DEFAULT_HAND_OFF_OPTIONS) {
    validateHandOffOptions(options);
    this.options = options;
  }

  /** Hand-offs tracked (any phase). */
  get size(): number {
    return this.entries.size;
  }

  has(id: number): boolean {
    return this.entries.has(id);
  }

  /**
   * Hand-offs waiting for a retry after an attempt that found nowhere to go (DLX missing, nothing
   * bound) or was refused or unanswered: blocked, in the operator's terms. O(tracked); for metrics.
   */
  blocked(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.phase === 'waiting' && e.attempt > 0) n++;
    return n;
  }

  /** Starts tracking a pending message; its first attempt is due at `now`. */
  track(id: number, now: number): void {
    checkId(id);
    checkTime(now);
    if (this.entries.has(id)) throw new HandOffStateError(id, 'already tracked');
    const e: Entry = {
      id,
      phase: 'waiting',
      attempt: 0,
      nextAttemptAt: now,
      confirmed: new Set(),
      awaiting: NO_QUEUES,
      dueCall: 0,
    };
    this.entries.set(id, e);
    this.schedule(e);
  }

  /** Stops tracking (the settle was applied, or the message is gone). True if it was tracked. */
  forget(id: number): boolean {
    return this.entries.delete(id);
  }

  /** A copy of the hand-off's state, or undefined when not tracked. */
  get(id: number): HandOffState | undefined {
    const e = this.entries.get(id);
    return e === undefined ? undefined : view(e);
  }

  /**
   * Ids due for an attempt at `now` (waiting and due, or in flight and timed out), by due time, then
   * id; at most `limit` of them (the earliest). An id stays due until `start`, `fail`, `forget` (...)
   * changes it: one the caller did not get to (past the limit, or it threw half-way) is returned again
   * by the next call.
   */
  due(now: number, limit = Number.POSITIVE_INFINITY): number[] {
    const out: number[] = [];
    const heap = this.heap;
    const call = ++this.dueCalls;
    while (out.length < limit) {
      const at = heap.peekTime();
      if (at === undefined || at > now) break;
      const id = heap.peekId() as number;
      heap.pop();
      const e = this.entries.get(id);
      if (e === undefined || e.phase === 'settling' || e.nextAttemptAt !== at || e.dueCall === call) continue;
      e.dueCall = call;
      out.push(id);
    }
    // Popped, but due until acted on: back in the heap (stale as soon as the caller re-schedules).
    for (let i = 0; i < out.length; i++) {
      const id = out[i] as number;
      heap.push((this.entries.get(id) as Entry).nextAttemptAt, id);
    }
    return out;
  }

  /** The earliest time something is due, or undefined when nothing will be: arm one timer for it. */
  nextDeadline(): number | undefined {
    const heap = this.heap;
    for (;;) {
      const at = heap.peekTime();
      if (at === undefined) return undefined;
      const e = this.entries.get(heap.peekId() as number);
      if (e !== undefined && e.phase !== 'settling' && e.nextAttemptAt === at) return at;
      heap.pop(); // stale
    }
  }

  /** Puts `e`'s due time in the heap (never for a settling entry); rebuilds it when mostly stale. */
  private schedule(e: Entry): void {
    const heap = this.heap;
    if (heap.size > 2 * this.entries.size + HEAP_SLACK) {
      heap.clear();
      for (const other of this.entries.values()) {
        if (other !== e && other.phase !== 'settling') heap.push(other.nextAttemptAt, other.id);
      }
    }
    if (e.phase !== 'settling') heap.push(e.nextAttemptAt, e.id);
  }

  /**
   * Begins attempt `attempt + 1` for `id` with the targets it routed to now. Throws HandOffStateError
   * when `id` is not tracked or is settling (it is never due then).
   */
  start(id: number, now: number, route: HandOffRoute): AttemptPlan {
    checkTime(now);
    const e = this.entries.get(id);
    if (e === undefined) throw new HandOffStateError(id, 'not tracked');
    if (e.phase === 'settling') throw new HandOffStateError(id, 'already settling');
    e.attempt += 1;
    if (route.queues.length === 0 && route.cycleDropped.length === 0) {
      e.phase = 'waiting';
      e.awaiting = NO_QUEUES;
      e.nextAttemptAt = now + backoffDelayMs(this.options.backoff, e.attempt, id);
      this.schedule(e);
      return { type: 'unroutable', attempt: e.attempt, retryAt: e.nextAttemptAt };
    }
    e.awaiting = route.queues.slice();
    const missing = route.queues.filter((q) => !e.confirmed.has(q));
    if (missing.length === 0) {
      e.phase = 'settling';
      e.nextAttemptAt = Number.POSITIVE_INFINITY;
      return { type: 'settled', attempt: e.attempt };
    }
    e.phase = 'in-flight';
    e.nextAttemptAt = now + this.options.confirmTimeoutMs;
    this.schedule(e);
    return { type: 'send', attempt: e.attempt, queues: missing, timeoutAt: e.nextAttemptAt };
  }

  /** Records that `queue` committed the copy of `id`; see {@link ConfirmOutcome}. */
  confirm(id: number, queue: string): ConfirmOutcome {
    const e = this.entries.get(id);
    if (e === undefined || e.phase === 'settling') return 'ignored';
    e.confirmed.add(queue);
    if (e.phase !== 'in-flight') return 'waiting';
    for (const q of e.awaiting) if (!e.confirmed.has(q)) return 'waiting';
    e.phase = 'settling';
    e.nextAttemptAt = Number.POSITIVE_INFINITY;
    return 'settled';
  }

  /**
   * A target refused the copy (nack) or it could not be sent: retry after the back-off of the current
   * attempt. Returns the retry time, or undefined when `id` is not tracked or is settling (a late
   * nack from an earlier attempt changes nothing then).
   */
  fail(id: number, now: number): number | undefined {
    checkTime(now);
    const e = this.entries.get(id);
    if (e === undefined || e.phase === 'settling') return undefined;
    e.phase = 'waiting';
    e.nextAttemptAt = now + backoffDelayMs(this.options.backoff, Math.max(1, e.attempt), id);
    this.schedule(e);
    return e.nextAttemptAt;
  }

  /**
   * The `deadLetterSettled` proposal failed (not because leadership was lost — then the whole
   * scheduler is dropped): back to waiting, due at `now`. The next attempt finds every target
   * confirmed and answers `settled` again, without resending.
   */
  settleFailed(id: number, now: number): void {
    checkTime(now);
    const e = this.entries.get(id);
    if (e === undefined || e.phase !== 'settling') return;
    e.phase = 'waiting';
    e.nextAttemptAt = now;
    this.schedule(e);
  }

  /**
   * A new exchange or binding appeared: every waiting hand-off is due at `now` instead of after its
   * back-off (in-flight ones are unaffected). Attempt counts are kept, so back-off keeps growing for
   * a message still unroutable. Returns how many were brought forward.
   */
  wake(now: number): number {
    checkTime(now);
    let woken = 0;
    for (const e of this.entries.values()) {
      if (e.phase === 'waiting' && e.nextAttemptAt > now) {
        e.nextAttemptAt = now;
        this.schedule(e);
        woken += 1;
      }
    }
    return woken;
  }

  toSnapshot(): HandOffSnapshot {
    return { version: 1, entries: Array.from(this.entries.values(), view) };
  }

  /** Rebuilds from `toSnapshot()`'s output. Throws DlxSnapshotError when it is malformed. */
  static fromSnapshot(
    snapshot: HandOffSnapshot,
    options: HandOffSchedulerOptions = DEFAULT_HAND_OFF_OPTIONS,
  ): HandOffScheduler {
    if (snapshot?.version !== 1 || !Array.isArray(snapshot.entries)) {
      throw new DlxSnapshotError('hand-offs: unknown version or no entries');
    }
    const scheduler = new HandOffScheduler(options);
    for (const s of snapshot.entries) {
      const valid =
        Number.isSafeInteger(s.id) &&
        s.id >= 0 &&
        (s.phase === 'waiting' || s.phase === 'in-flight' || s.phase === 'settling') &&
        Number.isSafeInteger(s.attempt) &&
        s.attempt >= 0 &&
        // Settling entries carry Infinity, which JSON turns into null: not read back.
        (s.phase === 'settling' || Number.isFinite(s.nextAttemptAt)) &&
        Array.isArray(s.targetsConfirmed) &&
        Array.isArray(s.awaiting) &&
        !scheduler.entries.has(s.id);
      if (!valid) throw new DlxSnapshotError(`hand-offs: bad entry ${JSON.stringify(s)}`);
      const e: Entry = {
        id: s.id,
        phase: s.phase,
        attempt: s.attempt,
        nextAttemptAt: s.phase === 'settling' ? Number.POSITIVE_INFINITY : s.nextAttemptAt,
        confirmed: new Set(s.targetsConfirmed),
        awaiting: s.awaiting.slice(),
        dueCall: 0,
      };
      scheduler.entries.set(s.id, e);
      scheduler.schedule(e);
    }
    return scheduler;
  }
}

function view(e: Entry): HandOffState {
  return {
    id: e.id,
    phase: e.phase,
    attempt: e.attempt,
    nextAttemptAt: e.nextAttemptAt,
    targetsConfirmed: [...e.confirmed],
    awaiting: e.awaiting.slice(),
  };
}

function checkId(id: number): void {
  if (!Number.isSafeInteger(id) || id < 0) {
    throw new DeadLetterInputError(`hand-off id must be a non-negative integer, got ${id}`);
  }
}

function checkTime(now: number): void {
  if (!Number.isFinite(now)) throw new DeadLetterInputError(`now must be a finite time in ms, got ${now}`);
}
