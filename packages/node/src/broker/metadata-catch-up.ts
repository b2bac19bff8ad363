/**
 * Read-your-writes for names this node's metadata replica does not know yet.
 *
 * A declare acknowledged on another node is committed by the metadata group (a majority holds it),
 * but this node's replica applies it only once it hears the new commit index, a round trip later.
 * Before answering "not found" for a queue or exchange, a node asks the metadata leader for its
 * commit index (Raft's ReadIndex: the leader confirms it still leads with a heartbeat round, after
 * an entry of its own term committed), waits until its replica applied up to it, and looks again.
 *
 * Coalescing: one read-index request in flight per node. A request goes out at the end of the
 * turn that asked for it, so every miss of that turn shares it. A caller arriving while one is in
 * flight cannot be served by it (the leader may have recorded its index before the caller's write
 * was acknowledged), so it joins the next request, sent when the current one completes: every
 * caller waits at most two rounds (two timeouts at worst), and a burst of misses costs two requests,
 * not one per miss.
 */
import type { Logger } from '../logging/logger.ts';

/** What a catch-up needs of the metadata group (`RaftGroupLog.barrier`). */
export interface ReadBarrier {
  /** Resolves once the replica applied what a leader confirmed committed; rejects after `timeoutMs`. */
  barrier(timeoutMs: number): Promise<void>;
}

/** How long a miss waits for the leader's read index before answering not found as before, ms. */
export const METADATA_READ_TIMEOUT_MS = 2_000;

export interface MetadataCatchUpOptions {
  /** The metadata group, or undefined when there is none to ask (a single node: always current). */
  readonly group: () => ReadBarrier | undefined;
  readonly logger: Logger;
  /** Bound on one read-index round (default `METADATA_READ_TIMEOUT_MS`). */
  readonly timeoutMs?: number;
}

/** One read-index request and the callers it serves. */
class Round {
  /** Why the round failed (timeout, no leader, stopped), for each caller's log line. */
  failure: unknown;
  /** True once the replica applied the confirmed index; false when the round failed. */
  readonly done: Promise<boolean>;

  /** A round asked once `after` (the round in flight, or nothing: this turn's end) settles. */
  constructor(after: Promise<unknown>, ask: (round: Round) => Promise<boolean>) {
    this.done = after.then(() => ask(this));
  }
}

export class MetadataCatchUp {
  readonly #group: () => ReadBarrier | undefined;
  readonly #logger: Logger;
  readonly #timeoutMs: number;
  #inFlight: Round | undefined;
  /**
   * The round not asked yet (at the end of this turn, or when `#inFlight` completes), shared by
   * everyone who arrives meanwhile.
   */
  #next: Round | undefined;
  /** Read-index rounds sent (metrics and tests). */
  rounds = 0;

  constructor(options: MetadataCatchUpOptions) {
    this.#group = options.group;
    this.#logger = options.logger;
    this.#timeoutMs = options.timeoutMs ?? METADATA_READ_TIMEOUT_MS;
  }

  /**
   * Undefined when the name is `known` here, or there is no metadata group to ask (the fast path:
   * nothing waits); else a promise that resolves once the replica caught up with everything
   * committed before this call, so that a second look sees every declare acknowledged anywhere
   * before it. Never rejects: when the leader does not confirm in time it resolves all the same
   * (the caller answers not found as before) and a warning names `what()` was missing.
   */
  catchUpUnless(known: boolean, what: () => string): Promise<void> | undefined {
    if (known || this.#group() === undefined) return undefined;
    return this.#caughtUp(what);
  }

  async #caughtUp(what: () => string): Promise<void> {
    const round = this.#join();
    if (await round.done) return;
    this.#logger.warn(
      { err: round.failure, timeoutMs: this.#timeoutMs },
      `${what()}: unknown on this node, and the metadata leader did not confirm its commit index in time; answered as missing`,
    );
  }

  /** The round a caller arriving now is served by: one not asked yet, never the one in flight. */
  #join(): Round {
    this.#next ??= new Round(this.#inFlight?.done ?? Promise.resolve(), (r) => this.#ask(r));
    return this.#next;
  }

  /** Send `round`'s read-index request and wait for the replica to apply up to its index. */
  async #ask(round: Round): Promise<boolean> {
    if (this.#next === round) this.#next = undefined;
    this.#inFlight = round;
    this.rounds++;
    try {
      const group = this.#group();
      if (group !== undefined) await group.barrier(this.#timeoutMs);
      return true;
    } catch (error) {
      round.failure = error;
      return false;
    } finally {
      if (this.#inFlight === round) this.#inFlight = undefined;
    }
  }
}
