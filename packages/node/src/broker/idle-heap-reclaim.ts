/**
 * Gives the JavaScript heap back to the system once the node goes quiet after a burst (issue 28
 * item 7: a node that queued and drained 200k messages kept ~220 MiB of V8 heap committed around
 * ~60 MiB of live objects, for good). V8's ordinary major GCs free objects but keep the pages the
 * burst fragmented, and its memory reducer did not run on an idle broker (timers keep it from
 * counting as idle); only a compacting "last resort" collection releases them. This is RabbitMQ's
 * hibernation in Styx's terms: a queue process that goes idle is garbage-collected and shrunk.
 *
 * When: every `CHECK_INTERVAL_MS`, the event loop's utilization over the interval is read; after
 * `QUIET_CHECKS` quiet intervals in a row (under `QUIET_UTILIZATION`), if the committed heap grew
 * at least `MIN_EXCESS_BYTES` beyond what it was after the last reclaim (or at start), one
 * compacting collection runs. Its pause grows with the heap in use, so it runs only under
 * `MAX_USED_BYTES` in use. It never repeats on a heap that did not grow again: a node idling with a
 * deep queue pays one pause, then none until its heap grows by another `MIN_EXCESS_BYTES`. (The
 * heap in use counts garbage until a collection finds it, and an idle node allocates too little to
 * start one: it cannot tell how much a reclaim would free, only how much the heap grew.) The
 * collection frees the backing stores of dead ArrayBuffers, which are C heap: glibc's arena is
 * then trimmed too (native-heap-trim.ts).
 */
import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from '../logging/logger.ts';
import type { NativeHeapTrim } from './native-heap-trim.ts';
import { loadNativeHeapTrim } from './native-heap-trim.ts';

/** How often the loop's utilization and the heap are looked at, ms. */
export const CHECK_INTERVAL_MS = 2_000;
/** Event-loop utilization (0–1) under which an interval counts as quiet. */
export const QUIET_UTILIZATION = 0.02;
/** Quiet intervals in a row before a reclaim. */
export const QUIET_CHECKS = 2;
/** Committed heap growth, bytes, since the last reclaim that makes another one worth its pause. */
export const MIN_EXCESS_BYTES = 64 * 1024 * 1024;
/** Heap in use above which no reclaim runs (its pause would be too long), bytes. */
export const MAX_USED_BYTES = 1024 * 1024 * 1024;

export interface HeapFigures {
  /** V8's committed heap, bytes (`total_heap_size`). */
  readonly committedBytes: number;
  /** Heap in use (live and not yet collected), bytes (`used_heap_size`). */
  readonly usedBytes: number;
}

export interface ReclaimState {
  /** Quiet intervals in a row so far. */
  readonly quietChecks: number;
  /** Committed heap after the last reclaim (or at start), bytes. */
  readonly baselineBytes: number;
}

/** Whether to reclaim now, given the state before this check, its utilization and the heap. */
export function shouldReclaim(state: ReclaimState, utilization: number, heap: HeapFigures): boolean {
  if (!(utilization < QUIET_UTILIZATION) || state.quietChecks + 1 < QUIET_CHECKS) return false;
  if (heap.committedBytes < state.baselineBytes + MIN_EXCESS_BYTES) return false;
  return heap.usedBytes < MAX_USED_BYTES;
}

/** A compacting full collection; V8's `gc` extension, enabled for the contexts made after this. */
export function compactingCollector(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as (options?: object) => void;
  return () => gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}

export class IdleHeapReclaimer {
  readonly #log: Logger;
  readonly #collect: () => void;
  readonly #heap: () => HeapFigures;
  readonly #trim: NativeHeapTrim | undefined;
  #timer: NodeJS.Timeout | undefined;
  #elu = performance.eventLoopUtilization();
  #state: ReclaimState = { quietChecks: 0, baselineBytes: 0 };
  #reclaims = 0;

  constructor(
    logger: Logger,
    options: {
      readonly collect?: () => void;
      readonly heap?: () => HeapFigures;
      /** Gives the C heap back after a collection; null: none. Default: glibc's malloc_trim. */
      readonly trim?: NativeHeapTrim | null;
    } = {},
  ) {
    this.#log = logger.child({ component: 'heap-reclaim' });
    this.#collect = options.collect ?? compactingCollector();
    this.#heap = options.heap ?? readHeap;
    this.#trim = options.trim === undefined ? this.#loadTrim() : (options.trim ?? undefined);
  }

  #loadTrim(): NativeHeapTrim | undefined {
    const loaded = loadNativeHeapTrim();
    if ('trim' in loaded) return loaded.trim;
    this.#log.info(
      { reason: loaded.unavailable },
      'no native heap trim here: only the JavaScript heap is given back',
    );
    return undefined;
  }

  /** Reclaims run so far. */
  get reclaims(): number {
    return this.#reclaims;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#state = { quietChecks: 0, baselineBytes: this.#heap().committedBytes };
    this.#elu = performance.eventLoopUtilization();
    this.#timer = setInterval(
      () => this.check(performance.eventLoopUtilization(this.#elu).utilization),
      CHECK_INTERVAL_MS,
    );
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One check, with the loop's utilization over the interval that ended (the timer's, or a test's). */
  check(utilization: number): void {
    this.#elu = performance.eventLoopUtilization();
    const heap = this.#heap();
    const reclaim = shouldReclaim(this.#state, utilization, heap);
    const quiet = utilization < QUIET_UTILIZATION;
    if (!reclaim) {
      // Heap given back by V8 on its own lowers the bar for the next reclaim too.
      const baselineBytes = Math.min(this.#state.baselineBytes, heap.committedBytes);
      this.#state = { quietChecks: quiet ? this.#state.quietChecks + 1 : 0, baselineBytes };
      return;
    }
    const started = performance.now();
    this.#collect();
    // The collection freed the ArrayBuffers' backing stores: now the C heap has pages to give back.
    const trimmed = this.#trim?.() ?? false;
    const after = this.#heap();
    this.#reclaims++;
    this.#state = { quietChecks: 0, baselineBytes: after.committedBytes };
    this.#log.info(
      {
        committedBefore: heap.committedBytes,
        committedAfter: after.committedBytes,
        usedAfter: after.usedBytes,
        pauseMs: Math.round(performance.now() - started),
        nativeTrimmed: trimmed,
      },
      'idle node: heap compacted and given back',
    );
  }
}

function readHeap(): HeapFigures {
  const stats = getHeapStatistics();
  return { committedBytes: stats.total_heap_size, usedBytes: stats.used_heap_size };
}
