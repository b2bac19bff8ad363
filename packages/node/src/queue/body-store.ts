/**
 * Where message bodies live while their metadata sits in a queue machine. Keyed by the queue's
 * group id (one incarnation of a queue) and the message id (the log index of its enqueue).
 *
 * Synchronous on purpose: the actor writes a body while it applies the enqueue and reads it while
 * it runs the effects of the same apply, so a store must answer from memory or from a synchronous
 * read (the LMDB store reads synchronously and batches its writes into the log's I/O turn).
 * Every method is idempotent: replays put and delete the same keys again.
 */
import { plainStoredMessage } from '../storage/stored-message-codec.ts';
import type { StoredMessage } from './types.ts';

export interface BodyStore {
  /** Store (or overwrite) the body of message `id`, durably with the log's next batch. */
  put(groupId: string, id: number, message: StoredMessage): void;
  /**
   * Store the body of message `id` whose enqueue entry — which carries the body too — is still in
   * the group's durable log. The store may keep it in memory only: the log holds it durably until a
   * compaction truncates the entry, and the owner calls `persistLogged` before every compaction. So
   * a message acked, expired or dead-lettered before then costs no body write and no body delete.
   * `replayed`: the entry is being replayed when the log opens, so an earlier run of the node may
   * have written this body already (a later delete must then reach the disk). A store that can
   * tell on its own (the LMDB store knows the highest id it ever stored per group) also treats as
   * maybe written an entry the earlier run applied but whose commit index this run learnt only
   * after opening.
   */
  putLogged(groupId: string, id: number, message: StoredMessage, replayed: boolean): void;
  /**
   * Write every body of the group that `putLogged` kept in memory, durably with the log's next batch:
   * called while the owner takes the snapshot its log is about to truncate behind (so the bodies
   * commit with or before the truncation).
   */
  persistLogged(groupId: string): void;
  /** The stored message, or undefined if there is none. */
  get(groupId: string, id: number): StoredMessage | undefined;
  /** Whether a body is stored for message `id` (as `get` would find it, without decoding it). */
  has(groupId: string, id: number): boolean;
  /** Forget message `id`; a no-op if it is not stored. */
  delete(groupId: string, id: number): void;
  /** Forget every message of the group (queue deleted). */
  deleteGroup(groupId: string): void;
}

/** The body store of exclusive and non-durable queues, and of tests: a Map per group. */
export class InMemoryBodyStore implements BodyStore {
  private readonly groups = new Map<string, Map<number, StoredMessage>>();

  put(groupId: string, id: number, message: StoredMessage): void {
    let group = this.groups.get(groupId);
    if (group === undefined) {
      group = new Map();
      this.groups.set(groupId, group);
    }
    // A message deferred by the log's decoder is kept decoded: what `get` returns is a plain object.
    group.set(id, plainStoredMessage(message));
  }

  putLogged(groupId: string, id: number, message: StoredMessage): void {
    this.put(groupId, id, message);
  }

  persistLogged(): void {
    // Nothing is durable here; nothing to write.
  }

  has(groupId: string, id: number): boolean {
    return this.groups.get(groupId)?.has(id) ?? false;
  }

  get(groupId: string, id: number): StoredMessage | undefined {
    return this.groups.get(groupId)?.get(id);
  }

  delete(groupId: string, id: number): void {
    const group = this.groups.get(groupId);
    if (group === undefined) return;
    // The group's map stays when it empties (a queue often swings between 0 and 1 messages);
    // deleteGroup drops it.
    group.delete(id);
  }

  deleteGroup(groupId: string): void {
    this.groups.delete(groupId);
  }

  /** Number of bodies stored for the group (for tests and management). */
  size(groupId: string): number {
    return this.groups.get(groupId)?.size ?? 0;
  }
}
