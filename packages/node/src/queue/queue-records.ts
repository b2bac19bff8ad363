/**
 * The records the queue machine keeps per message, per consumer and per owner. Classes (not object
 * literals) so every record of a kind has one hidden class; links are intrusive (see LinkedQueue)
 * so moving a message between ready and unacked allocates nothing.
 */

import type { HeapItem } from './expiry-heap.ts';
import type { Linked } from './linked-queue.ts';
import { LinkedQueue } from './linked-queue.ts';
import type { OwnerId } from './types.ts';

/** Where a message is. Exactly one of these at any time while it is in the queue. */
export const Place = {
  /** In the main ready FIFO, in id order (never delivered yet). */
  Ready: 0,
  /** In the returns FIFO, which is served before `Ready`. */
  Returned: 1,
  /** Checked out to an owner, in that owner's unacked list. */
  Unacked: 2,
} as const;
export type Place = (typeof Place)[keyof typeof Place];

/** One message's metadata (the body lives in the body store). */
export class MessageEntry implements HeapItem, Linked<MessageEntry> {
  /** The log index of its enqueue: stable, unique and increasing within the queue. */
  readonly id: number;
  /** Body size in bytes. */
  readonly size: number;
  /** ms since the epoch (the enqueue entry's `ts`). */
  readonly enqueuedAt: number;
  /** The per-message TTL in ms (`expiration`), or undefined. */
  readonly ttl: number | undefined;
  /** Number of times it was returned (nack/reject with requeue, recover, owner down). */
  deliveryCount: number;
  place: Place = Place.Ready;
  /** Effective expiry while ready, ms since the epoch; Infinity = never. Stale while unacked. */
  expiresAt = Number.POSITIVE_INFINITY;
  heapIndex = -1;
  prev: MessageEntry | undefined = undefined;
  next: MessageEntry | undefined = undefined;
  /** While unacked: who holds it. */
  owner: Owner | undefined = undefined;
  /** While unacked through a consumer: that consumer (maybe cancelled since); undefined for basic.get. */
  consumer: Consumer | undefined = undefined;
  /**
   * While in the returns FIFO: the log index of the apply that put it there, and its rank among the
   * messages that apply returned. The pair increases along the FIFO (appends only), so a browse
   * cursor made of it stays right whatever leaves the FIFO (see QueueMachine.readyEntries).
   */
  returnIndex = 0;
  returnOrdinal = 0;

  constructor(id: number, size: number, enqueuedAt: number, ttl: number | undefined, deliveryCount: number) {
    this.id = id;
    this.size = size;
    this.enqueuedAt = enqueuedAt;
    this.ttl = ttl;
    this.deliveryCount = deliveryCount;
  }
}

/** An attached consumer. Linked into the machine's waiting list while it has credit. */
export class Consumer implements Linked<Consumer> {
  /** The log index of its consume command: unique, names the consumer in snapshots. */
  readonly seq: number;
  readonly owner: Owner;
  readonly tag: string;
  /** Max unacked deliveries; 0 = unlimited. Ignored for noAck consumers. */
  readonly prefetch: number;
  readonly noAck: boolean;
  readonly exclusive: boolean;
  /** Unacked messages delivered through this consumer. */
  checkedOut = 0;
  /** False once cancelled; its unacked messages stay with the owner. */
  live = true;
  /** In the waiting list (invariant: live and has credit ⇔ waiting). */
  waiting = false;
  prev: Consumer | undefined = undefined;
  next: Consumer | undefined = undefined;

  constructor(seq: number, owner: Owner, tag: string, prefetch: number, noAck: boolean, exclusive: boolean) {
    this.seq = seq;
    this.owner = owner;
    this.tag = tag;
    this.prefetch = prefetch;
    this.noAck = noAck;
    this.exclusive = exclusive;
  }

  /** Whether it may take one more message now. */
  hasCredit(): boolean {
    return this.noAck || this.prefetch === 0 || this.checkedOut < this.prefetch;
  }
}

/** A channel holding consumers and/or unacked messages; dropped when it holds neither. */
export class Owner {
  readonly id: OwnerId;
  /** By tag, in attach order. */
  readonly consumers = new Map<string, Consumer>();
  /** Its unacked messages, in delivery order (linked through the entries' prev/next). */
  readonly unacked = new LinkedQueue<MessageEntry>();
  /** Its node is suspected: its consumers take no new messages (none of them is waiting). */
  suspended = false;

  constructor(id: OwnerId) {
    this.id = id;
  }
}
