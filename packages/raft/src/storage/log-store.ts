import { LogStoreClosedError, LogStoreFailedError } from '../errors.ts';
import type { EntryMeta } from '../replicated-log.ts';
import { LatencyHistogram } from './latency-histogram.ts';
import type {
  AttachedWrite,
  HardState,
  LogStorage,
  LogWrite,
  StoredEntry,
  StoredSnapshot,
} from './log-storage.ts';

/** The writes queued in one I/O turn and the promise every writer of that turn waits on. */
interface Batch {
  readonly writes: LogWrite[];
  readonly durable: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
  /** The storage reported this batch durable; it resolves once every earlier batch has too. */
  stored: boolean;
  /** When it was handed to the storage (`performance.now()`, ms), for `syncLatency`. */
  handedAt: number;
}

function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const durable = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Writers may ignore the promise (a compaction nobody awaits); a failure still reaches the
  // writers that do wait, and must not crash the process as an unhandled rejection.
  durable.catch(() => {});
  return { writes: [], durable, resolve, reject, stored: false, handedAt: 0 };
}

/**
 * The node's one log store: entries, hard state and snapshots of every group (queues and metadata),
 * written with group commit in the manner of Ra's shared WAL.
 *
 * Every write made during one I/O turn joins one batch; at the end of the turn (setImmediate) the
 * batch goes to the storage as ONE transaction. Batches are pipelined: up to `maxBatchesInFlight`
 * are handed to the storage before the first is durable, so the next batch's transaction is
 * written while the previous one syncs (LMDB's overlapping sync) instead of the log store idling
 * for a whole sync between batches. Beyond the cap, new writes gather in the next batch, so the
 * batch size still follows the sync latency. Each write returns the promise of its batch, which
 * resolves only after the storage reports that batch AND every earlier batch durable — that is the
 * only signal on which a confirm, a vote or an append-ack may leave the node.
 *
 * Invariants:
 * - Batches are handed to the storage in the order their writes were made and resolve in that
 *   order, whatever order the storage reports them in: a resolved batch implies every earlier one
 *   is durable.
 * - After a failed batch the store is failed: every batch in flight (including later batches the
 *   storage already reported durable but that were not resolved yet), every pending and every
 *   later write rejects with `LogStoreFailedError`. Confirming batch N+1 after batch N was lost
 *   would acknowledge entries behind a hole in some group's log.
 *
 * Bounds: at most `maxBatchesInFlight` batches are in flight; a batch is not size-capped (one
 * turn's writes must share one transaction); the callers bound it by bounding their in-flight
 * proposals.
 */
export interface LogStoreOptions {
  /**
   * Batches handed to the storage and not yet resolved, at most (default
   * `DEFAULT_MAX_BATCHES_IN_FLIGHT`); 1 = the next batch waits for the previous one's sync.
   */
  readonly maxBatchesInFlight?: number;
}

/** Default pipeline depth, batches: one syncing, one being written, one gathered behind them. */
export const DEFAULT_MAX_BATCHES_IN_FLIGHT = 3;

export class LogStore {
  /**
   * How long each batch took from being handed to the storage until the storage reported it
   * durable (its transaction committed and synced), seconds: the node's log sync latency.
   */
  readonly syncLatency = new LatencyHistogram();
  readonly #storage: LogStorage;
  readonly #maxInFlight: number;
  /** Collecting writes of the current turn; undefined when nothing is queued. */
  #pending: Batch | undefined;
  /** Handed to the storage, not yet resolved, oldest first. */
  #inFlight: Batch[] = [];
  #flushScheduled = false;
  #failure: LogStoreFailedError | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;

  constructor(storage: LogStorage, options: LogStoreOptions = {}) {
    this.#storage = storage;
    this.#maxInFlight = Math.max(1, options.maxBatchesInFlight ?? DEFAULT_MAX_BATCHES_IN_FLIGHT);
  }

  /** The error that failed the store, or undefined while it is healthy. */
  get failure(): LogStoreFailedError | undefined {
    return this.#failure;
  }

  /**
   * Queue an entry at `meta.index`; the group's stored entries from that index on are discarded
   * first (Raft's append; see `LogWrite`). Resolves once it is durable. The storage may read
   * `payload` any time until then (the LMDB storage copies it inside the batch's transaction,
   * possibly turns later when batches are pipelined): do not modify it before the promise settles.
   */
  append(groupId: string, meta: EntryMeta, payload: Uint8Array): Promise<void> {
    const entry: StoredEntry = { index: meta.index, term: meta.term, ts: meta.ts, payload };
    return this.#queue({ kind: 'append', groupId, entry });
  }

  /**
   * `append` for each of `entries` in order (a Ready's, one group's), with one call and the
   * batch's one promise: the entries themselves are queued (not copied), so neither they nor their
   * payloads may be modified before the promise settles.
   */
  appendEntries(groupId: string, entries: readonly StoredEntry[]): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closing) return Promise.reject(new LogStoreClosedError());
    const batch = this.#gathering();
    for (const entry of entries) batch.writes.push({ kind: 'append', groupId, entry });
    return batch.durable;
  }

  /** Queue the deletion of the group's entries with index < `index`. */
  truncateBefore(groupId: string, index: number): Promise<void> {
    return this.#queue({ kind: 'truncateBefore', groupId, index });
  }

  /** Queue the deletion of the group's entries with index > `index`. */
  truncateAfter(groupId: string, index: number): Promise<void> {
    return this.#queue({ kind: 'truncateAfter', groupId, index });
  }

  setHardState(groupId: string, state: HardState): Promise<void> {
    return this.#queue({ kind: 'hardState', groupId, state });
  }

  /** Queue a snapshot replacing the group's previous one. */
  putSnapshot(groupId: string, meta: EntryMeta, data: Uint8Array): Promise<void> {
    return this.#queue({ kind: 'snapshot', groupId, snapshot: { meta, data } });
  }

  /** Queue the removal of everything stored for the group. */
  deleteGroup(groupId: string): Promise<void> {
    return this.#queue({ kind: 'deleteGroup', groupId });
  }

  /**
   * Queue another store's writes to be applied in the transaction of the batch being gathered (see
   * `AttachedWrite`), so they become durable with that batch's sync rather than a sync of their
   * own. Resolves, like every write, once the batch and every earlier one are durable; `apply` has
   * run (inside the batch's transaction) before that. Rejects like any write when the store failed
   * or is closing — check `writable` first to fall back to writing elsewhere.
   */
  attach(write: AttachedWrite): Promise<void> {
    return this.#queue({ kind: 'attached', write });
  }

  /** False once the store failed or began closing: every write then rejects. */
  get writable(): boolean {
    return this.#failure === undefined && !this.#closing;
  }

  /** Resolves once every write queued before this call is durable. */
  sync(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const last = this.#pending ?? this.#inFlight[this.#inFlight.length - 1];
    return last ? last.durable : Promise.resolve();
  }

  /** The group's stored entries with fromIndex <= index < toIndex; see `LogStorage.entries`. */
  entries(groupId: string, fromIndex: number, toIndex?: number): Iterable<StoredEntry> {
    return this.#storage.entries(groupId, fromIndex, toIndex);
  }

  lastIndex(groupId: string): number {
    return this.#storage.lastIndex(groupId);
  }

  hardState(groupId: string): HardState | undefined {
    return this.#storage.hardState(groupId);
  }

  snapshot(groupId: string): StoredSnapshot | undefined {
    return this.#storage.snapshot(groupId);
  }

  /** Make everything queued durable, then close the storage. Later writes reject. */
  close(): Promise<void> {
    if (this.#closed) return this.#closed;
    this.#closing = true;
    this.#closed = this.sync()
      .catch(() => {})
      .then(() => this.#storage.close());
    return this.#closed;
  }

  /**
   * Close without writing what is still queued (as a crash would lose it): queued writes reject
   * with `LogStoreClosedError`; a batch already handed to the storage is let finish, because the
   * storage cannot take it back.
   */
  abort(): Promise<void> {
    if (this.#closed) return this.#closed;
    this.#closing = true;
    const dropped = this.#pending;
    this.#pending = undefined;
    dropped?.reject(new LogStoreClosedError());
    const last = this.#inFlight[this.#inFlight.length - 1];
    this.#closed = (last ? last.durable.catch(() => {}) : Promise.resolve()).then(() =>
      this.#storage.close(),
    );
    return this.#closed;
  }

  #queue(write: LogWrite): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closing) return Promise.reject(new LogStoreClosedError());
    const batch = this.#gathering();
    batch.writes.push(write);
    return batch.durable;
  }

  /** The batch gathering this turn's writes (started, and its flush scheduled, if there is none). */
  #gathering(): Batch {
    let batch = this.#pending;
    if (batch === undefined) {
      batch = newBatch();
      this.#pending = batch;
      this.#scheduleFlush();
    }
    return batch;
  }

  #scheduleFlush(): void {
    // With the pipeline full, the oldest batch's completion schedules the next flush.
    if (this.#flushScheduled || this.#inFlight.length >= this.#maxInFlight) return;
    this.#flushScheduled = true;
    // setImmediate, not a microtask: the batch must take every write of this I/O turn, including
    // those made by promise continuations that run after the current one.
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const batch = this.#pending;
    if (batch === undefined || this.#inFlight.length >= this.#maxInFlight || this.#failure) return;
    this.#pending = undefined;
    this.#inFlight.push(batch);
    batch.handedAt = performance.now();
    let written: Promise<void>;
    try {
      written = this.#storage.write(batch.writes);
    } catch (error) {
      written = Promise.reject(error);
    }
    written.then(
      () => this.#onDurable(batch),
      (error: unknown) => this.#onFailed(error),
    );
  };

  #onDurable(batch: Batch): void {
    if (this.#failure) return; // already rejected with the failure of an earlier batch
    batch.stored = true;
    this.syncLatency.observe((performance.now() - batch.handedAt) / 1000);
    // Resolve in order: a batch the storage reports early waits for every earlier one.
    const inFlight = this.#inFlight;
    let done = 0;
    while (done < inFlight.length && (inFlight[done] as Batch).stored) done++;
    if (done === 0) return;
    const resolved = inFlight.splice(0, done);
    for (const each of resolved) each.resolve();
    if (this.#pending !== undefined) this.#scheduleFlush();
  }

  #onFailed(cause: unknown): void {
    if (this.#failure) return;
    const failure = new LogStoreFailedError(cause);
    this.#failure = failure;
    const inFlight = this.#inFlight;
    const pending = this.#pending;
    this.#inFlight = [];
    this.#pending = undefined;
    for (const each of inFlight) each.reject(failure);
    pending?.reject(failure);
  }
}
