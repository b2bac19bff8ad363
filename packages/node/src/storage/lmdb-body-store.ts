/**
 * The body store of durable queues, on the node's LMDB environment: one value per queued message,
 * keyed by the queue's group id (its incarnation) and the message id (see body-keys.ts), holding
 * the message's binary encoding (stored-message-codec.ts).
 *
 * Writes are lmdb-js asynchronous single operations: they go to lmdb-js's writer in call order and
 * commit in LMDB transactions shortly after (the same transactions as the log store's batches when
 * they fall in the same turn). The `BodyStore` contract is synchronous, so until a write has
 * committed, the store answers reads of its key from memory: every write joins a "generation" (the
 * writes that share one lmdb-js commit promise, i.e. one transaction); a generation is forgotten
 * once its promise resolves, when LMDB itself returns the new value. Reads check the generations
 * newest first, then LMDB.
 *
 * Why bodies written this way are safe to rely on across crashes — the ordering argument:
 * 1. A body is put when its enqueue is APPLIED, which happens only after the enqueue's log entry is
 *    durable; until a snapshot covers the message, a crash loses at most the body, and the replay
 *    of that entry puts it again. Likewise a delete follows a durable entry that removed the
 *    message, which the replay would apply again.
 * 2. The entry is deleted from the log only by a compaction: `snapshot + truncateBefore`, written by
 *    the log store as ONE lmdb-js `childTransaction`, queued after the body put (the put happened
 *    during the apply that the snapshot covers). lmdb-js runs every asynchronous single operation
 *    queued before a transaction callback no later than that callback (README, "Asynchronous
 *    Transaction Ordering": callbacks run after the queued single operations), so the put commits
 *    in the same LMDB transaction as the compaction or an earlier one.
 * 3. LMDB transactions become durable in commit order (copy-on-write pages; a meta page is only
 *    valid after everything it points at), and the log store reports the compaction durable only
 *    after `flushed`, which covers every earlier commit.
 * So when a snapshot and its truncation are durable, every body the snapshot refers to is durable.
 *
 * Deleting a group removes its range in chunks (`DELETE_CHUNK_KEYS` per transaction, so a large
 * queue does not hold the event loop); a record in `body-deletions` marks the deletion as under way,
 * so a node that stops in the middle finishes it when it opens the store again.
 *
 * Precondition: nothing is written to a group after `deleteGroup` (a re-created queue has a new
 * group id). A failed commit fails the store: later writes throw `BodyStoreFailedError`.
 */
import type { Database, RootDatabase } from 'lmdb';
import type { BodyStore } from '../queue/body-store.ts';
import type { StoredMessage } from '../queue/types.ts';
import { bodyKey, END_OF_GROUP, groupIdBytes, groupPrefix } from './body-keys.ts';
import { BodyStoreFailedError, StorageClosedError } from './errors.ts';
import type { StorageLogger } from './storage-logger.ts';
import { silentStorageLogger } from './storage-logger.ts';
import { decodeStoredMessage, encodeStoredMessage } from './stored-message-codec.ts';

/** Sub-database holding the bodies. */
export const BODIES_DB = 'bodies';
/** Sub-database listing the groups whose deletion is under way (key: group id UTF-8). */
export const BODY_DELETIONS_DB = 'body-deletions';
/** Keys deleted per transaction when a group is deleted: bounds how long one chunk holds the event loop. */
export const DELETE_CHUNK_KEYS = 10_000;
/** Group key prefixes kept encoded; beyond this the cache is cleared and refilled. */
const PREFIX_CACHE_LIMIT = 10_000;
/** The value of a `body-deletions` record (its presence is what counts). */
const DELETION_MARK = Buffer.from([1]);

const DELETED = Symbol('deleted');
type PendingValue = StoredMessage | typeof DELETED;

/** Writes sharing one lmdb-js commit promise, answered from memory until it resolves. */
interface Generation {
  readonly promise: Promise<unknown>;
  /** groupId → id → value written (or deleted). */
  readonly writes: Map<string, Map<number, PendingValue>>;
  /** Groups whose deletion this generation stands for: every id of theirs reads as absent. */
  readonly deletedGroups: Set<string> | undefined;
  done: boolean;
}

export interface LmdbBodyStoreOptions {
  readonly logger?: StorageLogger;
}

export class LmdbBodyStore implements BodyStore {
  readonly #root: RootDatabase;
  readonly #bodies: Database<Uint8Array, Uint8Array>;
  readonly #deletions: Database<Uint8Array, Uint8Array>;
  readonly #logger: StorageLogger;
  readonly #prefixes = new Map<string, Buffer>();
  /** Oldest first; done generations are removed as soon as their promise resolves. */
  #generations: Generation[] = [];
  readonly #runningDeletions = new Set<Promise<void>>();
  #failure: BodyStoreFailedError | undefined;
  #closing = false;

  /**
   * The body store in `root` (the node's environment, opened with syncs on). Resumes the group
   * deletions a previous run left unfinished.
   */
  constructor(root: RootDatabase, options: LmdbBodyStoreOptions = {}) {
    this.#root = root;
    this.#logger = options.logger ?? silentStorageLogger;
    const binary = { keyEncoding: 'binary', encoding: 'binary' } as const;
    this.#bodies = root.openDB({ name: BODIES_DB, ...binary });
    this.#deletions = root.openDB({ name: BODY_DELETIONS_DB, ...binary });
    for (const key of this.#deletions.getKeys()) {
      const groupId = Buffer.from(key).toString('utf8');
      this.#logger.info({ groupId }, 'resuming an unfinished deletion of queue bodies');
      this.#startGroupDeletion(groupId);
    }
  }

  /** The error that failed the store, or undefined while it is healthy. */
  get failure(): BodyStoreFailedError | undefined {
    return this.#failure;
  }

  put(groupId: string, id: number, message: StoredMessage): void {
    this.#checkWritable();
    const key = bodyKey(this.#prefix(groupId), checkId(id));
    const promise = this.#bodies.put(key, encodeStoredMessage(message));
    recordWrite(this.#generationOf(promise), groupId, id, message);
  }

  get(groupId: string, id: number): StoredMessage | undefined {
    const generations = this.#generations;
    for (let i = generations.length - 1; i >= 0; i--) {
      const generation = generations[i] as Generation;
      const pending = generation.writes.get(groupId)?.get(id);
      if (pending !== undefined) return pending === DELETED ? undefined : pending;
      if (generation.deletedGroups?.has(groupId)) return undefined;
    }
    const value = this.#bodies.get(bodyKey(this.#prefix(groupId), checkId(id)));
    return value === undefined ? undefined : decodeStoredMessage(value, `body ${groupId}/${id}`);
  }

  delete(groupId: string, id: number): void {
    this.#checkWritable();
    const promise = this.#bodies.remove(bodyKey(this.#prefix(groupId), checkId(id)));
    recordWrite(this.#generationOf(promise), groupId, id, DELETED);
  }

  deleteGroup(groupId: string): void {
    this.#checkWritable();
    groupIdBytes(groupId);
    this.#startGroupDeletion(groupId);
  }

  /** Bodies stored for the group (committed ones, plus writes not yet committed): O(n), for tests. */
  count(groupId: string): number {
    const prefix = this.#prefix(groupId);
    const ids = new Set<number>();
    for (const key of this.#bodies.getKeys({
      start: bodyKey(prefix, 0),
      end: bodyKey(prefix, END_OF_GROUP),
    })) {
      const view = Buffer.from(key);
      ids.add(view.readUInt32BE(prefix.length) * 0x1_0000_0000 + view.readUInt32BE(prefix.length + 4));
    }
    for (const generation of this.#generations) {
      if (generation.deletedGroups?.has(groupId)) ids.clear();
      for (const [id, value] of generation.writes.get(groupId) ?? []) {
        if (value === DELETED) ids.delete(id);
        else ids.add(id);
      }
    }
    return ids.size;
  }

  /** Resolves once every write made so far (and every running group deletion) is durable. */
  async flushed(): Promise<void> {
    await Promise.all([...this.#generations.map((g) => g.promise), ...this.#runningDeletions]);
    await this.#root.flushed;
    if (this.#failure) throw this.#failure;
  }

  /**
   * Stop accepting writes, let running group deletions stop after their current chunk (they resume
   * at the next open), and wait until everything written is durable. Does not close the environment.
   */
  async close(): Promise<void> {
    this.#closing = true;
    await Promise.allSettled(this.#runningDeletions);
    await Promise.allSettled(this.#generations.map((g) => g.promise));
    await this.#root.flushed;
  }

  #checkWritable(): void {
    if (this.#failure) throw this.#failure;
    if (this.#closing) throw new StorageClosedError('body store');
  }

  /** The generation of writes committed by `promise`: the newest one, or a new one. */
  #generationOf(promise: Promise<unknown>): Generation {
    const generations = this.#generations;
    const newest = generations[generations.length - 1];
    if (newest !== undefined && newest.promise === promise && !newest.done) return newest;
    const generation: Generation = { promise, writes: new Map(), deletedGroups: undefined, done: false };
    this.#track(generation);
    return generation;
  }

  #track(generation: Generation): void {
    this.#generations.push(generation);
    generation.promise.then(
      () => {
        generation.done = true;
        // Single operations commit in order, so this is normally the oldest. A group deletion may
        // finish after later writes; dropping out of order is fine, as nothing is written to a
        // group after its deletion (see the precondition above).
        this.#generations = this.#generations.filter((g) => !g.done);
      },
      (error: unknown) => this.#fail(error),
    );
  }

  #fail(cause: unknown): void {
    if (this.#failure) return;
    this.#failure = cause instanceof BodyStoreFailedError ? cause : new BodyStoreFailedError(cause);
    // Generations stay: reads keep answering from memory what may not be on disk.
    this.#logger.error({ err: cause }, 'body store write failed; the store accepts no more writes');
  }

  #startGroupDeletion(groupId: string): void {
    const run = this.#deleteGroupRange(groupId);
    this.#runningDeletions.add(run);
    const done = run.finally(() => this.#runningDeletions.delete(run));
    const generation: Generation = {
      promise: done,
      writes: new Map(),
      deletedGroups: new Set([groupId]),
      done: false,
    };
    this.#track(generation);
  }

  async #deleteGroupRange(groupId: string): Promise<void> {
    const prefix = this.#prefix(groupId);
    const start = bodyKey(prefix, 0);
    const end = bodyKey(prefix, END_OF_GROUP);
    const record = groupIdBytes(groupId);
    // Durable before any chunk: a crash in between leaves the record, and the next open resumes.
    await this.#deletions.put(record, DELETION_MARK);
    this.#prefixes.delete(groupId);
    for (;;) {
      if (this.#closing) return; // the record stays: the next open finishes the deletion
      const more = await this.#bodies.transaction(() => {
        // Collect first, then delete: not under a live cursor.
        const keys: Uint8Array[] = [];
        for (const key of this.#bodies.getKeys({ start, end, limit: DELETE_CHUNK_KEYS })) keys.push(key);
        for (const key of keys) this.#bodies.remove(key);
        return keys.length === DELETE_CHUNK_KEYS;
      });
      if (!more) break;
    }
    await this.#deletions.remove(record);
  }

  #prefix(groupId: string): Buffer {
    let prefix = this.#prefixes.get(groupId);
    if (prefix === undefined) {
      prefix = groupPrefix(groupId);
      if (this.#prefixes.size >= PREFIX_CACHE_LIMIT) this.#prefixes.clear();
      this.#prefixes.set(groupId, prefix);
    }
    return prefix;
  }
}

function recordWrite(generation: Generation, groupId: string, id: number, value: PendingValue): void {
  let group = generation.writes.get(groupId);
  if (group === undefined) {
    group = new Map();
    generation.writes.set(groupId, group);
  }
  group.set(id, value);
}

function checkId(id: number): number {
  if (!Number.isSafeInteger(id) || id < 0)
    throw new RangeError(`message id must be a non-negative safe integer, got ${id}`);
  return id;
}
