/**
 * The node's resource monitor: resident memory against the memory budget (checked every second),
 * free disk space on the data directory's filesystem against `disk_free_limit` (statfs, more often
 * the closer the space is to the limit), and the figures `/api/nodes` shows (descriptors, disk),
 * refreshed every few seconds. It raises and clears the node's local alarms through `onAlarm`;
 * resource-alarms.ts makes them cluster-wide.
 *
 * Nothing here blocks the event loop: statfs and the descriptor listing run on libuv's thread pool,
 * and a check starts only once the one before finished (a slow disk delays checks, never piles
 * them up).
 */
import type { Logger } from '../logging/logger.ts';
import type { NodeResources } from '../metrics/node-resources.ts';
import { readDiskAvailable, readNodeResources } from '../metrics/node-resources.ts';

/** A resource whose alarm blocks publishers (RabbitMQ's `memory` and `disk` resource alarms). */
export type AlarmResource = 'memory' | 'disk';

/** How often resident memory is compared with the budget, ms. */
const MEMORY_CHECK_INTERVAL_MS = 1000;
/** Bounds of the interval between two disk checks, ms (RabbitMQ's: at least every 10 s). */
export const DISK_CHECK_MIN_MS = 100;
export const DISK_CHECK_MAX_MS = 10_000;
/**
 * The fastest the disk is assumed to fill, bytes per ms (250 MB/s, RabbitMQ's figure): the next
 * check comes before the space left above the limit could be gone at that rate, twice over.
 */
const FAST_FILL_BYTES_PER_MS = 250_000;
/** How often the descriptor and disk figures of `/api/nodes` are refreshed, ms. */
const FIGURES_INTERVAL_MS = 5_000;

/**
 * When to look at the free disk space again, ms after a check that found `freeBytes` against
 * `limitBytes`: every 10 s with plenty of room, down to every 100 ms near the limit or under it
 * (where the alarm must lift as soon as space returns). Example: 1 GB above the limit → 8 s;
 * 100 MB above → 800 ms; under the limit → 100 ms.
 */
export function nextDiskCheckMs(freeBytes: number, limitBytes: number): number {
  const ideal = (2 * (freeBytes - limitBytes)) / FAST_FILL_BYTES_PER_MS;
  return Math.trunc(Math.max(DISK_CHECK_MIN_MS, Math.min(DISK_CHECK_MAX_MS, ideal)));
}

export interface ResourceMonitorOptions {
  readonly logger: Logger;
  /** Resident memory above which the memory alarm is raised, bytes; 0: no memory alarm. */
  readonly memoryBudgetBytes: number;
  /** The data directory, whose filesystem is watched; undefined (no durable storage): no disk alarm. */
  readonly dataDir: string | undefined;
  /** Free bytes below which the disk alarm is raised (`disk_free_limit`). */
  readonly diskFreeLimitBytes: number;
  /** Called when an alarm is raised (true) or cleared (false). */
  readonly onAlarm: (resource: AlarmResource, raised: boolean) => void;
}

export class ResourceMonitor {
  readonly #options: ResourceMonitorOptions;
  readonly #log: Logger;
  #memoryTimer: NodeJS.Timeout | undefined;
  #diskTimer: NodeJS.Timeout | undefined;
  #figuresTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #memoryAlarm = false;
  #diskAlarm = false;
  #diskFree: number | undefined;
  #resources: NodeResources = { openFds: undefined, maxFds: undefined, diskAvailableBytes: undefined };

  constructor(options: ResourceMonitorOptions) {
    this.#options = options;
    this.#log = options.logger.child({ component: 'resource-monitor' });
  }

  /** Whether resident memory is over the budget now. */
  get memoryAlarm(): boolean {
    return this.#memoryAlarm;
  }

  /** Whether free disk space is under the limit now. */
  get diskAlarm(): boolean {
    return this.#diskAlarm;
  }

  get memoryBudgetBytes(): number {
    return this.#options.memoryBudgetBytes;
  }

  /** The disk limit in bytes; undefined when the disk is not watched (no data directory). */
  get diskFreeLimitBytes(): number | undefined {
    return this.#options.dataDir === undefined ? undefined : this.#options.diskFreeLimitBytes;
  }

  /** Free bytes on the data directory's filesystem at the last check; undefined before it or without one. */
  get diskFreeBytes(): number | undefined {
    return this.#diskFree;
  }

  /** Descriptors at the last refresh (every few seconds). */
  get resources(): NodeResources {
    return this.#resources;
  }

  /** Start the checks; the first disk check and figures refresh run at once. Resolves after them. */
  async start(): Promise<void> {
    const { memoryBudgetBytes, dataDir, diskFreeLimitBytes } = this.#options;
    if (memoryBudgetBytes > 0) {
      this.#memoryTimer = setInterval(() => this.#checkMemory(), MEMORY_CHECK_INTERVAL_MS);
      this.#memoryTimer.unref();
    }
    if (dataDir !== undefined) {
      this.#log.info({ dataDir, diskFreeLimitBytes }, 'free disk space monitoring enabled');
      await this.#checkDisk();
    }
    await this.#refreshFigures();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#memoryTimer);
    clearTimeout(this.#diskTimer);
    clearTimeout(this.#figuresTimer);
  }

  #checkMemory(): void {
    const rss = process.memoryUsage.rss();
    const raised = rss > this.#options.memoryBudgetBytes;
    if (raised === this.#memoryAlarm) return;
    this.#memoryAlarm = raised;
    this.#log.warn(
      { rss, budget: this.#options.memoryBudgetBytes },
      raised ? 'memory alarm: the node is over its memory budget' : 'memory alarm cleared',
    );
    this.#options.onAlarm('memory', raised);
  }

  async #checkDisk(): Promise<void> {
    const dataDir = this.#options.dataDir as string;
    const limit = this.#options.diskFreeLimitBytes;
    const free = await readDiskAvailable(dataDir);
    if (this.#stopped) return;
    if (free === undefined) {
      // The filesystem cannot be read (removed, permissions): keep the alarm as it was, say so, retry.
      this.#log.warn({ dataDir }, 'cannot read the free disk space of the data directory');
    } else {
      this.#diskFree = free;
      const raised = free < limit;
      if (raised !== this.#diskAlarm) {
        this.#diskAlarm = raised;
        this.#log.warn(
          { free, limit, dataDir },
          raised
            ? 'disk alarm: free disk space is below disk_free_limit; publishers are blocked'
            : 'disk alarm cleared: free disk space is back above disk_free_limit',
        );
        this.#options.onAlarm('disk', raised);
      }
    }
    const next = free === undefined ? DISK_CHECK_MAX_MS : nextDiskCheckMs(free, limit);
    this.#diskTimer = setTimeout(() => void this.#checkDisk(), next);
    this.#diskTimer.unref();
  }

  async #refreshFigures(): Promise<void> {
    this.#resources = await readNodeResources(this.#options.dataDir);
    if (this.#stopped) return;
    this.#figuresTimer = setTimeout(() => void this.#refreshFigures(), FIGURES_INTERVAL_MS);
    this.#figuresTimer.unref();
  }
}
