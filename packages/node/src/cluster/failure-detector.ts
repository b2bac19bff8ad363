/**
 * The failure detector of a node's cluster members: suspicion, never a verdict.
 *
 * A member that misses pings in a row, or whose connection drops, is *suspected*: it may be
 * paused, partitioned, or just slow. Suspicion is cheap to take back — the member answers a ping
 * and it is *recovered*. What callers do with a suspicion is theirs (queues stop delivering to its
 * consumers; Raft groups it leads are woken); what they do only when a member is known gone is
 * decided from what this detector knows for sure:
 *
 * - **a new incarnation**: every process start of a node picks a fresh incarnation id, which it
 *   sends in every ping answer (and its `node-up` gossip). A different id than the one known means
 *   the node restarted: whatever its earlier process held (channels, consumers) is gone.
 * - **how long it has been unreachable** (`unreachableFor`), on a monotonic clock: callers compare
 *   it with their own timeout (a queue's `consumer-disconnected-timeout`).
 *
 * This process may itself stall (SIGSTOP, an event loop blocked by a long task). While it is
 * stalled its pings cannot be answered in time and its timers fire late, all at once, after it
 * resumes: it would suspect every member that was up all along. So every input first compares the
 * time since the last `tick` (called every second) with `stallThresholdMs`; a longer gap is a
 * local stall: pings sent before it no longer count as missed, missed counts start again, and the
 * stall's duration does not count toward any member's time unreachable (a member suspected before
 * the stall gets a fresh chance to answer before a caller's timeout can expire).
 *
 * Pure: no timers, no I/O; the caller passes the monotonic time (`performance.now()`) to every
 * input and gets events through `onEvent`.
 */

/** Why a member is suspected. */
export type SuspicionReason = 'missed-pings' | 'disconnected';

export type DetectorEvent =
  /** `peer` stopped answering or lost its connection: suspected (not known gone). */
  | { readonly type: 'suspected'; readonly peer: string; readonly reason: SuspicionReason }
  /** `peer` answered a ping again, `unreachableMs` after it was suspected (stalls excluded). */
  | { readonly type: 'recovered'; readonly peer: string; readonly unreachableMs: number }
  /** `peer` answered as a new incarnation: it restarted since `previous` answered. */
  | {
      readonly type: 'restarted';
      readonly peer: string;
      readonly incarnation: string;
      readonly previous: string;
    }
  /** This process did not run for `pausedMs` (stalled or paused): peers get a fresh chance. */
  | { readonly type: 'stalled'; readonly pausedMs: number };

export interface FailureDetectorOptions {
  /** Missed pings in a row after which a member is suspected (default 2). */
  readonly missedPingsToSuspect?: number;
  /** A gap between two `tick`s (or a tick and any input) longer than this is a local stall, ms. */
  readonly stallThresholdMs: number;
  /** Called with each event, synchronously, inside the input that caused it. */
  readonly onEvent: (event: DetectorEvent) => void;
}

/** A ping's token: which stall-epoch it was sent in (a ping from before a stall does not count). */
export type PingToken = number;

interface PeerState {
  missed: number;
  suspected: boolean;
  /** When it was suspected, shifted forward by local stalls since; monotonic ms. */
  suspectedAt: number;
  incarnation: string | undefined;
}

export const DEFAULT_MISSED_PINGS_TO_SUSPECT = 2;

export class FailureDetector {
  readonly #missedToSuspect: number;
  readonly #stallThresholdMs: number;
  readonly #emit: (event: DetectorEvent) => void;
  readonly #peers = new Map<string, PeerState>();
  /** Bumped by each local stall: pings of an earlier epoch are void when they fail. */
  #epoch = 0;
  #lastTick: number | undefined = undefined;

  constructor(options: FailureDetectorOptions) {
    this.#missedToSuspect = options.missedPingsToSuspect ?? DEFAULT_MISSED_PINGS_TO_SUSPECT;
    this.#stallThresholdMs = options.stallThresholdMs;
    this.#emit = options.onEvent;
  }

  // ------------------------------------------------------------------------------ inputs

  /** The caller's periodic timer ran (every second or so): also how a local stall is noticed. */
  tick(now: number): void {
    this.#checkStall(now);
    this.#lastTick = now;
  }

  /** A ping to `peer` is sent now: pass the token back with its outcome. */
  pingStarted(peer: string, now: number): PingToken {
    this.#checkStall(now);
    this.#peer(peer);
    return this.#epoch;
  }

  /**
   * `peer` answered a ping (any answer proves it runs, whenever the ping was sent), as
   * `incarnation` (undefined: a node that does not send one).
   */
  pingAnswered(peer: string, incarnation: string | undefined, now: number): void {
    this.#checkStall(now);
    const state = this.#peer(peer);
    state.missed = 0;
    if (incarnation !== undefined) this.#incarnation(peer, state, incarnation);
    if (state.suspected) {
      state.suspected = false;
      this.#emit({ type: 'recovered', peer, unreachableMs: Math.max(0, now - state.suspectedAt) });
    }
  }

  /** A ping to `peer` got no answer in time (or failed). Void when sent before a local stall. */
  pingMissed(peer: string, token: PingToken, now: number): void {
    this.#checkStall(now);
    if (token !== this.#epoch) return;
    const state = this.#peer(peer);
    state.missed++;
    if (state.missed >= this.#missedToSuspect) this.#suspect(peer, state, 'missed-pings', now);
  }

  /**
   * Bytes of `peer`'s own traffic (a Raft batch) arrived now: it runs and reaches this node, so
   * pings it missed until now are forgiven (its missed count starts again). Why: a ping shares the
   * connection with that traffic, and behind megabytes of Raft frames from a busy peer (thousands of
   * groups electing after a member died) it can take longer than its timeout; suspecting such a
   * peer, and dropping its connection as silent, cut every group's quorum between the two survivors
   * and fed the very election storm that delayed the ping. It does not recover a suspected peer
   * (only a ping answer does, with its incarnation), and a peer that stops, is paused or is cut off
   * sends nothing, so it is suspected after its missed pings as before.
   */
  heardFrom(peer: string, now: number): void {
    this.#checkStall(now);
    const state = this.#peers.get(peer);
    if (state !== undefined) state.missed = 0;
  }

  /** Every connection to `peer` closed: suspected at once (it is re-dialled and pinged). */
  disconnected(peer: string, now: number): void {
    this.#checkStall(now);
    this.#suspect(peer, this.#peer(peer), 'disconnected', now);
  }

  /**
   * `peer` announced itself as `incarnation` by other means (gossip): a different one than known
   * is a restart. It does not recover a suspected peer (only an answer to a ping does).
   */
  announced(peer: string, incarnation: string, now: number): void {
    this.#checkStall(now);
    this.#incarnation(peer, this.#peer(peer), incarnation);
  }

  /** `peer` left the cluster (forgotten): nothing more is known of it. */
  remove(peer: string): void {
    this.#peers.delete(peer);
  }

  // ------------------------------------------------------------------------------ reads

  isSuspected(peer: string): boolean {
    return this.#peers.get(peer)?.suspected ?? false;
  }

  /** How long `peer` has been suspected as of `now`, local stalls excluded; 0 while it is not. */
  unreachableFor(peer: string, now: number): number {
    this.#checkStall(now);
    const state = this.#peers.get(peer);
    if (state === undefined || !state.suspected) return 0;
    return Math.max(0, now - state.suspectedAt);
  }

  /** The incarnation `peer` last answered as, if it sent one. */
  incarnationOf(peer: string): string | undefined {
    return this.#peers.get(peer)?.incarnation;
  }

  // ------------------------------------------------------------------------------ internals

  #peer(peer: string): PeerState {
    let state = this.#peers.get(peer);
    if (state === undefined) {
      state = { missed: 0, suspected: false, suspectedAt: 0, incarnation: undefined };
      this.#peers.set(peer, state);
    }
    return state;
  }

  #suspect(peer: string, state: PeerState, reason: SuspicionReason, now: number): void {
    if (state.suspected) return;
    state.suspected = true;
    state.suspectedAt = now;
    this.#emit({ type: 'suspected', peer, reason });
  }

  #incarnation(peer: string, state: PeerState, incarnation: string): void {
    const previous = state.incarnation;
    state.incarnation = incarnation;
    if (previous !== undefined && previous !== incarnation)
      this.#emit({ type: 'restarted', peer, incarnation, previous });
  }

  /**
   * A gap since the last tick longer than the threshold: this process did not run. Pings in flight
   * across it are void, missed counts restart, and the gap is not counted as anyone's time
   * unreachable. The tick is moved up to now, so one stall is handled once.
   */
  #checkStall(now: number): void {
    const last = this.#lastTick;
    if (last === undefined) return;
    const gap = now - last;
    if (gap <= this.#stallThresholdMs) return;
    this.#lastTick = now;
    this.#epoch++;
    for (const state of this.#peers.values()) {
      state.missed = 0;
      if (state.suspected) state.suspectedAt += gap;
    }
    this.#emit({ type: 'stalled', pausedMs: gap });
  }
}
