/**
 * The target side of idempotent hand-offs: recognising a transfer that arrives again.
 *
 * A dead-letter copy (or a forwarded publish) whose confirm was lost is sent again with the same
 * stable id: the source queue's incarnation id plus the message's id in it (or a publisher id plus a
 * sequence number). The target queue's state machine calls `accept` when it applies the enqueue and
 * drops the message when the answer is `duplicate` (still confirming it: the source needs the
 * confirm to settle). Applied in log order on every replica, the state is replicated and
 * deterministic; it is plain data for snapshots.
 *
 * Per source the state is a watermark W and the set of ids above W already accepted:
 * - an id <= W, or in the set, is a duplicate;
 * - W rises with the source's horizon: each transfer carries the lowest id its source may still send
 *   (the lowest id the source queue still holds, queued or pending hand-off), so every id below it is
 *   settled at the source and will never be sent again. W = horizon - 1 and the set drops ids <= W.
 *   Ids are not contiguous (a queue dead-letters only some of its messages, and a target sees only
 *   those routed to it), so a watermark cannot advance by filling gaps: the horizon is what moves it.
 * - Bounds: at most `maxIdsPerSource` ids above W per source — past it the smallest is forgotten —
 *   and at most `maxSources` sources — past it the least recently used source is forgotten. Both
 *   bounds only ever forget that something was seen, so their cost is a possible duplicate delivery
 *   (allowed by at-least-once), never a lost message: W is raised by horizons alone, never by
 *   eviction.
 *
 * Worked example (source s, ids out of order): accept(s, 7, 5) → new (W=4, set {7});
 * accept(s, 5, 5) → new (set {5, 7}); accept(s, 7, 5) → duplicate; accept(s, 9, 8) → new (W=7, set
 * {9}); accept(s, 5, 8) → duplicate (5 <= W).
 *
 * Order (publishes only, `inOrder`): a source that numbers its ids 1, 2, 3... without gaps (one
 * queue handle of a node) asks that an id be taken only once every id between its horizon and it
 * was taken. Taken ids above the horizon then form one run [horizon, highest taken], so the test
 * needs the highest id taken alone: id <= max(horizon, highest + 1). An id that arrives ahead of
 * a missing one (which was refused and is being sent again, or is still on its way) is refused so
 * the source sends it again after that one: a publisher's messages land in the order it sent them,
 * whatever retries and leader changes happened in between.
 *
 * The window (`maxIdsPerSource`) decides verdicts, so every replica of a queue must use the same
 * one at the same log index: it starts at `DEFAULT_DEDUPE_LIMITS` (1,024, what every build before
 * the wider window used) and changes only through `setMaxIdsPerSource`, which the queue machine
 * calls when it applies a replicated command (the node's `setDedupeWindow` entry), never from a
 * node's own setting.
 *
 * Memory: at most maxSources × maxIdsPerSource ids (~50 B each in a Set plus a heap slot): 256 ×
 * 1,024 ≈ 13 MB per queue in the worst case (every source stuck with a full window), 52 MB with
 * the wide window (`WIDE_DEDUPE_WINDOW`); typically the ids of one source's transfers in flight.
 */
import { DeadLetterInputError, DlxConfigError, DlxSnapshotError } from './errors.ts';
import { NumberMinHeap } from './number-min-heap.ts';

/** The stable identity a hand-off carries from source to target. */
export interface HandOffId {
  /** The source queue's incarnation id (or a publisher's id, for forwarded publishes). */
  readonly source: string;
  /** The message's id in the source queue (or the publish sequence number); >= 0. */
  readonly messageId: number;
  /**
   * The source's promise that it will never send an id below this again (its lowest live id when
   * it sent this one); 0 promises nothing. Always <= messageId for a correct source.
   */
  readonly horizon: number;
}

export interface DedupeLimits {
  /** Ids remembered above a source's watermark; >= 1. Past it the smallest is forgotten. */
  readonly maxIdsPerSource: number;
  /** Sources remembered; >= 1. Past it the least recently used source is forgotten. */
  readonly maxSources: number;
}

export const DEFAULT_DEDUPE_LIMITS: DedupeLimits = Object.freeze({ maxIdsPerSource: 1024, maxSources: 256 });

/**
 * The window a queue takes once its log says so (the node's `setDedupeWindow`, proposed once every
 * member supports it): a source keeps half a target's window in progress, and a hand-off holds its
 * place for two commits (the target's enqueue, then the source's settle), so half the window over
 * that round trip caps a source's dead-letter rate. With 1,024 a 5k/s TTL stream on a loaded
 * machine (commits of 50–300 ms) kept 512 in progress at all times while its backlog grew.
 */
export const WIDE_DEDUPE_WINDOW = 4096;

/** The largest window a replicated command may set (bounds a target's memory: 256 × this ids). */
export const MAX_DEDUPE_WINDOW = 65_536;

/** `accept`'s answer: deliver (`new`) or drop (`duplicate`). */
export type DedupeVerdict = 'new' | 'duplicate';

/** One source's state as plain data; `watermark` -1 means none yet, `above` is ascending. */
export interface DedupeSourceSnapshot {
  readonly source: string;
  readonly watermark: number;
  readonly above: readonly number[];
}

/** `DedupeWatermarks` as plain data (JSON-safe), sources least recently used first. */
export interface DedupeSnapshot {
  readonly version: 1;
  readonly sources: readonly DedupeSourceSnapshot[];
}

/** Whether `n` is a window `setMaxIdsPerSource` takes. */
export function isDedupeWindow(n: number): boolean {
  return Number.isSafeInteger(n) && n >= 1 && n <= MAX_DEDUPE_WINDOW;
}

/** Throws DlxConfigError when `limits` break a documented bound. */
export function validateDedupeLimits(limits: DedupeLimits): void {
  if (!Number.isSafeInteger(limits.maxIdsPerSource) || limits.maxIdsPerSource < 1) {
    throw new DlxConfigError(`dedupe maxIdsPerSource must be an integer >= 1, got ${limits.maxIdsPerSource}`);
  }
  if (!Number.isSafeInteger(limits.maxSources) || limits.maxSources < 1) {
    throw new DlxConfigError(`dedupe maxSources must be an integer >= 1, got ${limits.maxSources}`);
  }
}

interface SourceState {
  /** Every id <= watermark is a duplicate; -1 before any horizon. */
  watermark: number;
  /** Accepted ids > watermark. */
  readonly above: Set<number>;
  /** Exactly the same ids, ordered for the smallest one (pruning and eviction). */
  readonly order: NumberMinHeap;
  /** The highest id ever accepted (-1: none): kept past pruning and eviction. */
  highest: number;
}

export class DedupeWatermarks {
  /** Insertion order = recency: the first key is the least recently used source. */
  private readonly sources = new Map<string, SourceState>();
  private limits: DedupeLimits;
  /** The most recently used source, to skip the recency update on a burst from one source. */
  private lastSource: string | undefined = undefined;

  constructor(limits: DedupeLimits = DEFAULT_DEDUPE_LIMITS) {
    validateDedupeLimits(limits);
    this.limits = limits;
  }

  /** The window: ids remembered above each source's watermark. */
  get maxIdsPerSource(): number {
    return this.limits.maxIdsPerSource;
  }

  /**
   * A new window, from now on. A smaller one forgets each source's smallest ids past it at once (a
   * possible duplicate delivery later, never a lost message). Deterministic: replicas that call it
   * at the same point of the same sequence of `accept`s keep the same state. Throws DlxConfigError
   * outside [1, MAX_DEDUPE_WINDOW].
   */
  setMaxIdsPerSource(maxIdsPerSource: number): void {
    if (!isDedupeWindow(maxIdsPerSource)) {
      throw new DlxConfigError(
        `dedupe window must be an integer in [1, ${MAX_DEDUPE_WINDOW}], got ${maxIdsPerSource}`,
      );
    }
    this.limits = Object.freeze({ ...this.limits, maxIdsPerSource });
    for (const state of this.sources.values())
      while (state.above.size > maxIdsPerSource) forgetSmallest(state);
  }

  /** Sources remembered. */
  get sourceCount(): number {
    return this.sources.size;
  }

  /**
   * Whether the transfer `messageId` from `source` is seen for the first time (`new`: deliver it)
   * or again (`duplicate`: drop it). `horizon` (see {@link HandOffId}) first raises the watermark; a
   * horizon above `messageId` (a broken source) is clamped to it, so it can never make the transfer
   * carrying it a duplicate. Throws DeadLetterInputError for ids that are not non-negative integers.
   */
  accept(source: string, messageId: number, horizon = 0): DedupeVerdict {
    if (!Number.isSafeInteger(messageId) || messageId < 0) {
      throw new DeadLetterInputError(`hand-off messageId must be a non-negative integer, got ${messageId}`);
    }
    if (!Number.isSafeInteger(horizon) || horizon < 0) {
      throw new DeadLetterInputError(`hand-off horizon must be a non-negative integer, got ${horizon}`);
    }
    const state = this.touch(source);
    raiseWatermark(state, Math.min(horizon, messageId) - 1);
    if (messageId <= state.watermark || state.above.has(messageId)) return 'duplicate';
    state.above.add(messageId);
    state.order.push(messageId);
    if (messageId > state.highest) state.highest = messageId;
    if (state.above.size > this.limits.maxIdsPerSource) forgetSmallest(state);
    return 'new';
  }

  /**
   * Whether `messageId` from a gap-free source (see the header's "Order") may be taken now: every id
   * from `horizon` up to it was taken already. False means an earlier id is missing: refuse this
   * one for now (nothing recorded), the source sends it again after the missing one. From a source
   * not remembered (new, or forgotten past `maxSources`) only the lowest id in flight is in order
   * (`messageId <= horizon`): nothing was taken yet to build on. Records nothing.
   */
  inOrder(source: string, messageId: number, horizon: number): boolean {
    const state = this.sources.get(source);
    if (state === undefined) return messageId <= horizon;
    const next = Math.max(horizon, state.watermark + 1, state.highest + 1);
    return messageId <= next;
  }

  /**
   * Whether `accept` would answer `duplicate` for this id now, without recording anything (nor
   * refreshing the source's recency): for callers that must refuse an id for another reason first
   * yet recognise one they already took.
   */
  hasSeen(source: string, messageId: number): boolean {
    const state = this.sources.get(source);
    return state !== undefined && (messageId <= state.watermark || state.above.has(messageId));
  }

  /** The source's watermark (-1: none yet), or undefined when the source is not remembered. */
  watermark(source: string): number | undefined {
    return this.sources.get(source)?.watermark;
  }

  /** How many ids above its watermark the source has (0 when not remembered). */
  idsAbove(source: string): number {
    return this.sources.get(source)?.above.size ?? 0;
  }

  /** Forgets a source (its queue was deleted: its incarnation never sends again). */
  forgetSource(source: string): boolean {
    if (this.lastSource === source) this.lastSource = undefined;
    return this.sources.delete(source);
  }

  toSnapshot(): DedupeSnapshot {
    const sources: DedupeSourceSnapshot[] = [];
    for (const [source, s] of this.sources) {
      const above = Array.from(s.above).sort((a, b) => a - b);
      sources.push({ source, watermark: s.watermark, above });
    }
    return { version: 1, sources };
  }

  /** Rebuilds from `toSnapshot()`'s output. Throws DlxSnapshotError when it is malformed. */
  static fromSnapshot(
    snapshot: DedupeSnapshot,
    limits: DedupeLimits = DEFAULT_DEDUPE_LIMITS,
  ): DedupeWatermarks {
    if (snapshot?.version !== 1 || !Array.isArray(snapshot.sources)) {
      throw new DlxSnapshotError('dedupe: unknown version or no sources');
    }
    const dedupe = new DedupeWatermarks(limits);
    for (const s of snapshot.sources) {
      const valid =
        typeof s.source === 'string' &&
        !dedupe.sources.has(s.source) &&
        Number.isSafeInteger(s.watermark) &&
        s.watermark >= -1 &&
        Array.isArray(s.above) &&
        s.above.every((id: number) => Number.isSafeInteger(id) && id > s.watermark);
      if (!valid) throw new DlxSnapshotError(`dedupe: bad source ${JSON.stringify(s)}`);
      const state = dedupe.touch(s.source);
      state.watermark = s.watermark;
      // The highest taken id is the set's largest (or the watermark's): snapshots need no new field.
      state.highest = s.watermark;
      for (const id of s.above) {
        if (id > state.highest) state.highest = id;
        if (state.above.has(id)) continue;
        state.above.add(id);
        state.order.push(id);
        if (state.above.size > limits.maxIdsPerSource) forgetSmallest(state);
      }
    }
    return dedupe;
  }

  /** The source's state, created if new, marked most recently used; evicts the LRU source past the cap. */
  private touch(source: string): SourceState {
    let state = this.sources.get(source);
    if (state !== undefined) {
      if (this.lastSource !== source) {
        this.sources.delete(source);
        this.sources.set(source, state);
        this.lastSource = source;
      }
      return state;
    }
    state = { watermark: -1, above: new Set(), order: new NumberMinHeap(), highest: -1 };
    this.sources.set(source, state);
    this.lastSource = source;
    if (this.sources.size > this.limits.maxSources) {
      const oldest = this.sources.keys().next().value as string;
      this.sources.delete(oldest);
    }
    return state;
  }
}

/** W = max(W, to); ids <= W leave the set. */
function raiseWatermark(state: SourceState, to: number): void {
  if (to <= state.watermark) return;
  state.watermark = to;
  for (;;) {
    const smallest = state.order.peek();
    if (smallest === undefined || smallest > to) return;
    state.order.pop();
    state.above.delete(smallest);
  }
}

/** Forgets the smallest id above the watermark (bound reached): only a re-delivery can follow. */
function forgetSmallest(state: SourceState): void {
  const smallest = state.order.pop();
  if (smallest !== undefined) state.above.delete(smallest);
}
