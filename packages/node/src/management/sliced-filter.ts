/**
 * Filtering a long list without holding the event loop: the management API's name filters run
 * over every queue (10,000 and more), and the node's Raft heartbeats, confirms and deliveries run
 * on the same thread. So a filter runs in slices of at most SLICE_MS, each in its own turn of the
 * event loop (setImmediate between slices: timers and I/O run in between), and gives up past
 * MAX_FILTER_MS of its own running time.
 *
 * Every filter of the node takes its slices in one lane, in turn: with K requests filtering at
 * once the loop still runs one slice between two turns of I/O, not K, so the lag a slice adds
 * stays one slice whatever the concurrency. Each request waits longer instead.
 */
import { performance } from 'node:perf_hooks';

/** Longest one slice runs before yielding to the event loop, ms (one item may overrun it). */
export const SLICE_MS = 1;
/** Longest a filter may run in all (its slices' running time, not its waiting), ms. */
export const MAX_FILTER_MS = 2000;
/** Items tested between two looks at the clock (a look costs more than a cheap test). */
const CLOCK_EVERY = 8;

/** A filter that ran past its budget: the API answers 503 with this text. */
export class FilterBudgetError extends Error {
  readonly code = 'FILTER_BUDGET_EXCEEDED';
  constructor(budgetMs: number, tested: number, total: number) {
    super(
      `the name filter ran for more than ${budgetMs} ms (${tested} of ${total} names tested): use a simpler filter`,
    );
    this.name = 'FilterBudgetError';
  }
}

export interface SliceOptions {
  readonly sliceMs?: number;
  readonly budgetMs?: number;
}

/** The lane every filter's slices queue on (see the module comment). */
let lane: Promise<void> = Promise.resolve();

/** Run `work` in the lane, in a turn of the event loop of its own. */
function inTurn<R>(work: () => R): Promise<R> {
  const turn = lane.then(() => new Promise<void>((resolve) => setImmediate(resolve))).then(work);
  lane = turn.then(
    () => undefined,
    () => undefined,
  );
  return turn;
}

/**
 * The items of `items` that `keep` keeps, in order, tested in slices. Throws FilterBudgetError when
 * the tests take more than `budgetMs` in all.
 */
export async function filterInSlices<T>(
  items: readonly T[],
  keep: (item: T) => boolean,
  options: SliceOptions = {},
): Promise<T[]> {
  const sliceMs = options.sliceMs ?? SLICE_MS;
  const budgetMs = options.budgetMs ?? MAX_FILTER_MS;
  const kept: T[] = [];
  let next = 0;
  let spent = 0;
  while (next < items.length) {
    await inTurn(() => {
      const start = performance.now();
      let now = start;
      while (next < items.length && now - start < sliceMs) {
        const end = Math.min(items.length, next + CLOCK_EVERY);
        for (; next < end; next++) {
          const item = items[next] as T;
          if (keep(item)) kept.push(item);
        }
        now = performance.now();
      }
      spent += now - start;
    });
    if (spent > budgetMs && next < items.length) throw new FilterBudgetError(budgetMs, next, items.length);
  }
  return kept;
}
