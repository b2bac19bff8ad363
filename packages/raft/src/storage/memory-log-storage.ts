import type { HardState, LogStorage, LogWrite, StoredEntry, StoredSnapshot } from './log-storage.ts';

interface GroupRecord {
  /** Sorted by index, no duplicates. Usually contiguous; appends past the end may leave gaps. */
  entries: StoredEntry[];
  hardState: HardState | undefined;
  snapshot: StoredSnapshot | undefined;
}

/** First position in `entries` whose index is >= `index` (binary search). */
function lowerBound(entries: readonly StoredEntry[], index: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((entries[mid] as StoredEntry).index < index) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A `LogStorage` in memory: every write is "durable" the moment it resolves, and lives as long as
 * this object. For tests and simulations — the node it stands for survives any crash that keeps
 * this object (see `ManualSyncLogStorage` for one that loses unsynced batches). Payloads are copied
 * on write, so callers may reuse their buffers as they could with a real store.
 */
export class MemoryLogStorage implements LogStorage {
  readonly #groups = new Map<string, GroupRecord>();
  /** Number of batches written; lets tests check how writes were grouped. */
  writeCount = 0;

  async write(writes: readonly LogWrite[]): Promise<void> {
    this.applyNow(writes);
  }

  /** Apply a batch synchronously (for doubles that decide themselves when a batch lands). */
  applyNow(writes: readonly LogWrite[]): void {
    this.writeCount++;
    for (const write of writes) {
      switch (write.kind) {
        case 'append': {
          // Raft's append: everything from the entry's index on goes first (see `LogWrite`).
          const { entry } = write;
          const entries = this.#group(write.groupId).entries;
          const last = entries[entries.length - 1];
          if (last !== undefined && last.index >= entry.index)
            entries.length = lowerBound(entries, entry.index);
          entries.push({ ...entry, payload: entry.payload.slice() });
          break;
        }
        case 'truncateBefore': {
          const entries = this.#group(write.groupId).entries;
          entries.splice(0, lowerBound(entries, write.index));
          break;
        }
        case 'truncateAfter': {
          const entries = this.#group(write.groupId).entries;
          entries.length = lowerBound(entries, write.index + 1);
          break;
        }
        case 'hardState':
          this.#group(write.groupId).hardState = write.state;
          break;
        case 'snapshot': {
          const { meta, data } = write.snapshot;
          this.#group(write.groupId).snapshot = { meta, data: data.slice() };
          break;
        }
        case 'deleteGroup':
          this.#groups.delete(write.groupId);
          break;
        case 'attached':
          write.write.apply();
          break;
      }
    }
  }

  *entries(groupId: string, fromIndex: number, toIndex = Number.POSITIVE_INFINITY): Iterable<StoredEntry> {
    const entries = this.#groups.get(groupId)?.entries;
    if (entries === undefined) return;
    for (let i = lowerBound(entries, fromIndex); i < entries.length; i++) {
      const entry = entries[i] as StoredEntry;
      if (entry.index >= toIndex) return;
      yield entry;
    }
  }

  lastIndex(groupId: string): number {
    const entries = this.#groups.get(groupId)?.entries;
    return entries?.[entries.length - 1]?.index ?? 0;
  }

  hardState(groupId: string): HardState | undefined {
    return this.#groups.get(groupId)?.hardState;
  }

  snapshot(groupId: string): StoredSnapshot | undefined {
    return this.#groups.get(groupId)?.snapshot;
  }

  /** Ids of the groups holding anything. */
  groupIds(): string[] {
    return [...this.#groups.keys()];
  }

  async close(): Promise<void> {
    // Nothing to release: the data outlives close on purpose, as a disk would.
  }

  #group(groupId: string): GroupRecord {
    let group = this.#groups.get(groupId);
    if (group === undefined) {
      group = { entries: [], hardState: undefined, snapshot: undefined };
      this.#groups.set(groupId, group);
    }
    return group;
  }
}
