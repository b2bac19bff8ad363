/**
 * A log line that sums events instead of repeating itself: dead-letter drops and waiting hand-offs
 * happen per message, possibly thousands a second, and must be logged (nothing is dropped
 * silently) without a line per message.
 *
 * `add(key, n)` counts; the counts are logged as one line `{ counts: { key: n, ... } }` at most once
 * per interval: the first event after a quiet interval is logged at once, later ones are summed
 * and logged when the interval has passed since the previous line. So a steady stream costs one
 * line per interval, a single event is never delayed, and a burst is never lost: `close()` logs
 * what is left.
 *
 * Keys are chosen by the caller and should be few (a reason, a kind, an exchange name), since one
 * line carries them all.
 */
import type { Clock } from '@styx/raft';
import type { QueueLogger } from './queue-logger.ts';

/** The shortest time between two lines of one aggregated log, ms, unless given. */
export const DEFAULT_AGGREGATION_INTERVAL_MS = 5_000;

export class AggregatedLog {
  private readonly logger: QueueLogger;
  private readonly level: 'info' | 'warn';
  private readonly message: string;
  private readonly intervalMs: number;
  private readonly clock: Clock;
  private counts: Record<string, number> | undefined = undefined;
  /** When the last line was written (-Infinity: never). */
  private lastLineAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined = undefined;

  /** `intervalMs` >= 0: the shortest time between two lines. */
  constructor(
    logger: QueueLogger,
    level: 'info' | 'warn',
    message: string,
    clock: Clock,
    intervalMs = DEFAULT_AGGREGATION_INTERVAL_MS,
  ) {
    if (!(intervalMs >= 0)) throw new RangeError(`aggregation interval must be >= 0 ms, got ${intervalMs}`);
    this.logger = logger;
    this.level = level;
    this.message = message;
    this.clock = clock;
    this.intervalMs = intervalMs;
  }

  /** Count `n` events under `key`; logs now or within the interval. */
  add(key: string, n = 1): void {
    if (n <= 0) return;
    if (this.counts === undefined) this.counts = {};
    this.counts[key] = (this.counts[key] ?? 0) + n;
    if (this.timer !== undefined) return;
    const wait = this.lastLineAt + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.flush();
      return;
    }
    this.timer = setTimeout(this.onTimer, wait);
    this.timer.unref?.();
  }

  /** Log what is counted now (if anything) and stop the timer. */
  close(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.flush();
  }

  private readonly onTimer = (): void => {
    this.timer = undefined;
    this.flush();
  };

  private flush(): void {
    const { counts } = this;
    if (counts === undefined) return;
    this.counts = undefined;
    this.lastLineAt = this.clock.now();
    this.logger[this.level]({ counts }, this.message);
  }
}
