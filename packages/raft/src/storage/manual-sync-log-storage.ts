import type { HardState, LogStorage, LogWrite, StoredEntry, StoredSnapshot } from './log-storage.ts';
import { MemoryLogStorage } from './memory-log-storage.ts';

interface WithheldBatch {
  readonly writes: readonly LogWrite[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

export interface ManualSyncLogStorageOptions {
  /**
   * 'manual' (default): a batch waits until the test calls `releaseSync` or `failSync`.
   * 'auto': each batch is released one macrotask (setImmediate) after it was written, so a crash in
   * between still loses it.
   */
  readonly mode?: 'manual' | 'auto';
  /** Where released batches land; a fresh `MemoryLogStorage` by default. Survives `crash()`. */
  readonly durable?: MemoryLogStorage;
}

/**
 * A storage double that WITHHOLDS the sync: `write` returns a promise that settles only when the
 * test releases (or fails) that batch. Until then the batch is not durable: reads do not see it and
 * `crash()` throws it away. Used to prove that nothing is confirmed before its sync completed, that
 * a failed sync fails the proposals waiting on it, and that a crash keeps exactly the synced state.
 */
export class ManualSyncLogStorage implements LogStorage {
  /** What has been synced; a restarted node reopens over this. */
  readonly durable: MemoryLogStorage;
  readonly #mode: 'manual' | 'auto';
  #withheld: WithheldBatch[] = [];
  #crashed = false;

  constructor(options: ManualSyncLogStorageOptions = {}) {
    this.#mode = options.mode ?? 'manual';
    this.durable = options.durable ?? new MemoryLogStorage();
  }

  /** Batches written and not yet released or failed. */
  get pendingSyncs(): number {
    return this.#withheld.length;
  }

  /** The writes of the oldest withheld batch (to inspect what one transaction carries). */
  peekPendingSync(): readonly LogWrite[] | undefined {
    return this.#withheld[0]?.writes;
  }

  write(writes: readonly LogWrite[]): Promise<void> {
    if (this.#crashed) return new Promise<void>(() => {}); // a dead process never hears back
    return new Promise<void>((resolve, reject) => {
      this.#withheld.push({ writes, resolve, reject });
      if (this.#mode === 'auto') setImmediate(() => this.releaseSync());
    });
  }

  /** Complete the oldest withheld batch's sync: it becomes durable and its promise resolves. */
  releaseSync(): boolean {
    const batch = this.#withheld.shift();
    if (batch === undefined || this.#crashed) return false;
    this.durable.applyNow(batch.writes);
    batch.resolve();
    return true;
  }

  /**
   * Report the NEWEST withheld batch durable before the older ones (a storage whose promises settle
   * out of order): its writes become durable and its promise resolves. Tests the log store's
   * in-order resolution; a real LMDB never makes a later commit durable before an earlier one.
   */
  releaseNewestSync(): boolean {
    const batch = this.#withheld.pop();
    if (batch === undefined || this.#crashed) return false;
    this.durable.applyNow(batch.writes);
    batch.resolve();
    return true;
  }

  /** Release every withheld batch, oldest first. Returns how many were released. */
  releaseAll(): number {
    let released = 0;
    while (this.releaseSync()) released++;
    return released;
  }

  /** Fail the oldest withheld batch's sync: nothing of it is durable, its promise rejects. */
  failSync(error: unknown): boolean {
    const batch = this.#withheld.shift();
    if (batch === undefined || this.#crashed) return false;
    batch.reject(error);
    return true;
  }

  /**
   * Simulate the process dying: withheld batches are lost and their promises never settle; later
   * writes are ignored. Reopen a new store over `durable` to model the restarted node.
   */
  crash(): void {
    this.#crashed = true;
    this.#withheld = [];
  }

  entries(groupId: string, fromIndex: number, toIndex?: number): Iterable<StoredEntry> {
    return this.durable.entries(groupId, fromIndex, toIndex);
  }

  lastIndex(groupId: string): number {
    return this.durable.lastIndex(groupId);
  }

  hardState(groupId: string): HardState | undefined {
    return this.durable.hardState(groupId);
  }

  snapshot(groupId: string): StoredSnapshot | undefined {
    return this.durable.snapshot(groupId);
  }

  async close(): Promise<void> {}
}
