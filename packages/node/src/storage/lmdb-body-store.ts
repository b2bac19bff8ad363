/**
 * The body store of durable queues, on the node's LMDB environment: one value per queued message,
 * keyed by the queue's group id (its incarnation) and the message id (see body-keys.ts), holding
 * the message's binary encoding (stored-message-codec.ts).
 *
 * Writes ride in the log store's batches when the store is given the node's `LogStore` (on the same
 * environment): the puts and deletes made while one log-store batch is being gathered form one
 * `AttachedWrite` of that batch and are applied inside its LMDB transaction, so they commit and sync
 * with it — one sync per I/O turn for log entries and bodies together. Without a log store (or once
 * it failed or is closing) writes are lmdb-js asynchronous single operations, committed in
 * transactions of their own. The `BodyStore` contract is synchronous, so until a write has
 * committed, the store answers reads of its key from memory: every write joins a "generation" (the
 * writes that share one promise: the log-store batch's, or one lmdb-js commit's); a generation is
 * forgotten once its promise resolves, when LMDB itself returns the new value. Reads check the
 * generations newest first, then LMDB.
 *
 * Why bodies written this way are safe to rely on across crashes — the ordering argument:
 * 1. A body is put when its enqueue is APPLIED, which happens only after the enqueue's log entry is
 *    durable; until a snapshot covers the message, a crash loses at most the body, and the replay
 *    of that entry puts it again. Likewise a delete follows a durable entry that removed the
 *    message, which the replay would apply again.
 * 2. The entry is deleted from the log only by a compaction: `snapshot + truncateBefore`, written
 *    to the log store after the body put (the put happened during the apply that the snapshot
 *    covers). With a log store, the put joined the attached write of the batch being gathered or of
 *    an earlier batch whose transaction has not run yet (an attached write takes new writes until
 *    its `apply` ran), so it commits in the compaction's transaction or an earlier one: the log
 *    store hands batches over and LMDB commits them in order. Without one, lmdb-js runs every
 *    asynchronous single operation queued before a transaction callback no later than that
 *    callback (README, "Asynchronous Transaction Ordering"), with the same conclusion.
 * 3. LMDB transactions become durable in commit order (copy-on-write pages; a meta page is only
 *    valid after everything it points at), and the log store reports the compaction durable only
 *    after `flushed`, which covers every earlier commit.
 * So when a snapshot and its truncation are durable, every body the snapshot refers to is durable.
 *
 * Held-back bodies (`putLogged`, what a queue uses when it applies an enqueue): the enqueue's log
 * entry carries the body and is durable before it is applied, so the body need not be written while
 * that entry is in the log. It is kept as a recent entry marked unwritten and written (joining the
 * batch being gathered, as a `put`) only when (a) the recent bounds evict it while its message is
 * live, or (b) the queue calls `persistLogged` while it takes a snapshot — the only time its log is
 * truncated, so by point 2 the write commits with or before the truncation. A message settled,
 * expired or dead-lettered before either costs no body write and no delete: in steady state most
 * messages never touch the bodies database. A replayed `putLogged` (the node restarted) may have
 * been written by the earlier run, so its delete still goes to LMDB.
 *
 * Recent bodies: the messages put most recently are also kept decoded in memory (bounded by
 * `recentBytes` and `RECENT_MAX_ENTRIES`, oldest evicted first) and dropped when deleted, so that a
 * delivery or a dead-letter of a message that is still recent costs no LMDB read and no decode. Each
 * kept message's body is a view of its stored encoding (exactly its bytes, not the network batch it
 * arrived in). A message the log's decoder deferred (`DeferredMessage`: what a follower applies) is
 * kept undecoded, as its encoding, and decoded by the first `get` that wants it: a follower that
 * never leads never decodes the messages it stores.
 *
 * Deleting a group removes its range in chunks (`DELETE_CHUNK_KEYS` per transaction, so a large
 * queue does not hold the event loop); a record in `body-deletions` marks the deletion as under way,
 * so a node that stops in the middle finishes it when it opens the store again.
 *
 * Precondition: nothing is written to a group after `deleteGroup` until `whenGroupDeleted`
 * resolved (a re-created queue has a new group id; a replica removed and added back on this node
 * waits for it). A failed commit fails the store: later writes throw `BodyStoreFailedError`.
 */
import type { AttachedWrite, LogStore } from '@styx/raft';
import type { Database, RootDatabase } from 'lmdb';
import type { BodyStore } from '../queue/body-store.ts';
import type { StoredMessage } from '../queue/types.ts';
import { bodyKey, END_OF_GROUP, GroupPrefixCache, groupIdBytes, readBodyId } from './body-keys.ts';
import { BodyStoreFailedError, StorageClosedError } from './errors.ts';
import { HeldBackQueue } from './held-back-queue.ts';
import type { StorageLogger } from './storage-logger.ts';
import { silentStorageLogger } from './storage-logger.ts';
import {
  DeferredMessage,
  decodeStoredMessage,
  encodeStoredMessage,
  plainStoredMessage,
} from './stored-message-codec.ts';

/** Sub-database holding the bodies. */
export const BODIES_DB = 'bodies';
/** Sub-database listing the groups whose deletion is under way (key: group id UTF-8). */
export const BODY_DELETIONS_DB = 'body-deletions';
/** Keys deleted per transaction when a group is deleted: bounds how long one chunk holds the event loop. */
export const DELETE_CHUNK_KEYS = 10_000;
/** Default bound of the recent bodies kept decoded in memory, bytes of body. */
export const DEFAULT_RECENT_BODY_BYTES = 32 * 1024 * 1024;
/** Most recent bodies kept (and eviction records, live or stale), entries. */
const RECENT_MAX_ENTRIES = 65_536;
/** Stale put-order records tolerated before a sweep (see `#sweepRecentOrder`). */
const RECENT_SWEEP_MIN_STALE = 1024;
/** Counted per kept message besides its body, bytes (the object, its strings, its map slots). */
const RECENT_ENTRY_OVERHEAD_BYTES = 256;

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
  /**
   * The node's log store on the SAME environment as `root`: writes then join its batches' LMDB
   * transactions (see the header). Omitted: every write is a transaction of its own.
   */
  readonly logStore?: LogStore;
  /** Bound of the recent bodies kept decoded in memory, bytes (default `DEFAULT_RECENT_BODY_BYTES`; 0 = none). */
  readonly recentBytes?: number;
}

/**
 * The writes gathered for one log-store batch, applied inside its transaction. Takes new writes
 * until `apply` ran; `ops` alternates key, value (undefined = delete).
 */
class BodyBatch implements AttachedWrite {
  readonly #bodies: Database<Uint8Array, Uint8Array>;
  readonly ops: (Uint8Array | undefined)[] = [];
  generation: Generation | undefined;
  applied = false;

  constructor(bodies: Database<Uint8Array, Uint8Array>) {
    this.#bodies = bodies;
  }

  apply(): void {
    this.applied = true;
    const bodies = this.#bodies;
    const ops = this.ops;
    for (let i = 0; i < ops.length; i += 2) {
      const key = ops[i] as Uint8Array;
      const value = ops[i + 1];
      if (value === undefined) bodies.remove(key);
      else bodies.put(key, value);
    }
  }
}

/** One kept recent message, in put order; stale once its message was deleted or evicted. */
interface RecentEntry {
  readonly groupId: string;
  readonly id: number;
  readonly message: StoredMessage;
  readonly size: number;
  /**
   * The body's encoding while it is held back (`putLogged`): the log entry is its only durable copy,
   * and it is written when evicted or persisted. Undefined once written (or for `put`).
   */
  unwritten: Uint8Array | undefined;
  /** An earlier run may have written it (a replayed `putLogged`): deleting it must reach LMDB. */
  readonly mayBeStored: boolean;
}

export class LmdbBodyStore implements BodyStore {
  readonly #root: RootDatabase;
  readonly #bodies: Database<Uint8Array, Uint8Array>;
  readonly #deletions: Database<Uint8Array, Uint8Array>;
  readonly #logger: StorageLogger;
  readonly #logStore: LogStore | undefined;
  /** The attached write taking this turn's writes; replaced once its `apply` ran. */
  #batch: BodyBatch | undefined;
  readonly #prefixes = new GroupPrefixCache();
  /** Oldest first; done generations are removed as soon as their promise resolves. */
  #generations: Generation[] = [];
  readonly #runningDeletions = new Set<Promise<void>>();
  /** groupId → its deletion under way (resolves once every body of the group is gone). */
  readonly #deletingGroups = new Map<string, Promise<void>>();
  #failure: BodyStoreFailedError | undefined;
  #closing = false;
  readonly #recentLimit: number;
  /** groupId → id → the recent message kept for it. */
  readonly #recent = new Map<string, Map<number, RecentEntry>>();
  /**
   * Put order, oldest at `#recentHead`; entries may be stale (deleted or replaced since). Stale
   * ones are swept out once they outnumber the live ones (`#sweepRecentOrder`): a drained queue
   * must not keep its last bodies reachable from here until later puts push them out.
   */
  #recentOrder: RecentEntry[] = [];
  #recentHead = 0;
  /** Live entries of `#recent`, all groups. */
  #recentCount = 0;
  #recentBytes = 0;
  /** Recent entries whose body is held back (`putLogged`), not written yet, per group. */
  readonly #heldBack = new Map<string, HeldBackQueue<RecentEntry>>();
  /**
   * Per group, the highest message id that may have a record in LMDB: read from LMDB when the
   * group is first touched in this run (what earlier runs wrote), raised by this run's writes.
   * Ids are log indexes and only grow, so a held-back body with a higher id was never written by
   * any run, and its delete need not reach the disk.
   */
  readonly #storedUpTo = new Map<string, number>();

  /**
   * The body store in `root` (the node's environment, opened with syncs on). Resumes the group
   * deletions a previous run left unfinished.
   */
  constructor(root: RootDatabase, options: LmdbBodyStoreOptions = {}) {
    this.#root = root;
    this.#logger = options.logger ?? silentStorageLogger;
    this.#logStore = options.logStore;
    this.#recentLimit = options.recentBytes ?? DEFAULT_RECENT_BODY_BYTES;
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
    this.#noteStored(groupId, id);
    const encoding = encodeStoredMessage(message);
    recordWrite(this.#write(key, encoding), groupId, id, message);
    if (this.#recentLimit > 0) this.#keepRecent(groupId, id, message, encoding, false, true);
  }

  /**
   * Keep the body in memory only, as a recent entry marked unwritten (see `BodyStore.putLogged`): it
   * is written if evicted or persisted while its message is live, and never if deleted first. With
   * no memory for recent bodies, it is written at once.
   */
  putLogged(groupId: string, id: number, message: StoredMessage, replayed: boolean): void {
    if (this.#recentLimit <= 0) {
      this.put(groupId, id, message);
      return;
    }
    this.#checkWritable();
    checkId(id);
    // `replayed` alone is not enough: entries committed before a crash but applied after the log
    // opened (their commit index came from the leader) may have been written by the earlier run.
    const mayBeStored = replayed || id <= this.#storedUpToOf(groupId);
    this.#keepRecent(groupId, id, message, encodeStoredMessage(message), true, mayBeStored);
  }

  persistLogged(groupId: string): void {
    this.persistSomeLogged(groupId, Number.POSITIVE_INFINITY);
  }

  /**
   * Write at most `max` of the group's held-back bodies now (they join the log store's batch being
   * gathered); returns how many stay held back. Lets a queue spread the writes a snapshot needs over
   * several turns before it takes it, instead of one long turn and one large sync.
   */
  persistSomeLogged(groupId: string, max: number): number {
    const held = this.#heldBack.get(groupId);
    if (held === undefined) return 0;
    this.#checkWritable();
    let written = 0;
    held.visit((entry) => {
      if (written >= max) return false;
      this.#writeHeldBack(entry);
      written++;
      return true;
    });
    return held.size;
  }

  /**
   * Write the group's held-back bodies of messages with id <= `maxId`, oldest first, at most
   * `max` of them. Held-back bodies are kept in apply order, so this stops at the first younger one.
   */
  persistLoggedUpTo(groupId: string, maxId: number, max: number): void {
    const held = this.#heldBack.get(groupId);
    if (held === undefined) return;
    this.#checkWritable();
    let written = 0;
    held.visit((entry) => {
      if (entry.id > maxId || written >= max) return false;
      this.#writeHeldBack(entry);
      written++;
      return true;
    });
  }

  /** Bodies held back by `putLogged` and not written yet, all groups (for tests and management). */
  get heldBackCount(): number {
    let count = 0;
    for (const held of this.#heldBack.values()) count += held.size;
    return count;
  }

  /** Bodies of `groupId` held back by `putLogged` and not written yet. */
  heldBackCountOf(groupId: string): number {
    return this.#heldBack.get(groupId)?.size ?? 0;
  }

  #hold(entry: RecentEntry): void {
    let held = this.#heldBack.get(entry.groupId);
    if (held === undefined) {
      held = new HeldBackQueue();
      this.#heldBack.set(entry.groupId, held);
    }
    held.add(entry);
  }

  /** `entry` is no longer held back: written, deleted or superseded. */
  #release(entry: RecentEntry): void {
    if (entry.unwritten === undefined) return;
    entry.unwritten = undefined;
    const held = this.#heldBack.get(entry.groupId);
    if (held === undefined) return;
    held.released();
    if (held.size === 0) this.#heldBack.delete(entry.groupId);
  }

  /** Slots of the group's held-back queue, live or stale (for tests). */
  heldBackSlotsOf(groupId: string): number {
    return this.#heldBack.get(groupId)?.slots ?? 0;
  }

  /** Write a held-back body now (it joins the log store's batch being gathered). */
  #writeHeldBack(entry: RecentEntry): void {
    const encoding = entry.unwritten as Uint8Array;
    this.#release(entry);
    this.#noteStored(entry.groupId, entry.id);
    const key = bodyKey(this.#prefix(entry.groupId), entry.id);
    recordWrite(this.#write(key, encoding), entry.groupId, entry.id, entry.message);
  }

  get(groupId: string, id: number): StoredMessage | undefined {
    const generations = this.#generations;
    for (let i = generations.length - 1; i >= 0; i--) {
      const generation = generations[i] as Generation;
      const pending = generation.writes.get(groupId)?.get(id);
      if (pending !== undefined) return pending === DELETED ? undefined : plainStoredMessage(pending);
      if (generation.deletedGroups?.has(groupId)) return undefined;
    }
    const recent = this.#recent.get(groupId)?.get(id);
    if (recent !== undefined) return plainStoredMessage(recent.message);
    const value = this.#bodies.get(bodyKey(this.#prefix(groupId), checkId(id)));
    return value === undefined ? undefined : decodeStoredMessage(value, `body ${groupId}/${id}`);
  }

  has(groupId: string, id: number): boolean {
    const generations = this.#generations;
    for (let i = generations.length - 1; i >= 0; i--) {
      const generation = generations[i] as Generation;
      const pending = generation.writes.get(groupId)?.get(id);
      if (pending !== undefined) return pending !== DELETED;
      if (generation.deletedGroups?.has(groupId)) return false;
    }
    if (this.#recent.get(groupId)?.has(id) === true) return true;
    return this.#bodies.doesExist(bodyKey(this.#prefix(groupId), checkId(id)));
  }

  delete(groupId: string, id: number): void {
    this.#checkWritable();
    const group = this.#recent.get(groupId);
    const recent = group?.get(id);
    if (recent !== undefined) {
      group?.delete(id);
      if (group?.size === 0) this.#recent.delete(groupId);
      this.#recentBytes -= recent.size;
      this.#recentCount--;
      this.#sweepRecentOrder();
      if (recent.unwritten !== undefined) {
        this.#release(recent);
        // Never written by this run, and no earlier run wrote it: nothing on disk to delete.
        if (!recent.mayBeStored) return;
      }
    }
    recordWrite(this.#write(bodyKey(this.#prefix(groupId), checkId(id)), undefined), groupId, id, DELETED);
  }

  deleteGroup(groupId: string): void {
    this.#checkWritable();
    groupIdBytes(groupId);
    const group = this.#recent.get(groupId);
    if (group !== undefined) {
      for (const entry of group.values()) {
        this.#recentBytes -= entry.size;
        if (entry.unwritten !== undefined) this.#release(entry);
      }
      this.#recentCount -= group.size;
      this.#recent.delete(groupId);
      this.#sweepRecentOrder();
    }
    this.#storedUpTo.delete(groupId);
    this.#startGroupDeletion(groupId);
  }

  /**
   * Keep `message` decoded, as a copy whose body is a view of `encoding` (so it holds exactly the
   * stored bytes), then evict the oldest kept messages beyond the bounds. `heldBack`: not written
   * yet (`putLogged`); `mayBeStored`: an LMDB record may exist for it.
   */
  #keepRecent(
    groupId: string,
    id: number,
    message: StoredMessage,
    encoding: Uint8Array,
    heldBack: boolean,
    mayBeStored: boolean,
  ): void {
    // A message deferred by the log's decoder (a follower's enqueue) is its encoding and nothing
    // else yet: kept as it is, it is decoded only if a read asks for it (`get`).
    const deferred = message instanceof DeferredMessage && message.encoding === encoding;
    const bodyLength = deferred ? message.bodyLength : message.body.byteLength;
    const kept: StoredMessage = deferred
      ? message
      : {
          exchange: message.exchange,
          routingKey: message.routingKey,
          properties: message.properties,
          body: encoding.subarray(encoding.byteLength - bodyLength),
          bcc: message.bcc,
        };
    // Not remembered as `kept`'s encoding (a WeakMap entry per message): nothing re-encodes a copy
    // read from the store on the hot path, and encodeStoredMessage would just encode it again.
    const entry: RecentEntry = {
      groupId,
      id,
      message: kept,
      size: bodyLength + RECENT_ENTRY_OVERHEAD_BYTES,
      unwritten: heldBack ? encoding : undefined,
      mayBeStored,
    };
    if (heldBack) this.#hold(entry);
    let group = this.#recent.get(groupId);
    if (group === undefined) {
      group = new Map();
      this.#recent.set(groupId, group);
    }
    const replaced = group.get(id);
    if (replaced !== undefined) {
      this.#recentBytes -= replaced.size;
      // Superseded by this put (a replay of the same entry): its bytes need no write of their own.
      if (replaced.unwritten !== undefined) this.#release(replaced);
    } else {
      this.#recentCount++;
    }
    group.set(id, entry);
    this.#recentBytes += entry.size;
    this.#recentOrder.push(entry);
    this.#evictRecent();
  }

  /** See `#storedUpTo`. */
  #storedUpToOf(groupId: string): number {
    let upTo = this.#storedUpTo.get(groupId);
    if (upTo === undefined) {
      upTo = -1;
      const prefix = this.#prefix(groupId);
      for (const key of this.#bodies.getKeys({
        start: bodyKey(prefix, END_OF_GROUP),
        end: bodyKey(prefix, 0),
        reverse: true,
        limit: 1,
      })) {
        upTo = readBodyId(key, prefix.length);
      }
      this.#storedUpTo.set(groupId, upTo);
    }
    return upTo;
  }

  #noteStored(groupId: string, id: number): void {
    if (id > this.#storedUpToOf(groupId)) this.#storedUpTo.set(groupId, id);
  }

  #evictRecent(): void {
    const order = this.#recentOrder;
    while (
      this.#recentHead < order.length &&
      (this.#recentBytes > this.#recentLimit || order.length - this.#recentHead > RECENT_MAX_ENTRIES)
    ) {
      const oldest = order[this.#recentHead] as RecentEntry;
      order[this.#recentHead] = undefined as unknown as RecentEntry; // let it be collected
      this.#recentHead++;
      const group = this.#recent.get(oldest.groupId);
      if (group?.get(oldest.id) === oldest) {
        // Leaving memory while its message is live: a held-back body must be written now.
        if (oldest.unwritten !== undefined) this.#writeHeldBack(oldest);
        group.delete(oldest.id);
        this.#recentBytes -= oldest.size;
        this.#recentCount--;
        if (group.size === 0) this.#recent.delete(oldest.groupId);
      }
    }
    if (this.#recentHead >= 1024 && this.#recentHead * 2 >= order.length) {
      this.#recentOrder = order.slice(this.#recentHead);
      this.#recentHead = 0;
    }
  }

  /**
   * Drop the stale records of `#recentOrder` once they are the majority (and more than a few): each
   * holds a deleted message and its body. Amortized O(1) per delete, as a sweep runs only after at
   * least as many deletes as the records it keeps.
   */
  #sweepRecentOrder(): void {
    const tracked = this.#recentOrder.length - this.#recentHead;
    const stale = tracked - this.#recentCount;
    if (stale < RECENT_SWEEP_MIN_STALE || stale <= this.#recentCount) return;
    const live: RecentEntry[] = [];
    for (let i = this.#recentHead; i < this.#recentOrder.length; i++) {
      const entry = this.#recentOrder[i] as RecentEntry;
      if (this.#recent.get(entry.groupId)?.get(entry.id) === entry) live.push(entry);
    }
    this.#recentOrder = live;
    this.#recentHead = 0;
  }

  /** Records of `#recentOrder`, live or stale (for tests: bounded by twice the live ones, or a few). */
  get recentOrderLength(): number {
    return this.#recentOrder.length - this.#recentHead;
  }

  /** Messages kept decoded in memory, all groups. */
  get recentCount(): number {
    return this.#recentCount;
  }

  /** Bodies stored for the group (committed ones, plus writes not yet committed): O(n), for tests. */
  count(groupId: string): number {
    const prefix = this.#prefix(groupId);
    const ids = new Set<number>();
    for (const key of this.#bodies.getKeys({
      start: bodyKey(prefix, 0),
      end: bodyKey(prefix, END_OF_GROUP),
    })) {
      ids.add(readBodyId(key, prefix.length));
    }
    for (const generation of this.#generations) {
      if (generation.deletedGroups?.has(groupId)) ids.clear();
      for (const [id, value] of generation.writes.get(groupId) ?? []) {
        if (value === DELETED) ids.delete(id);
        else ids.add(id);
      }
    }
    for (const entry of this.#recent.get(groupId)?.values() ?? []) {
      if (entry.unwritten !== undefined) ids.add(entry.id);
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

  /** Put (`value` undefined: delete) `key`; returns the generation the write joined. */
  #write(key: Uint8Array, value: Uint8Array | undefined): Generation {
    const logStore = this.#logStore;
    if (logStore === undefined || !logStore.writable) {
      const promise = value === undefined ? this.#bodies.remove(key) : this.#bodies.put(key, value);
      return this.#generationOf(promise);
    }
    let batch = this.#batch;
    if (batch === undefined || batch.applied) {
      batch = new BodyBatch(this.#bodies);
      this.#batch = batch;
    }
    batch.ops.push(key, value);
    let generation = batch.generation;
    if (generation === undefined) {
      generation = {
        promise: logStore.attach(batch),
        writes: new Map(),
        deletedGroups: undefined,
        done: false,
      };
      batch.generation = generation;
      this.#track(generation);
    }
    return generation;
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

  /**
   * Resolves once no deletion of `groupId` is under way (at once when none is). A replica of the
   * same group made again on this node (removed, then added back) writes its bodies only after
   * this: a deletion still running would delete them, and one resumed after a crash too.
   */
  whenGroupDeleted(groupId: string): Promise<void> {
    return this.#deletingGroups.get(groupId) ?? Promise.resolve();
  }

  #startGroupDeletion(groupId: string): void {
    const run = this.#deleteGroupRange(groupId);
    this.#runningDeletions.add(run);
    const done = run.finally(() => {
      this.#runningDeletions.delete(run);
      if (this.#deletingGroups.get(groupId) === settled) this.#deletingGroups.delete(groupId);
    });
    const settled = done.then(
      () => undefined,
      () => undefined,
    );
    this.#deletingGroups.set(groupId, settled);
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
    this.#prefixes.forget(groupId);
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
    return this.#prefixes.get(groupId);
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
