/**
 * At-least-once dead-lettering, the leader's side: hands each message the machine holds pending
 * to the queues its DLX routes to, confirm-backed, and proposes `deadLetterSettled` once every
 * target confirmed. One instance per leadership: created when the replica becomes leader (it then
 * resumes every pending message at once), stopped when it stops leading; what it tracks is
 * leader-local (`@styx/dlx` HandOffScheduler), what is pending is replicated (the machine).
 *
 * An attempt, for each due message (batched: one pass per turn):
 * 1. the copy is built from the committed entry — the body from the body store and the time from
 *    the pending record — so every retry, on any leader, sends an identical copy;
 * 2. it is routed through the DLX and the cycle rule drops the targets it must not reach;
 * 3. the scheduler decides: `send` → enqueue at each target that has not confirmed yet, carrying
 *    the stable hand-off id (this queue's group id + the message id) and the dedupe horizon (the
 *    lowest id this queue still holds: no smaller id will ever be sent again); `unroutable` (DLX
 *    missing or nothing bound) → retry with capped back-off (5 s at most), woken at once by `wake`;
 *    `settled` → every target confirmed.
 * 4. confirms (`ok`, or `duplicate`: the target had it already) are counted per target; a refusal
 *    or an unreachable target schedules a retry with back-off; an attempt whose confirms do not all
 *    arrive in time is due again. Settled ids are proposed together, one `deadLetterSettled` per
 *    turn; only when it is applied does the machine forget them and delete their bodies.
 * No transaction spans two queues' logs: the target commits (and dedupes), then this queue commits
 * the settle; a crash between the two only causes a retry the target recognises.
 *
 * In progress at once: at most `maxInProgress()` messages (tracked by the scheduler: being
 * attempted, retried or settled); the rest wait in a FIFO backlog, in the order they died, and are
 * taken up as those settle. Why: a target remembers at most `maxIdsPerSource` hand-off ids per
 * source above that source's horizon (see `@styx/dlx` DedupeWatermarks) and forgets the smallest
 * past it. Every id this queue may send again is one taken up and not yet settled, so with fewer
 * of those than the window (half of it, with room for the settled ids the horizon has not passed
 * yet) a target recognises every repeat — after a lost confirm, and after a leader change, whose new
 * leader sends again everything the old one had not settled. Without the cap, a burst of thousands
 * of expiries put more ids above a target's window than it keeps, and a later leader change resent
 * the forgotten ones as fresh copies (a test saw 551 extra copies in a DLQ of 9,000). The cap also
 * bounds throughput: a message holds its place from its send until its `deadLetterSettled` is
 * applied (the target's commit, then this queue's), so the rate is at most the cap over that round
 * trip. The window is a replicated parameter of each target (1,024 until a target's log sets the
 * wide one, which its leader does before its first hand-off once the cluster's feature flag
 * `wide_dedupe_window` is enabled): the node tells this queue which window it may count on.
 *
 * Timer: one, of its own (not the expiry timer): armed for the scheduler's next deadline while
 * hand-offs wait or are in flight, so the expiry timer's logic stays simple and an idle queue arms
 * nothing.
 */
import type { DeadLetteredCopy, HandOffId, HandOffSchedulerOptions } from '@styx/dlx';
import {
  DEFAULT_DEDUPE_LIMITS,
  DEFAULT_HAND_OFF_OPTIONS,
  HandOffScheduler,
  SharedCopyProperties,
} from '@styx/dlx';
import type { Clock } from '@styx/raft';
import type { AggregatedLog } from './aggregated-log.ts';
import type { BodyStore } from './body-store.ts';
import type { DeadLetterDrops } from './dead-letter-drops.ts';
import type { DeadLetterTarget, RouteDeadLetter, RouteStatus } from './dead-letter-route.ts';
import { routeCopy } from './dead-letter-route.ts';
import type { DeadLetterTimings } from './dead-letter-timings.ts';
import type { QueueLogger } from './queue-logger.ts';
import type { QueueMachine } from './queue-machine.ts';
import type { QueueReply, RemovalReason } from './types.ts';

/** Hand-offs attempted per pump, at most; the rest stay due for the next pump, a timer tick later. */
export const MAX_ATTEMPTS_PER_PUMP = 1_024;
/**
 * Messages in progress at once while the targets keep the initial dedupe window (see the header):
 * half of it. With the wide window (`WIDE_DEDUPE_WINDOW`), 2,048.
 */
export const MAX_HAND_OFFS_IN_PROGRESS = DEFAULT_DEDUPE_LIMITS.maxIdsPerSource / 2;
/** Longest delay handed to setTimeout, ms (its limit is 2^31 - 1). */
const MAX_TIMER_DELAY_MS = 2_147_483_647;

/**
 * How long a dedupe horizon read from the machine is reused, ms. Reading it may cost O(n) on a
 * large queue (see `QueueMachine.lowestLiveId`); a stale one is still valid (the lowest live id
 * never decreases) and only lets the targets' watermarks rise a little later.
 */
const HORIZON_REFRESH_MS = 1_000;

export interface HandOffOptions {
  readonly vhost: string;
  /** The queue the messages died in. */
  readonly queue: string;
  /** This queue incarnation's group id: the source half of every hand-off id. */
  readonly groupId: string;
  /** Read only: pending records, the config in force, the lowest live id. */
  readonly machine: QueueMachine;
  readonly bodyStore: BodyStore;
  /**
   * A pending message's body is missing here: 'repairing' while it is fetched from another replica
   * (the attempt is retried), 'lost' once no replica has it (the message is settled, loudly).
   * Without it, a missing body is lost at once.
   */
  readonly missingBody?: (id: number) => 'repairing' | 'lost';
  readonly route: RouteDeadLetter;
  /** Propose `deadLetterSettled` for `ids`; resolves once applied. */
  readonly proposeSettled: (ids: readonly number[]) => Promise<unknown>;
  readonly clock: Clock;
  readonly logger: QueueLogger;
  readonly drops: DeadLetterDrops;
  /** Where waiting hand-offs (DLX missing, nothing bound, refused) are summed and logged. */
  readonly waitingLog: AggregatedLog;
  readonly scheduler?: HandOffSchedulerOptions;
  /** Where the time from removal to every target's confirm goes (metrics); none when absent. */
  readonly timings?: DeadLetterTimings;
  /**
   * Messages in progress at once, at most: half the dedupe window the targets keep (default
   * `MAX_HAND_OFFS_IN_PROGRESS`). Asked whenever messages are taken up, so it follows the cluster.
   */
  readonly maxInProgress?: () => number;
}

export class AtLeastOnceHandOffs {
  private readonly options: HandOffOptions;
  private readonly scheduler: HandOffScheduler;
  /**
   * Per message, the cycle drops (and their reason) of its latest attempt: counted once, when the
   * hand-off settles, so retries do not count them again.
   */
  private readonly cycleDrops = new Map<number, { readonly reason: RemovalReason; readonly n: number }>();
  private stopped = false;
  private pumpScheduled = false;
  private settleBatch: number[] | undefined = undefined;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;
  private timerAt = 0;
  /** The dedupe horizon sent with hand-offs, and when it was read (see HORIZON_REFRESH_MS). */
  private horizon = 0;
  private horizonReadAt = Number.NEGATIVE_INFINITY;
  /** Pending messages not yet taken up, in the order they died: a FIFO read from `backlogHead`. */
  private backlog: number[] = [];
  private backlogHead = 0;
  /** The same ids, for membership. */
  private readonly inBacklog = new Set<number>();
  /** Copies of a burst share their properties, encoded once (see SharedCopyProperties). */
  private readonly copies = new SharedCopyProperties();

  constructor(options: HandOffOptions) {
    this.options = options;
    this.scheduler = new HandOffScheduler(options.scheduler ?? DEFAULT_HAND_OFF_OPTIONS);
  }

  /** Hand-offs in progress whose last attempt found nowhere to go or was refused: waiting to retry. */
  get blocked(): number {
    return this.scheduler.blocked();
  }

  /** Take up every message the machine holds pending (on becoming leader), in the order they died. */
  resumeAll(): void {
    for (const entry of this.options.machine.pendingDeadLetters()) this.enqueueBacklog(entry.id);
    this.takeUp();
  }

  /** Messages that just became pending (the machine's hand-off effect). */
  track(ids: readonly number[]): void {
    for (const id of ids) this.enqueueBacklog(id);
    this.takeUp();
  }

  private enqueueBacklog(id: number): void {
    if (this.scheduler.has(id) || this.inBacklog.has(id)) return;
    this.inBacklog.add(id);
    this.backlog.push(id);
  }

  /** Moves backlog ids into the scheduler (due now) while fewer than the cap are in progress. */
  private takeUp(): void {
    if (this.stopped) return;
    const now = this.options.clock.now();
    const { machine } = this.options;
    let taken = false;
    const cap = this.options.maxInProgress?.() ?? MAX_HAND_OFFS_IN_PROGRESS;
    while (this.backlogHead < this.backlog.length && this.scheduler.size < cap) {
      const id = this.backlog[this.backlogHead++] as number;
      this.inBacklog.delete(id);
      // Settled meanwhile (a settle proposed by an earlier leader, applied since): nothing to do.
      if (machine.pendingDeadLetter(id) === undefined) continue;
      this.scheduler.track(id, now);
      taken = true;
    }
    // Compact the FIFO once its consumed head dominates it, so memory follows what is waiting.
    if (this.backlogHead > 1024 && this.backlogHead * 2 > this.backlog.length) {
      this.backlog = this.backlog.slice(this.backlogHead);
      this.backlogHead = 0;
    }
    if (taken) this.schedulePump();
  }

  /**
   * A `deadLetterSettled` entry was applied: `ids` as proposed, `settled` the ones it actually
   * removed (counted: their latest attempt's cycle drops).
   */
  settledApplied(ids: readonly number[], settled: readonly number[]): void {
    for (const id of settled) {
      const drops = this.cycleDrops.get(id);
      if (drops !== undefined) this.options.drops.cycleDropped(drops.reason, drops.n);
    }
    for (const id of ids) {
      this.scheduler.forget(id);
      this.cycleDrops.delete(id);
    }
    this.takeUp();
  }

  /** A new exchange or binding appeared: every waiting hand-off is due now. */
  wake(): void {
    if (this.stopped) return;
    if (this.scheduler.wake(this.options.clock.now()) > 0) this.schedulePump();
  }

  /** Leadership lost or queue closed: late confirms and timers do nothing from now on. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.settleBatch = undefined;
  }

  // ------------------------------------------------------------------------------ attempts

  private schedulePump(): void {
    if (this.pumpScheduled || this.stopped) return;
    this.pumpScheduled = true;
    // Never inside an apply: the sends may reach this very queue's log.
    queueMicrotask(this.pump);
  }

  private readonly pump = (): void => {
    this.pumpScheduled = false;
    if (this.stopped) return;
    const now = this.options.clock.now();
    // A bounded number per pump: a burst of 100k expired messages is handed off in slices, the
    // target committing and delivering the first copies while later ones are built (the timer
    // armed below re-pumps at once for the rest), instead of one turn that builds them all.
    const due = this.scheduler.due(now, MAX_ATTEMPTS_PER_PUMP);
    if (due.length > 0) {
      if (now - this.horizonReadAt >= HORIZON_REFRESH_MS) {
        this.horizon = this.options.machine.lowestLiveId() ?? this.horizon;
        this.horizonReadAt = now;
      }
      for (const id of due) this.attempt(id, now, this.horizon);
    }
    this.armTimer();
  };

  private attempt(id: number, now: number, horizon: number): void {
    const { machine, bodyStore, groupId, queue, vhost, route, logger } = this.options;
    const pending = machine.pendingDeadLetter(id);
    const config = machine.currentConfig();
    const dlx = config.deadLetterExchange;
    if (pending === undefined || dlx === undefined) {
      // Settled meanwhile, or released by a config change: nothing left to hand off.
      this.scheduler.forget(id);
      this.cycleDrops.delete(id);
      this.takeUp();
      return;
    }
    const message = bodyStore.get(groupId, id);
    if (message === undefined) {
      // A broken invariant (the store lost a body it must keep): fetched from another replica if one
      // has it (retried meanwhile); else nothing can ever be sent, so settle rather than retry
      // forever, loudly.
      if (this.options.missingBody?.(id) === 'repairing') {
        this.scheduler.start(id, now, { queues: [], cycleDropped: [] });
        return;
      }
      logger.error({ id, reason: pending.reason }, 'body missing for a pending dead-letter: settling it');
      this.scheduler.forget(id);
      this.settle(id);
      return;
    }
    const copy = this.copies.copy({
      message,
      queue,
      reason: pending.reason,
      dlx,
      dlk: config.deadLetterRoutingKey,
      timeSeconds: Math.floor(pending.deadLetteredAt / 1000),
    });
    const routed = routeCopy(copy, vhost, route);
    if (routed.cycleDropped.length > 0) {
      this.cycleDrops.set(id, { reason: pending.reason, n: routed.cycleDropped.length });
    } else {
      this.cycleDrops.delete(id);
    }
    const plan = this.scheduler.start(id, now, {
      queues: routed.deliver.map(nameOf),
      cycleDropped: routed.cycleDropped,
    });
    switch (plan.type) {
      case 'unroutable':
        this.options.waitingLog.add(waitingReason(routed.status, dlx));
        return;
      case 'settled':
        this.settle(id);
        return;
      case 'send': {
        const handOff: HandOffId = { source: groupId, messageId: id, horizon };
        for (const target of routed.deliver) {
          if (!plan.queues.includes(target.name)) continue;
          this.send(target, id, copy, handOff);
        }
        return;
      }
    }
  }

  private send(target: DeadLetterTarget, id: number, copy: DeadLetteredCopy, handOff: HandOffId): void {
    target.enqueue(copy, undefined, handOff).then(
      (reply) => this.replied(id, target.name, reply),
      (err: unknown) => {
        this.options.logger.debug({ err, id, target: target.name }, 'dead-letter hand-off enqueue failed');
        this.failed(id, `'${target.name}' unreachable`);
      },
    );
  }

  private replied(id: number, target: string, reply: QueueReply): void {
    if (this.stopped) return;
    if (reply.type === 'ok' || reply.type === 'duplicate') {
      if (this.scheduler.confirm(id, target) === 'settled') {
        this.copied(id);
        this.settle(id);
      }
      return;
    }
    const why = reply.type === 'rejected' ? reply.reason : reply.type;
    this.failed(id, `'${target}' refused (${why})`);
  }

  /** Every target confirmed `id`'s copy: time it from the entry that removed the message. */
  private copied(id: number): void {
    const { timings, machine, clock } = this.options;
    const pending = timings === undefined ? undefined : machine.pendingDeadLetter(id);
    if (pending !== undefined) timings?.copied('at-least-once', pending.deadLetteredAt, clock.now());
  }

  private failed(id: number, why: string): void {
    if (this.stopped) return;
    if (this.scheduler.fail(id, this.options.clock.now()) === undefined) return;
    this.options.waitingLog.add(why);
    this.armTimer();
  }

  // ------------------------------------------------------------------------------ settling

  private settle(id: number): void {
    if (this.settleBatch === undefined) {
      this.settleBatch = [id];
      queueMicrotask(this.proposeSettle);
    } else {
      this.settleBatch.push(id);
    }
  }

  private readonly proposeSettle = (): void => {
    const ids = this.settleBatch;
    this.settleBatch = undefined;
    if (ids === undefined || this.stopped) return;
    this.options.proposeSettled(ids).catch((err: unknown) => {
      if (this.stopped) return;
      const code = (err as { code?: unknown } | undefined)?.code;
      if (code === 'LOG_CLOSED' || code === 'NOT_LEADER') {
        this.options.logger.debug({ err }, 'deadLetterSettled not proposed');
        return;
      }
      this.options.logger.warn({ err, count: ids.length }, 'deadLetterSettled proposal failed: retrying');
      const now = this.options.clock.now();
      for (const id of ids) this.scheduler.settleFailed(id, now);
      this.schedulePump();
    });
  };

  // ------------------------------------------------------------------------------ the timer

  /** Arm the timer for the scheduler's next deadline, unless an earlier one is armed. */
  private armTimer(): void {
    if (this.stopped) return;
    const at = this.scheduler.nextDeadline();
    if (at === undefined) return;
    if (this.timer !== undefined && this.timerAt <= at) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const now = this.options.clock.now();
    const delay = Math.min(Math.max(at - now, 0), MAX_TIMER_DELAY_MS);
    this.timerAt = now + delay;
    this.timer = setTimeout(this.onTimer, delay);
    this.timer.unref?.();
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.pump();
  };
}

function nameOf(target: DeadLetterTarget): string {
  return target.name;
}

/** Why an attempt found nowhere to send, as the waiting log sums it. */
function waitingReason(status: RouteStatus, dlx: string): string {
  switch (status) {
    case 'no-exchange':
      return `no exchange '${dlx}'`;
    case 'unavailable':
      return `target queues of '${dlx}' not running yet`;
    case 'routed':
      return `nothing bound to '${dlx}'`;
  }
}
