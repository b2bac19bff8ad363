/**
 * A redrive's counts while it runs, turned into the `RedriveProgress` the metadata record keeps.
 * The lists are bounded as the ledger requires: destinations and reasons past the caps are counted
 * under one row `OTHER` (so the totals stay exact), the sample keeps the first messages.
 */
import {
  MAX_FAILURE_ROWS,
  MAX_SAMPLE_ROWS,
  MAX_TARGET_ROWS,
  MAX_TEXT_LENGTH,
} from '../metadata/redrive-ledger.ts';
import type { RedriveProgress, RedriveSample } from '../metadata/redrive-types.ts';
import type { BrowsePosition } from '../queue/message-browse.ts';

/** The row that counts what no longer fits in a list. */
export const OTHER = '(other)';
/** Messages a dry run shows. */
export const SAMPLE_SIZE = 20;

const SEPARATOR = '\u0000';

export class RedriveTally {
  total: number | null = null;
  bound: number | null = null;
  cursor: number | null = null;
  /** The cursor's place in the queue's delivery order (null: a record of an older build). */
  position: BrowsePosition | null = null;
  moved = 0;
  failed = 0;
  readonly #targets = new Map<string, number>();
  readonly #failures = new Map<string, number>();
  readonly #sample: RedriveSample[] = [];

  /** A tally that goes on from `progress` (a resumed redrive). */
  static from(progress: RedriveProgress): RedriveTally {
    const tally = new RedriveTally();
    tally.total = progress.total;
    tally.bound = progress.bound;
    tally.cursor = progress.cursor;
    tally.position = progress.position ?? null;
    tally.moved = progress.moved;
    tally.failed = progress.failed;
    for (const row of progress.targets)
      tally.#targets.set(row.exchange + SEPARATOR + row.routingKey, row.count);
    for (const row of progress.failures) tally.#failures.set(row.reason, row.count);
    tally.#sample.push(...progress.sample);
    return tally;
  }

  /** One message moved (or, on a dry run, that would move) to `exchange` with `routingKey`. */
  addTarget(exchange: string, routingKey: string): void {
    let key = exchange + SEPARATOR + routingKey;
    if (!this.#targets.has(key) && this.#targets.size >= MAX_TARGET_ROWS - 1) key = OTHER + SEPARATOR + OTHER;
    this.#targets.set(key, (this.#targets.get(key) ?? 0) + 1);
  }

  /** One message left in the dead-letter queue for `reason`. */
  addFailure(reason: string): void {
    let key = reason.length > MAX_TEXT_LENGTH ? `${reason.slice(0, MAX_TEXT_LENGTH - 3)}...` : reason;
    if (!this.#failures.has(key) && this.#failures.size >= MAX_FAILURE_ROWS - 1) key = OTHER;
    this.#failures.set(key, (this.#failures.get(key) ?? 0) + 1);
    this.failed++;
  }

  /** Keep `sample` if the sample has room. */
  addSample(sample: RedriveSample): void {
    if (this.#sample.length < Math.min(SAMPLE_SIZE, MAX_SAMPLE_ROWS)) this.#sample.push(sample);
  }

  /** Messages that would move (a dry run) or moved, per destination, summed. */
  get routed(): number {
    let sum = 0;
    for (const count of this.#targets.values()) sum += count;
    return sum;
  }

  progress(inflight: readonly number[]): RedriveProgress {
    return {
      total: this.total,
      bound: this.bound,
      cursor: this.cursor,
      position: this.position,
      moved: this.moved,
      failed: this.failed,
      inflight: [...inflight],
      targets: Array.from(this.#targets, ([key, count]) => {
        const at = key.indexOf(SEPARATOR);
        return { exchange: key.slice(0, at), routingKey: key.slice(at + 1), count };
      }),
      failures: Array.from(this.#failures, ([reason, count]) => ({ reason, count })),
      sample: [...this.#sample],
    };
  }
}
