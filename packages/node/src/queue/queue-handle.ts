/**
 * A queue as the channel layer uses it, whatever protocol the channel speaks and wherever the
 * queue's leader runs. On a node alone it is the queue's actor itself; in a cluster it is the
 * node's `ClusterQueue` for the queue, which runs each command on the local replica when it leads
 * and forwards it over the queue link to the leader otherwise. Channels never hold a replica
 * directly: a leader change must not strand their acks on a follower.
 */
import type { HandOffId } from '@styx/dlx';
import type { QueueCounts, QueueReply, StoredMessage } from './types.ts';

/** What `QueueHandle.get` returns for a message. */
export interface QueueGetResult {
  readonly id: number;
  readonly redelivered: boolean;
  readonly deliveryCount: number;
  /** Ready messages left after this one. */
  readonly messageCount: number;
  readonly message: StoredMessage;
}

export interface QueueHandle {
  readonly vhost: string;
  readonly name: string;
  /** The queue incarnation (a redeclared queue gets a new one). */
  readonly groupId: string;
  /** Whether deliveries carry `x-delivery-count` (quorum-type queues). */
  readonly deliveryCountHeader: boolean;
  /**
   * Enqueue a routed message; `ttl` is its validated `expiration` in ms. Resolves once committed
   * (on a quorum of the queue's replicas, synced): `ok`, `rejected`, or `duplicate` for a hand-off
   * the queue already has.
   */
  enqueue(message: StoredMessage, ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply>;
  /** Attach a consumer; `ok` or `locked` (exclusivity). `prefetch` 0 = unlimited. */
  consume(
    owner: string,
    tag: string,
    prefetch: number,
    noAck: boolean,
    exclusive: boolean,
  ): Promise<QueueReply>;
  cancel(owner: string, tag: string): Promise<void>;
  /** Ack. Ids `owner` does not hold are ignored. */
  settle(owner: string, ids: readonly number[]): Promise<void>;
  /** Nack/reject with requeue, or recover. */
  returnMessages(owner: string, ids: readonly number[]): Promise<void>;
  /** Nack/reject without requeue. */
  discard(owner: string, ids: readonly number[]): Promise<void>;
  /** basic.get: the head message, or undefined when the queue is empty. */
  get(owner: string, noAck: boolean): Promise<QueueGetResult | undefined>;
  /** Remove every ready message; resolves with how many. */
  purge(): Promise<number>;
  /**
   * Remove these ready messages by id, without dead-lettering (a redrive's copies were confirmed
   * elsewhere); resolves with the ids removed. Ids not ready here are left alone. Retrying is safe.
   */
  remove(ids: readonly number[]): Promise<readonly number[]>;
  /** The owner (channel) is gone: its consumers go, its unacked messages come back. */
  ownerDown(owner: string): Promise<void>;
  /** A use of the queue that resets its `x-expires` clock. */
  touch(): Promise<void>;
  /**
   * The counts as this node knows them now: exact on the leader, as of the last applied entry on
   * another replica, zero where no replica runs (see `fetchCounts`).
   */
  counts(): QueueCounts;
  /** The counts as the leader has them. */
  fetchCounts(): Promise<QueueCounts>;
}
