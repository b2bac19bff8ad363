/**
 * Repair of a queue replica that is not whole: a live message in its state whose body its body
 * store lacks. That must never happen (every path that installs state installs the bodies with it),
 * but a bug or a damaged disk can make it happen, and a leader that silently lacks a body stalls
 * its queue: the delivery fails, the message stays checked out, the consumer's credit is gone.
 *
 * So a leader that finds a body missing (when it takes over, or when a delivery, a get or a
 * dead-letter hand-off needs it) asks the group's other replicas for it (`BodySource`), stores what
 * they send (durably, like any put) and carries on with what was waiting. Ids are asked for in
 * batches, again with capped back-off while no replica answers. A body that every other replica
 * reports missing, each having applied past the message's enqueue, is lost everywhere: its
 * waiters are told (undefined), so the actor can remove the message instead of stalling on it.
 *
 * Alarms: the first missing body of a burst logs an error naming the group and how many are
 * missing; `status()` feeds the management API (the queue's `bodies_missing`, `bodies_lost`).
 */
import type { BodyStore } from './body-store.ts';
import type { StoredMessage } from './types.ts';

/** What the group's other replicas answered for some ids. */
export interface BodyFetchResult {
  /** Bodies some replica holds. */
  readonly found: ReadonlyMap<number, StoredMessage>;
  /**
   * Ids that every other replica answered for, having applied past them, and none holds: lost on
   * every replica. Ids in neither list are still unknown (a replica did not answer).
   */
  readonly lost: readonly number[];
}

/** Asks the other replicas of a group for message bodies. */
export interface BodySource {
  fetch(groupId: string, ids: readonly number[]): Promise<BodyFetchResult>;
}

/** What the management API shows of a replica's repairs. */
export interface BodyRepairStatus {
  /** Live messages whose body is missing here and being asked for. */
  readonly missing: number;
  /** Bodies fetched from another replica since this replica opened. */
  readonly repaired: number;
  /** Messages found lost on every replica since this replica opened. */
  readonly lost: number;
}

export interface BodyRepairLogger {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface BodyRepairOptions {
  readonly groupId: string;
  readonly bodyStore: BodyStore;
  /** The other replicas; undefined on a node alone (a missing body then has nowhere to come from). */
  readonly source: BodySource | undefined;
  readonly logger: BodyRepairLogger;
  /**
   * Whether message `id` is still live in the replica's state: a body that arrives after its
   * message left is not stored (it would never be deleted).
   */
  readonly isLive: (id: number) => boolean;
  /** First retry after a fetch that left ids unknown, ms (doubles up to `maxRetryMs`). */
  readonly retryMs?: number;
  readonly maxRetryMs?: number;
}

/** Ids asked for in one fetch: bounds a request and its answer (bodies) on the cluster RPC. */
export const BODY_FETCH_BATCH = 256;
const DEFAULT_RETRY_MS = 250;
const DEFAULT_MAX_RETRY_MS = 10_000;

/** Called with the repaired body, or undefined once the body is known lost on every replica. */
export type BodyWaiter = (message: StoredMessage | undefined) => void;

export class BodyRepair {
  readonly #options: BodyRepairOptions;
  /** id → what waits for its body, in the order the ids went missing. */
  readonly #waiting = new Map<number, BodyWaiter[]>();
  readonly #lostIds = new Set<number>();
  #running = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #retryMs: number;
  #stopped = false;
  #repaired = 0;
  #lost = 0;
  /** A burst of missing bodies is alarmed once, until the replica is whole again. */
  #alarmed = false;

  constructor(options: BodyRepairOptions) {
    this.#options = options;
    this.#retryMs = options.retryMs ?? DEFAULT_RETRY_MS;
  }

  status(): BodyRepairStatus {
    return { missing: this.#waiting.size, repaired: this.#repaired, lost: this.#lost };
  }

  /** Whether `id` was found lost on every replica (its message should be removed, not retried). */
  isLost(id: number): boolean {
    return this.#lostIds.has(id);
  }

  /** The body of live message `id` is missing here: fetch it; `then` runs once it is back or lost. */
  missing(id: number, then: BodyWaiter = ignore): void {
    if (this.#stopped) return;
    if (this.#lostIds.has(id)) {
      then(undefined);
      return;
    }
    const waiters = this.#waiting.get(id);
    if (waiters !== undefined) {
      waiters.push(then);
      return;
    }
    this.#waiting.set(id, [then]);
    if (!this.#alarmed) {
      this.#alarmed = true;
      this.#options.logger.error(
        { groupId: this.#options.groupId, id },
        'replica is not whole: live message body missing from the body store; fetching it from the other replicas',
      );
    }
    this.#schedule(0);
  }

  /**
   * Forget what waits (this replica stopped leading or closed: the next leader re-derives its
   * duties). A fetch in flight still stores what it brings back.
   */
  reset(): void {
    this.#waiting.clear();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#retryMs = this.#options.retryMs ?? DEFAULT_RETRY_MS;
    this.#alarmed = false;
  }

  stop(): void {
    this.#stopped = true;
    this.reset();
  }

  #schedule(delayMs: number): void {
    if (this.#running || this.#timer !== undefined || this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#run();
    }, delayMs);
    this.#timer.unref?.();
  }

  async #run(): Promise<void> {
    if (this.#running || this.#stopped || this.#waiting.size === 0) return;
    this.#running = true;
    const { groupId, source, logger } = this.#options;
    const ids: number[] = [];
    for (const id of this.#waiting.keys()) {
      ids.push(id);
      if (ids.length === BODY_FETCH_BATCH) break;
    }
    let result: BodyFetchResult;
    try {
      // On a node alone nobody else can hold it: every missing body is lost.
      result = source === undefined ? { found: new Map(), lost: ids } : await source.fetch(groupId, ids);
    } catch (err) {
      logger.warn({ err, groupId, ids: ids.length }, 'fetching missing bodies failed; retrying');
      result = { found: new Map(), lost: [] };
    } finally {
      this.#running = false;
    }
    let progress = false;
    for (const [id, message] of result.found) {
      if (!this.#settle(id, message)) continue;
      progress = true;
      this.#repaired++;
    }
    for (const id of result.lost) {
      if (result.found.has(id) || !this.#settle(id, undefined)) continue;
      progress = true;
      this.#lost++;
      this.#lostIds.add(id);
    }
    if (result.lost.length > 0) {
      logger.error(
        { groupId, ids: result.lost.slice(0, 20), count: result.lost.length },
        'message bodies lost on every replica: their messages are removed',
      );
    }
    if (this.#waiting.size === 0) {
      if (this.#alarmed)
        logger.info({ groupId, repaired: this.#repaired, lost: this.#lost }, 'replica whole again');
      this.#alarmed = false;
      this.#retryMs = this.#options.retryMs ?? DEFAULT_RETRY_MS;
      return;
    }
    if (progress) {
      this.#schedule(0);
    } else {
      const delay = this.#retryMs;
      this.#retryMs = Math.min(delay * 2, this.#options.maxRetryMs ?? DEFAULT_MAX_RETRY_MS);
      this.#schedule(delay);
    }
  }

  /** Store `message` (if any) and run the waiters of `id`; false if nothing waited for it. */
  #settle(id: number, message: StoredMessage | undefined): boolean {
    const waiters = this.#waiting.get(id);
    if (message !== undefined && !this.#stopped && this.#options.isLive(id)) {
      try {
        this.#options.bodyStore.put(this.#options.groupId, id, message);
      } catch (err) {
        this.#options.logger.warn({ err, id }, 'storing a repaired body failed');
      }
    }
    if (waiters === undefined) return false;
    this.#waiting.delete(id);
    for (const waiter of waiters) {
      try {
        waiter(message);
      } catch (err) {
        this.#options.logger.warn({ err, id }, 'a repaired body waiter failed');
      }
    }
    return true;
  }
}

function ignore(): void {}
