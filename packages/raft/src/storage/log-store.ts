import { LogStoreClosedError, LogStoreFailedError } from '../errors.ts';
import type { EntryMeta } from '../replicated-log.ts';
import type { HardState, LogStorage, LogWrite, StoredEntry, StoredSnapshot } from './log-storage.ts';

/** The writes queued in one I/O turn and the promise every writer of that turn waits on. */
interface Batch {
  readonly writes: LogWrite[];
  readonly durable: Promise<void>;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
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
  return { writes: [], durable, resolve, reject };
}

/**
 * The node's one log store: entries, hard state and snapshots of every group (queues and metadata),
 * written with group commit in the manner of Ra's shared WAL.
 *
 * Every write made during one I/O turn joins one batch; at the end of the turn (setImmediate) the
 * batch goes to the storage as ONE transaction and ONE sync. While a batch is syncing, new writes
 * gather in the next batch, so the batch size follows the sync latency: the slower the disk, the
 * more each sync carries. Each write returns the promise of its batch, which resolves only after
 * the storage reports that batch durable — that is the only signal on which a confirm, a vote or an
 * append-ack may leave the node.
 *
 * Invariants:
 * - At most one batch is in flight; batches become durable in the order their writes were made, so
 *   a resolved batch implies every earlier one is durable.
 * - After a failed batch the store is failed: every pending and later write rejects with
 *   `LogStoreFailedError`. Accepting later writes could make batch N+1 durable after batch N was
 *   lost, leaving a hole in some group's log.
 *
 * Bounds: a batch is not size-capped (one turn's writes must share one transaction); the callers
 * bound it by bounding their in-flight proposals.
 */
export class LogStore {
  readonly #storage: LogStorage;
  /** Collecting writes of the current turn; undefined when nothing is queued. */
  #pending: Batch | undefined;
  /** Handed to the storage, not yet durable. */
  #inFlight: Batch | undefined;
  #flushScheduled = false;
  #failure: LogStoreFailedError | undefined;
  #closing = false;
  #closed: Promise<void> | undefined;

  constructor(storage: LogStorage) {
    this.#storage = storage;
  }

  /** The error that failed the store, or undefined while it is healthy. */
  get failure(): LogStoreFailedError | undefined {
    return this.#failure;
  }

  /** Queue an entry. Resolves once it is durable. */
  append(groupId: string, meta: EntryMeta, payload: Uint8Array): Promise<void> {
    const entry: StoredEntry = { index: meta.index, term: meta.term, ts: meta.ts, payload };
    return this.#queue({ kind: 'append', groupId, entry });
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

  /** Resolves once every write queued before this call is durable. */
  sync(): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const last = this.#pending ?? this.#inFlight;
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
    const inFlight = this.#inFlight;
    this.#closed = (inFlight ? inFlight.durable.catch(() => {}) : Promise.resolve()).then(() =>
      this.#storage.close(),
    );
    return this.#closed;
  }

  #queue(write: LogWrite): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#closing) return Promise.reject(new LogStoreClosedError());
    let batch = this.#pending;
    if (batch === undefined) {
      batch = newBatch();
      this.#pending = batch;
      this.#scheduleFlush();
    }
    batch.writes.push(write);
    return batch.durable;
  }

  #scheduleFlush(): void {
    // With a batch in flight, its completion schedules the next flush: one sync at a time.
    if (this.#flushScheduled || this.#inFlight !== undefined) return;
    this.#flushScheduled = true;
    // setImmediate, not a microtask: the batch must take every write of this I/O turn, including
    // those made by promise continuations that run after the current one.
    setImmediate(this.#flush);
  }

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    const batch = this.#pending;
    if (batch === undefined || this.#inFlight !== undefined || this.#failure) return;
    this.#pending = undefined;
    this.#inFlight = batch;
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
    this.#inFlight = undefined;
    batch.resolve();
    if (this.#pending !== undefined) this.#scheduleFlush();
  }

  #onFailed(cause: unknown): void {
    const failure = new LogStoreFailedError(cause);
    this.#failure = failure;
    const inFlight = this.#inFlight;
    const pending = this.#pending;
    this.#inFlight = undefined;
    this.#pending = undefined;
    inFlight?.reject(failure);
    pending?.reject(failure);
  }
}
