/**
 * The queue state machine: RabbitMQ quorum-queue semantics (rabbit_fifo) as a pure, deterministic
 * `StateMachine` run by a `ReplicatedLog` on every replica. No I/O, no clock (time is `meta.ts`),
 * no randomness; it holds message metadata only (bodies live in the body store).
 *
 * Shape of the state:
 * - `entries`: id → MessageEntry for every message in the queue (ready or unacked). A message's id
 *   is the log index of its enqueue.
 * - Two ready FIFOs: `returned` (messages that came back; served first, as rabbit_fifo's returns
 *   queue) and `ready` (never delivered, in id order). "The head" is returned.head ?? ready.head.
 * - `expiry`: an indexed min-heap of the ready messages that have a finite expiry. Only ready
 *   messages expire; an unacked message's expiry is recomputed when it comes back.
 * - `owners`: channels holding consumers and/or unacked messages; each owner links its unacked
 *   messages in delivery order.
 * - `waiting`: the consumers that have credit, in round-robin order. Invariant after every apply:
 *   no ready message while a consumer waits (all that can be delivered has been).
 *
 * - `pending`: messages dead-lettered at-least-once and waiting for their hand-off (`@styx/dlx`'s
 *   PendingDeadLetters): neither ready nor unacked, never delivered, bodies kept in the body store
 *   until `deadLetterSettled`. While it is full, publishes are refused (back-pressure).
 * - `dedupe`: per source queue incarnation, the hand-off ids already enqueued here, so a copy sent
 *   again after a lost confirm is dropped (DedupeWatermarks). Its window (ids kept per source)
 *   starts at `dedupeLimits` and changes only by a `setDedupeWindow` entry: a replicated parameter,
 *   so replicas of different builds (or a log replayed by a newer build) dedupe alike.
 *
 * Dead-lettering a removed message (reject/nack without requeue, TTL, drop-head or
 * reject-publish-dlx overflow, delivery limit) depends on the config in force:
 * - no dead-letter exchange: dropped, counted in `droppedNoDlx`;
 * - at-least-once: into `pending`, with the entry's ts as its dead-letter time, and a
 *   `deadLetterHandOff` effect for the leader; counted in `deadLettered` when it settles;
 * - at-most-once: a `deadLetter` effect (the leader publishes the copies without confirms, reading
 *   the bodies before they are deleted), counted in `deadLettered` at once.
 *
 * Every apply runs: expire due messages → the command → deliver → expire due messages (a TTL-0
 * message that no waiting consumer took) → drop-head length limits → dead-letter effects (one per
 * reason, then one hand-off effect) → how late the expired messages were (`expired`, timing only) →
 * timer effect if the earliest deadline changed.
 *
 * Costs: enqueue, settle, deliver O(1) plus O(log n) for messages with an expiry; expiring k
 * messages O(k log n). No allocation per apply beyond the result (a shared result when nothing
 * happened, shared empty arrays when no effects or no removals).
 */

import type { DedupeLimits, PendingDeadLetter, PendingLimits } from '@styx/dlx';
import {
  DEFAULT_DEDUPE_LIMITS,
  DEFAULT_PENDING_LIMITS,
  DedupeWatermarks,
  isDedupeWindow,
  MAX_DEDUPE_WINDOW,
  PendingDeadLetters,
} from '@styx/dlx';
import type { EntryMeta, StateMachine } from '@styx/raft';
import { QueueSnapshotError } from './errors.ts';
import { ExpiryHeap } from './expiry-heap.ts';
import { LinkedQueue } from './linked-queue.ts';
import type { BrowsableReady, BrowsePosition } from './message-browse.ts';
import { Consumer, MessageEntry, Owner, Place } from './queue-records.ts';
import { ByteReader, ByteWriter } from './snapshot-bytes.ts';
import type {
  OverflowMode,
  OwnerId,
  QueueApplyResult,
  QueueCommand,
  QueueConfig,
  QueueCounts,
  QueueEffect,
  QueueReply,
  RemovalReason,
  RemovalTotals,
} from './types.ts';
import { DEFAULT_QUEUE_CONFIG } from './types.ts';

type EnqueueCommand = Extract<QueueCommand, { type: 'enqueue' }>;
type ConsumeCommand = Extract<QueueCommand, { type: 'consume' }>;

/** An attached consumer, as management and the actor see it. */
export interface ConsumerInfo {
  readonly owner: OwnerId;
  readonly tag: string;
  readonly prefetch: number;
  readonly noAck: boolean;
  readonly exclusive: boolean;
  /** Unacked messages delivered through it. */
  readonly unacked: number;
}

/**
 * Bounds of the machine's dead-letter state. Every replica of a queue must use the same values
 * (they decide replies), so they are fixed per node build, not per replica.
 */
export interface QueueMachineOptions {
  /** The pending cap (messages and body bytes) past which publishes are refused. */
  readonly pendingLimits?: PendingLimits;
  /**
   * How many hand-off ids, per source and in all, this queue remembers to drop duplicates until its
   * log sets another window (`setDedupeWindow`). Every build starts at `DEFAULT_DEDUPE_LIMITS`.
   */
  readonly dedupeLimits?: DedupeLimits;
}

/** The dead-letter counters the machine keeps (replicated); see `DeadLetterTotals`. */
export interface MachineDeadLetterTotals {
  readonly deadLettered: RemovalTotals;
  readonly droppedNoDlx: RemovalTotals;
  /** Hand-offs this queue received again and dropped as duplicates. */
  readonly duplicatesDropped: number;
}

/** An unacked message delivered through a consumer that is still attached. */
export interface OutstandingDelivery {
  readonly tag: string;
  readonly id: number;
  readonly deliveryCount: number;
}

const NO_EFFECTS: readonly QueueEffect[] = Object.freeze([]);
const NO_IDS: readonly number[] = Object.freeze([]);
const REPLY_OK: QueueReply = Object.freeze({ type: 'ok' });
const REPLY_EMPTY: QueueReply = Object.freeze({ type: 'empty' });
const REPLY_REJECTED: QueueReply = Object.freeze({ type: 'rejected', reason: 'maxlen' });
const REPLY_BACKLOG: QueueReply = Object.freeze({ type: 'rejected', reason: 'dead-letter-backlog' });
const REPLY_DUPLICATE: QueueReply = Object.freeze({ type: 'duplicate' });
const REPLY_OUT_OF_ORDER: QueueReply = Object.freeze({ type: 'outOfOrder' });
const REPLY_LOCKED_BY_EXCLUSIVE: QueueReply = Object.freeze({
  type: 'locked',
  text: 'queue has an exclusive consumer',
});
const REPLY_LOCKED_IN_USE: QueueReply = Object.freeze({
  type: 'locked',
  text: 'queue has consumers: cannot consume exclusively',
});
/** What most applies return: nothing to do beyond the state change. */
const RESULT_OK: QueueApplyResult = Object.freeze({ reply: REPLY_OK, effects: NO_EFFECTS, removed: NO_IDS });
const EFFECT_CANCEL_TIMER: QueueEffect = Object.freeze({ type: 'cancelTimer' });
const EFFECT_QUEUE_EXPIRED: QueueEffect = Object.freeze({ type: 'queueExpired' });

/** Dead-letter effects of one apply are emitted in this order. */
const REMOVAL_REASONS: readonly RemovalReason[] = ['rejected', 'delivery_limit', 'expired', 'maxlen'];
const OVERFLOW_MODES: readonly OverflowMode[] = ['drop-head', 'reject-publish', 'reject-publish-dlx'];
const DEAD_LETTER_STRATEGIES: readonly QueueConfig['deadLetterStrategy'][] = [
  'at-most-once',
  'at-least-once',
];
/**
 * 2 appends the dead-letter state (pending, dedupe, counters); version 1 snapshots (taken before
 * dead-lettering existed) still restore, with that state empty. 3 appends the suspended owners;
 * written only while an owner is suspended, so a node that reads version 2 only still reads the
 * snapshots of a queue with none (the common case) during a rolling upgrade. 4 appends, after
 * version 3's tail (its suspended owners, maybe none), the return keys of the returns FIFO (see
 * `MessageEntry.returnIndex`); written only while that FIFO holds messages, for the same reason.
 * Restoring an older version keys the returns FIFO (0, rank), which sorts before every later return.
 * 5 is version 4's layout (its tails always present) followed by the dedupe window; written only
 * once a `setDedupeWindow` entry changed it, which the leader proposes only when every member's
 * build reads it (feature flag `wide_dedupe_window`). Older versions restore the initial window.
 */
const SNAPSHOT_VERSION = 2;
const SNAPSHOT_VERSION_1 = 1;
const SNAPSHOT_VERSION_3 = 3;
const SNAPSHOT_VERSION_4 = 4;
const SNAPSHOT_VERSION_5 = 5;

export class QueueMachine implements StateMachine<QueueCommand, QueueApplyResult> {
  private config: QueueConfig;
  private readonly entries = new Map<number, MessageEntry>();
  private readonly returned = new LinkedQueue<MessageEntry>();
  private readonly ready = new LinkedQueue<MessageEntry>();
  private readonly expiry = new ExpiryHeap<MessageEntry>();
  private readonly owners = new Map<OwnerId, Owner>();
  private readonly waiting = new LinkedQueue<Consumer>();
  private consumerTotal = 0;
  private exclusiveConsumer: Consumer | undefined = undefined;
  /** Body bytes of ready messages. */
  private readyBytes = 0;
  private unackedTotal = 0;
  /**
   * When the queue was last used (consume, get, touch, or its last consumer leaving), for
   * `x-expires`; set by the first apply, so undefined only before anything was applied.
   */
  private lastUsed: number | undefined = undefined;
  /** The deadline the last timer effect announced (undefined: timer cancelled or never armed). */
  private armedDeadline: number | undefined = undefined;
  /** `x-expires` fired: the node is deleting the queue. Sticky. */
  private queueExpired = false;
  private readonly totals: Record<RemovalReason, number> = zeroTotals();
  /** See `DeadLetterTotals.deadLettered`. */
  private readonly deadLettered: Record<RemovalReason, number> = zeroTotals();
  /** See `DeadLetterTotals.droppedNoDlx`. */
  private readonly droppedNoDlx: Record<RemovalReason, number> = zeroTotals();
  private duplicatesDropped = 0;
  private readonly pendingLimits: PendingLimits;
  private readonly dedupeLimits: DedupeLimits;
  /** Messages waiting for their at-least-once hand-off. Replaced by restore. */
  private pending: PendingDeadLetters;
  /** Hand-offs received, per source. Replaced by restore. */
  private dedupe: DedupeWatermarks;
  private appliedIndex = 0;
  /** The apply that last appended to the returns FIFO, and how many it appended (the next rank). */
  private returnKeyIndex = 0;
  private returnKeyOrdinal = 0;

  // Scratch state of the apply in progress; reset by `finish`.
  private now = 0;
  private effects: QueueEffect[] | undefined = undefined;
  private removed: number[] | undefined = undefined;
  private readonly dead: Record<RemovalReason, number[] | undefined> = {
    rejected: undefined,
    delivery_limit: undefined,
    expired: undefined,
    maxlen: undefined,
  };
  /** Ids that became pending in this apply (the hand-off effect). */
  private handOffIds: number[] | undefined = undefined;
  /** How late each message expired in this apply was, ms (the `expired` effect). */
  private overdue: number[] | undefined = undefined;

  /**
   * `config` is the configuration until the log says otherwise. The actor makes a fresh group's
   * first entry a `setConfig`, so replays never depend on the config a replica was built with.
   */
  constructor(config: QueueConfig = DEFAULT_QUEUE_CONFIG, options: QueueMachineOptions = {}) {
    this.config = config;
    this.pendingLimits = options.pendingLimits ?? DEFAULT_PENDING_LIMITS;
    this.dedupeLimits = options.dedupeLimits ?? DEFAULT_DEDUPE_LIMITS;
    this.pending = new PendingDeadLetters(this.pendingLimits);
    this.dedupe = new DedupeWatermarks(this.dedupeLimits);
  }

  // ------------------------------------------------------------------------------ apply

  apply(command: QueueCommand, meta: EntryMeta): QueueApplyResult {
    this.appliedIndex = meta.index;
    this.now = meta.ts;
    if (this.lastUsed === undefined) this.lastUsed = meta.ts;
    // Never hand out or count a message that is already due, even if the timer has not fired.
    this.expireDue();
    let reply = REPLY_OK;
    switch (command.type) {
      case 'enqueue':
        reply = this.enqueue(command, meta.index);
        break;
      case 'consume':
        reply = this.consume(command, meta.index);
        break;
      case 'cancel':
        this.cancel(command.owner, command.tag);
        break;
      case 'settle':
        this.settle(command.owner, command.ids);
        break;
      case 'return':
        this.returnMessages(command.owner, command.ids);
        break;
      case 'discard':
        this.discard(command.owner, command.ids);
        break;
      case 'get':
        reply = this.basicGet(command.owner, command.noAck);
        break;
      case 'expire':
        this.expireQueue();
        break;
      case 'purge':
        reply = this.purge();
        break;
      case 'ownerDown':
        this.ownerDown(command.owner);
        break;
      case 'suspendOwner':
        this.setOwnerSuspended(command.owner, true);
        break;
      case 'resumeOwner':
        this.setOwnerSuspended(command.owner, false);
        break;
      case 'touch':
        this.lastUsed = this.now;
        break;
      case 'setConfig':
        this.setConfig(command.config);
        break;
      case 'deadLetterSettled':
        this.settleDeadLetters(command.ids);
        break;
      case 'remove':
        reply = this.removeReady(command.ids);
        break;
      case 'setDedupeWindow':
        // Decoded bytes are not trusted: a window out of bounds is ignored, alike everywhere.
        if (isDedupeWindow(command.maxIdsPerSource)) this.dedupe.setMaxIdsPerSource(command.maxIdsPerSource);
        break;
    }
    this.deliverReady();
    this.expireDue();
    this.enforceLengthLimits();
    return this.finish(reply);
  }

  /**
   * Order of the checks: the pending cap, then overflow, then the hand-off dedupe. A copy refused
   * for either cap is not recorded as seen, so its retry is enqueued once there is room; a
   * duplicate refused for a cap is merely confirmed later. A hand-off refused by
   * `reject-publish-dlx` is not dead-lettered here: it stays pending at its source, which retries
   * (back-pressure along the chain instead of a copy per attempt).
   */
  private enqueue(command: EnqueueCommand, index: number): QueueReply {
    // A publish re-sent after a lost answer, already taken: a duplicate even if the queue is full
    // now (it may be full of that very message). (A hand-off keeps the order below: see above.)
    const { publishId } = command;
    if (publishId !== undefined && this.dedupe.hasSeen(publishId.source, publishId.messageId)) {
      this.duplicatesDropped++;
      return REPLY_DUPLICATE;
    }
    // A publish that overtook an earlier one of its source (that one refused and being sent again,
    // or still on its way after a leader change): refused for now, sent again after it, so a
    // publisher's messages keep their order (see DedupeWatermarks.inOrder).
    if (
      publishId !== undefined &&
      command.ordered === true &&
      !this.dedupe.inOrder(publishId.source, publishId.messageId, publishId.horizon)
    ) {
      return REPLY_OUT_OF_ORDER;
    }
    if (this.pending.isFull()) return REPLY_BACKLOG;
    const { overflow } = this.config;
    const { handOff } = command;
    if (overflow !== 'drop-head' && this.wouldOverflow(command.size)) {
      if (overflow === 'reject-publish-dlx' && handOff === undefined) this.deadLetterRefused(command, index);
      return REPLY_REJECTED;
    }
    // A publish id shares the hand-off dedupe: its sources (a node's run) never name a queue.
    const id = handOff ?? command.publishId;
    if (id !== undefined && this.dedupe.accept(id.source, id.messageId, id.horizon) === 'duplicate') {
      this.duplicatesDropped++;
      return REPLY_DUPLICATE;
    }
    const entry = new MessageEntry(index, command.size, this.now, command.ttl, 0);
    this.entries.set(index, entry);
    this.makeReady(entry, Place.Ready);
    return REPLY_OK;
  }

  /**
   * Whether a message of `size` bytes would take the ready messages past a limit. A message that a
   * waiting consumer takes at once never becomes ready, so it is accepted (limits count ready
   * messages only; this matters for `x-max-length: 0`).
   */
  private wouldOverflow(size: number): boolean {
    const { maxLength, maxLengthBytes } = this.config;
    const readyCount = this.readyCount();
    if (readyCount === 0 && this.waiting.length > 0) return false;
    return (
      (maxLength !== undefined && readyCount + 1 > maxLength) ||
      (maxLengthBytes !== undefined && this.readyBytes + size > maxLengthBytes)
    );
  }

  private consume(command: ConsumeCommand, index: number): QueueReply {
    if (this.exclusiveConsumer !== undefined) return REPLY_LOCKED_BY_EXCLUSIVE;
    if (command.exclusive && this.consumerTotal > 0) return REPLY_LOCKED_IN_USE;
    const owner = this.ownerFor(command.owner);
    // A reused tag is a channel error the channel raises itself; keep the first consumer.
    if (owner.consumers.has(command.tag)) return REPLY_OK;
    const consumer = new Consumer(
      index,
      owner,
      command.tag,
      command.prefetch,
      command.noAck,
      command.exclusive,
    );
    owner.consumers.set(command.tag, consumer);
    this.consumerTotal++;
    if (command.exclusive) this.exclusiveConsumer = consumer;
    this.lastUsed = this.now;
    if (consumer.hasCredit() && !owner.suspended) this.addWaiting(consumer);
    return REPLY_OK;
  }

  private cancel(ownerId: OwnerId, tag: string): void {
    const owner = this.owners.get(ownerId);
    const consumer = owner?.consumers.get(tag);
    if (owner === undefined || consumer === undefined) return;
    this.detach(consumer);
    this.dropOwnerIfIdle(owner);
  }

  private settle(ownerId: OwnerId, ids: readonly number[]): void {
    const owner = this.owners.get(ownerId);
    if (owner === undefined) return;
    for (const id of ids) {
      const entry = this.unackedOf(owner, id);
      if (entry === undefined) continue;
      this.release(entry);
      this.entries.delete(id);
      this.pushRemoved(id);
    }
    this.dropOwnerIfIdle(owner);
  }

  private returnMessages(ownerId: OwnerId, ids: readonly number[]): void {
    const owner = this.owners.get(ownerId);
    if (owner === undefined) return;
    for (const id of ids) {
      const entry = this.unackedOf(owner, id);
      if (entry === undefined) continue;
      this.release(entry);
      this.requeue(entry);
    }
    this.dropOwnerIfIdle(owner);
  }

  private discard(ownerId: OwnerId, ids: readonly number[]): void {
    const owner = this.owners.get(ownerId);
    if (owner === undefined) return;
    for (const id of ids) {
      const entry = this.unackedOf(owner, id);
      if (entry === undefined) continue;
      this.release(entry);
      this.removeDead(entry, 'rejected');
    }
    this.dropOwnerIfIdle(owner);
  }

  private basicGet(ownerId: OwnerId, noAck: boolean): QueueReply {
    this.lastUsed = this.now;
    const entry = this.headReady();
    if (entry === undefined) return REPLY_EMPTY;
    this.takeReady(entry);
    if (noAck) {
      this.entries.delete(entry.id);
      this.pushRemoved(entry.id);
    } else {
      this.checkOut(entry, this.ownerFor(ownerId), undefined);
    }
    return {
      type: 'got',
      id: entry.id,
      redelivered: entry.deliveryCount > 0,
      deliveryCount: entry.deliveryCount,
      messageCount: this.readyCount(),
    };
  }

  /** Due messages were expired on entry; here only `x-expires` is left to check. */
  private expireQueue(): void {
    const deadline = this.queueDeadline();
    if (deadline !== undefined && deadline <= this.now) {
      this.queueExpired = true;
      this.pushEffect(EFFECT_QUEUE_EXPIRED);
    }
  }

  private purge(): QueueReply {
    const count = this.purgeList(this.returned) + this.purgeList(this.ready);
    this.expiry.clear();
    this.readyBytes = 0;
    return { type: 'purged', count };
  }

  /**
   * Remove ready messages by id (a redrive's copies were confirmed by their targets). Only ready
   * ones: an unacked message belongs to the consumer holding it, a pending one to its hand-off.
   * O(k) for k ids, plus O(log n) each for messages with an expiry.
   */
  private removeReady(ids: readonly number[]): QueueReply {
    const removed: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      const entry = this.entries.get(id);
      if (entry === undefined || (entry.place !== Place.Ready && entry.place !== Place.Returned)) continue;
      this.takeReady(entry);
      this.entries.delete(id);
      this.pushRemoved(id);
      removed.push(id);
    }
    return { type: 'removed', ids: removed };
  }

  private purgeList(list: LinkedQueue<MessageEntry>): number {
    const count = list.length;
    for (let entry = list.head; entry !== undefined; entry = entry.next) {
      this.entries.delete(entry.id);
      this.pushRemoved(entry.id);
    }
    list.clear();
    return count;
  }

  private ownerDown(ownerId: OwnerId): void {
    const owner = this.owners.get(ownerId);
    if (owner === undefined) return;
    for (const consumer of owner.consumers.values()) this.detach(consumer);
    if (owner.unacked.length > 0) {
      // Back in id order (the publish order), whatever order they were delivered in.
      const held: MessageEntry[] = [];
      for (let entry = owner.unacked.head; entry !== undefined; entry = entry.next) held.push(entry);
      held.sort(byId);
      for (const entry of held) {
        this.release(entry);
        this.requeue(entry);
      }
    }
    this.owners.delete(ownerId);
  }

  /**
   * Suspend or resume an owner's consumers: while suspended (its node is suspected by the leader)
   * they take no new messages, and keep what they hold (acks, returns and cancels still apply).
   * Unknown owners are ignored: a suspension is never recorded ahead of the owner's first consume.
   */
  private setOwnerSuspended(ownerId: OwnerId, suspended: boolean): void {
    const owner = this.owners.get(ownerId);
    if (owner === undefined || owner.suspended === suspended) return;
    owner.suspended = suspended;
    for (const consumer of owner.consumers.values()) {
      if (suspended && consumer.waiting) {
        this.waiting.remove(consumer);
        consumer.waiting = false;
      } else if (!suspended && !consumer.waiting && consumer.hasCredit()) {
        this.addWaiting(consumer);
      }
    }
  }

  private setConfig(config: QueueConfig): void {
    const previousTtl = this.config.messageTtl;
    this.config = config;
    // Length limits and the timer are re-evaluated at the end of every apply.
    if (config.messageTtl !== previousTtl) this.reindexExpiry();
    if (
      this.pending.count > 0 &&
      (config.deadLetterExchange === undefined || config.deadLetterStrategy !== 'at-least-once')
    ) {
      this.releasePending();
    }
  }

  /**
   * The config no longer hands off at-least-once: what is pending follows the new config at once —
   * published at-most-once (x-death time: this entry's ts), or dropped (counted) without a DLX.
   * RabbitMQ deletes them in both cases; Styx loses nothing it can still send. A change of DLX or
   * DLK alone keeps them pending: each attempt routes with the config in force.
   */
  private releasePending(): void {
    const released = [...this.pending.values()];
    for (const entry of released) {
      this.pending.settle(entry.id);
      this.pushRemoved(entry.id);
      if (this.config.deadLetterExchange === undefined) this.droppedNoDlx[entry.reason]++;
      else this.publishAtMostOnce(entry.id, entry.reason);
    }
  }

  private settleDeadLetters(ids: readonly number[]): void {
    for (let i = 0; i < ids.length; i++) {
      const entry = this.pending.settle(ids[i] as number);
      if (entry === undefined) continue;
      this.deadLettered[entry.reason]++;
      this.pushRemoved(entry.id);
    }
  }

  /** Recompute every ready message's expiry and rebuild the heap: O(n), on a TTL change only. */
  private reindexExpiry(): void {
    const expiring: MessageEntry[] = [];
    for (const list of [this.returned, this.ready]) {
      for (let entry = list.head; entry !== undefined; entry = entry.next) {
        entry.expiresAt = this.expiryOf(entry);
        if (entry.expiresAt !== Number.POSITIVE_INFINITY) expiring.push(entry);
      }
    }
    this.expiry.rebuild(expiring);
  }

  // ------------------------------------------------------------------------------ the apply's tail

  /** Hand ready messages to waiting consumers, round-robin, while both exist. */
  private deliverReady(): void {
    for (;;) {
      const consumer = this.waiting.head;
      if (consumer === undefined) return;
      const entry = this.headReady();
      if (entry === undefined) return;
      this.takeReady(entry);
      this.waiting.remove(consumer);
      consumer.waiting = false;
      this.pushEffect({
        type: 'deliver',
        owner: consumer.owner.id,
        tag: consumer.tag,
        id: entry.id,
        redelivered: entry.deliveryCount > 0,
        deliveryCount: entry.deliveryCount,
      });
      if (consumer.noAck) {
        this.entries.delete(entry.id);
        this.pushRemoved(entry.id);
      } else {
        this.checkOut(entry, consumer.owner, consumer);
      }
      // To the back of the line: the next message goes to the next consumer with credit.
      if (consumer.hasCredit()) this.addWaiting(consumer);
    }
  }

  /** Remove every ready message whose expiry is <= now: O(k log n) for k due messages. */
  private expireDue(): void {
    const { now } = this;
    for (
      let entry = this.expiry.peek();
      entry !== undefined && entry.expiresAt <= now;
      entry = this.expiry.peek()
    ) {
      this.takeReady(entry);
      this.noteOverdue(now - entry.expiresAt);
      this.removeDead(entry, 'expired');
    }
  }

  /** An expiring message was `ms` past its deadline at this entry's ts (the `expired` effect). */
  private noteOverdue(ms: number): void {
    if (this.overdue === undefined) this.overdue = [ms];
    else this.overdue.push(ms);
  }

  /** drop-head overflow: drop from the head until the ready messages are within both limits. */
  private enforceLengthLimits(): void {
    const { overflow, maxLength, maxLengthBytes } = this.config;
    if (overflow !== 'drop-head' || (maxLength === undefined && maxLengthBytes === undefined)) return;
    for (;;) {
      const over =
        (maxLength !== undefined && this.readyCount() > maxLength) ||
        (maxLengthBytes !== undefined && this.readyBytes > maxLengthBytes);
      if (!over) return;
      const entry = this.headReady();
      if (entry === undefined) return;
      this.takeReady(entry);
      this.removeDead(entry, 'maxlen');
    }
  }

  private finish(reply: QueueReply): QueueApplyResult {
    for (let i = 0; i < REMOVAL_REASONS.length; i++) {
      const reason = REMOVAL_REASONS[i] as RemovalReason;
      const ids = this.dead[reason];
      if (ids !== undefined) {
        this.dead[reason] = undefined;
        this.pushEffect({ type: 'deadLetter', ids, reason, deadLetteredAt: this.now });
      }
    }
    if (this.handOffIds !== undefined) {
      this.pushEffect({ type: 'deadLetterHandOff', ids: this.handOffIds });
      this.handOffIds = undefined;
    }
    if (this.overdue !== undefined) {
      this.pushEffect({ type: 'expired', overdueMs: this.overdue, at: this.now });
      this.overdue = undefined;
    }
    const deadline = this.nextDeadline();
    if (deadline !== this.armedDeadline) {
      this.armedDeadline = deadline;
      this.pushEffect(deadline === undefined ? EFFECT_CANCEL_TIMER : { type: 'timer', at: deadline });
    }
    const { effects, removed } = this;
    this.effects = undefined;
    this.removed = undefined;
    if (effects === undefined && removed === undefined && reply === REPLY_OK) return RESULT_OK;
    return { reply, effects: effects ?? NO_EFFECTS, removed: removed ?? NO_IDS };
  }

  // ------------------------------------------------------------------------------ helpers

  private pushEffect(effect: QueueEffect): void {
    if (this.effects === undefined) this.effects = [effect];
    else this.effects.push(effect);
  }

  private pushRemoved(id: number): void {
    if (this.removed === undefined) this.removed = [id];
    else this.removed.push(id);
  }

  /** The effective expiry of `entry` under the current config: enqueue ts + min of both TTLs. */
  private expiryOf(entry: MessageEntry): number {
    const queueTtl = this.config.messageTtl;
    const { ttl } = entry;
    const effective = queueTtl === undefined ? ttl : ttl === undefined ? queueTtl : Math.min(queueTtl, ttl);
    return effective === undefined ? Number.POSITIVE_INFINITY : entry.enqueuedAt + effective;
  }

  private headReady(): MessageEntry | undefined {
    return this.returned.head ?? this.ready.head;
  }

  /** Put `entry` (not in the queue's ready lists) at the tail of a ready list. */
  private makeReady(entry: MessageEntry, place: typeof Place.Ready | typeof Place.Returned): void {
    entry.place = place;
    if (place === Place.Returned) {
      // Derived from the log alone (the apply's index), so every replica keys it alike.
      if (this.returnKeyIndex !== this.appliedIndex) {
        this.returnKeyIndex = this.appliedIndex;
        this.returnKeyOrdinal = 0;
      }
      entry.returnIndex = this.returnKeyIndex;
      entry.returnOrdinal = this.returnKeyOrdinal++;
    }
    (place === Place.Returned ? this.returned : this.ready).push(entry);
    this.readyBytes += entry.size;
    const expiresAt = this.expiryOf(entry);
    entry.expiresAt = expiresAt;
    if (expiresAt !== Number.POSITIVE_INFINITY) this.expiry.push(entry);
  }

  /** Take a ready `entry` out of the ready lists and the expiry index. */
  private takeReady(entry: MessageEntry): void {
    (entry.place === Place.Returned ? this.returned : this.ready).remove(entry);
    this.expiry.remove(entry);
    this.readyBytes -= entry.size;
  }

  private checkOut(entry: MessageEntry, owner: Owner, consumer: Consumer | undefined): void {
    entry.place = Place.Unacked;
    entry.owner = owner;
    entry.consumer = consumer;
    owner.unacked.push(entry);
    this.unackedTotal++;
    if (consumer !== undefined) consumer.checkedOut++;
  }

  /** Take an unacked `entry` from its owner, giving its consumer the credit back. */
  private release(entry: MessageEntry): void {
    const { owner, consumer } = entry;
    owner?.unacked.remove(entry);
    this.unackedTotal--;
    entry.owner = undefined;
    entry.consumer = undefined;
    if (consumer !== undefined) {
      consumer.checkedOut--;
      if (consumer.live && !consumer.waiting && consumer.hasCredit() && !consumer.owner.suspended)
        this.addWaiting(consumer);
    }
  }

  /** An unacked message that came back: redelivered, or removed by the delivery limit or its TTL. */
  private requeue(entry: MessageEntry): void {
    entry.deliveryCount++;
    const limit = this.config.deliveryLimit;
    if (limit !== undefined && entry.deliveryCount > limit) {
      this.removeDead(entry, 'delivery_limit');
    } else if (this.expiryOf(entry) <= this.now) {
      // Only ready messages expire: an overdue one expires the moment it is back.
      this.noteOverdue(this.now - this.expiryOf(entry));
      this.removeDead(entry, 'expired');
    } else {
      this.makeReady(entry, Place.Returned);
    }
  }

  /** Forget `entry` (already out of every list) as removed without an ack, for `reason`. */
  private removeDead(entry: MessageEntry, reason: RemovalReason): void {
    this.entries.delete(entry.id);
    this.totals[reason]++;
    const { deadLetterExchange, deadLetterStrategy } = this.config;
    if (deadLetterExchange === undefined) {
      this.droppedNoDlx[reason]++;
      this.pushRemoved(entry.id);
    } else if (deadLetterStrategy === 'at-least-once') {
      // The body stays until the hand-off settles.
      this.addPending(entry.id, reason, entry.size);
    } else {
      this.pushRemoved(entry.id);
      this.publishAtMostOnce(entry.id, reason);
    }
  }

  /**
   * A publish refused by `reject-publish-dlx` overflow, dead-lettered with reason `maxlen` like a
   * removed message. At-least-once it is held pending under the refused entry's log index (never
   * the id of a queued message), its body stored under that index by the actor (see
   * `isPendingDeadLetter`); the publisher still gets a nack, as in RabbitMQ.
   */
  private deadLetterRefused(command: EnqueueCommand, index: number): void {
    this.totals.maxlen++;
    const { deadLetterExchange, deadLetterStrategy } = this.config;
    if (deadLetterExchange === undefined) {
      this.droppedNoDlx.maxlen++;
    } else if (deadLetterStrategy === 'at-least-once') {
      this.addPending(index, 'maxlen', command.size);
    } else {
      this.deadLettered.maxlen++;
      this.pushEffect({
        type: 'deadLetterRejected',
        index,
        reason: 'maxlen',
        message: command.message,
        deadLetteredAt: this.now,
      });
    }
  }

  private addPending(id: number, reason: RemovalReason, size: number): void {
    const entry: PendingDeadLetter = { id, reason, size, deadLetteredAt: this.now };
    this.pending.add(entry);
    if (this.handOffIds === undefined) this.handOffIds = [id];
    else this.handOffIds.push(id);
  }

  /** Queue `id` (already listed in `removed`) for this apply's at-most-once effect of `reason`. */
  private publishAtMostOnce(id: number, reason: RemovalReason): void {
    this.deadLettered[reason]++;
    const ids = this.dead[reason];
    if (ids === undefined) this.dead[reason] = [id];
    else ids.push(id);
  }

  private unackedOf(owner: Owner, id: number): MessageEntry | undefined {
    const entry = this.entries.get(id);
    return entry !== undefined && entry.place === Place.Unacked && entry.owner === owner ? entry : undefined;
  }

  private ownerFor(ownerId: OwnerId): Owner {
    let owner = this.owners.get(ownerId);
    if (owner === undefined) {
      owner = new Owner(ownerId);
      this.owners.set(ownerId, owner);
    }
    return owner;
  }

  private dropOwnerIfIdle(owner: Owner): void {
    if (owner.consumers.size === 0 && owner.unacked.length === 0) this.owners.delete(owner.id);
  }

  private addWaiting(consumer: Consumer): void {
    this.waiting.push(consumer);
    consumer.waiting = true;
  }

  /** Remove a consumer; its unacked messages stay with its owner (an ack after cancel is valid). */
  private detach(consumer: Consumer): void {
    consumer.owner.consumers.delete(consumer.tag);
    consumer.live = false;
    if (consumer.waiting) {
      this.waiting.remove(consumer);
      consumer.waiting = false;
    }
    if (this.exclusiveConsumer === consumer) this.exclusiveConsumer = undefined;
    this.consumerTotal--;
    // The queue is unused from now on: the x-expires clock starts here.
    if (this.consumerTotal === 0) this.lastUsed = this.now;
  }

  /** When `x-expires` deletes the queue if nothing uses it meanwhile; undefined = not counting. */
  private queueDeadline(): number | undefined {
    const { expires } = this.config;
    if (expires === undefined || this.queueExpired || this.consumerTotal > 0 || this.lastUsed === undefined) {
      return undefined;
    }
    return this.lastUsed + expires;
  }

  // ------------------------------------------------------------------------------ reads

  /** The earliest of the next message expiry and the `x-expires` deadline, ms since the epoch. */
  nextDeadline(): number | undefined {
    const head = this.expiry.peek();
    const messageDeadline = head === undefined ? undefined : head.expiresAt;
    const queueDeadline = this.queueDeadline();
    if (queueDeadline === undefined) return messageDeadline;
    return messageDeadline === undefined || queueDeadline < messageDeadline ? queueDeadline : messageDeadline;
  }

  counts(): QueueCounts {
    return {
      ready: this.readyCount(),
      unacked: this.unackedTotal,
      readyBytes: this.readyBytes,
      consumers: this.consumerTotal,
      deadLetterPending: this.pending.count,
      deadLetterPendingBytes: this.pending.bytes,
    };
  }

  readyCount(): number {
    return this.returned.length + this.ready.length;
  }

  consumerCount(): number {
    return this.consumerTotal;
  }

  unackedCount(): number {
    return this.unackedTotal;
  }

  /** Messages removed without an ack since the queue was created, per reason. */
  removalTotals(): RemovalTotals {
    return { ...this.totals };
  }

  /** The replicated dead-letter counters. */
  deadLetterTotals(): MachineDeadLetterTotals {
    return {
      deadLettered: { ...this.deadLettered },
      droppedNoDlx: { ...this.droppedNoDlx },
      duplicatesDropped: this.duplicatesDropped,
    };
  }

  /** A message waiting for its dead-letter hand-off, or undefined. */
  pendingDeadLetter(id: number): PendingDeadLetter | undefined {
    return this.pending.get(id);
  }

  /**
   * True when `id` waits for its hand-off. The actor asks after a refused enqueue: a message
   * `reject-publish-dlx` holds pending needs its body stored under the entry's index.
   */
  isPendingDeadLetter(id: number): boolean {
    return this.pending.has(id);
  }

  /** Every message waiting for its hand-off, in the order they became pending (a new leader resumes them). */
  pendingDeadLetters(): IterableIterator<PendingDeadLetter> {
    return this.pending.values();
  }

  /**
   * The lowest message id this queue may still dead-letter: the smallest id held, queued or
   * pending (undefined when it holds nothing). Every hand-off carries it as its dedupe horizon: the
   * promise that no smaller id will ever be sent again. It never decreases (ids leave, and new ones
   * are larger than any before), so a value read earlier is still a valid, weaker promise.
   *
   * `entries` is kept in id order (enqueues insert ascending ids, restore re-inserts sorted), so
   * its first key is the smallest; reaching it skips the Map slots deleted at its head since the
   * Map last compacted itself, up to O(n): callers read it at most once per batch, or cache it.
   */
  lowestLiveId(): number | undefined {
    const queued = this.entries.keys().next().value;
    const pending = this.pending.lowestId();
    if (queued === undefined) return pending;
    return pending === undefined || queued < pending ? queued : pending;
  }

  /**
   * The ready messages in the order consumers get them (those returned first, then the others by
   * id), for browsing: read only, and to be iterated without applying anything meanwhile.
   *
   * From a `position` (redrive's cursor): the returns FIFO is in increasing (returnIndex,
   * returnOrdinal) order and the main FIFO in id order, both only appended to, so "the messages
   * after this position" is exact whatever left meanwhile: nothing behind it is seen again and
   * nothing ahead of it is skipped. Messages returned after a cursor moved on to the main FIFO are
   * behind it. O(1) while the position's message is still in place, else a walk of its FIFO.
   *
   * From `after` (a message id: the inspector's paging): after that message while it is still
   * ready; when it left (consumed, expired) or is held unacked, at the first never-delivered
   * message above it — messages returned since are behind such a cursor.
   */
  *readyEntries(after: number | undefined, position?: BrowsePosition): IterableIterator<MessageEntry> {
    let entry: MessageEntry | undefined;
    if (position !== undefined) {
      entry = this.entryAfter(position);
    } else {
      const cursor = after === undefined ? undefined : this.entries.get(after);
      if (after === undefined) {
        entry = this.returned.head ?? this.ready.head;
      } else if (cursor !== undefined && (cursor.place === Place.Ready || cursor.place === Place.Returned)) {
        entry = cursor.next ?? (cursor.place === Place.Returned ? this.ready.head : undefined);
      } else {
        entry = this.ready.head;
        while (entry !== undefined && entry.id <= after) entry = entry.next;
      }
    }
    while (entry !== undefined) {
      const next = entry.next ?? (entry.place === Place.Returned ? this.ready.head : undefined);
      yield entry;
      entry = next;
    }
  }

  /** The first ready message after `position` in delivery order (see `readyEntries`). */
  private entryAfter(position: BrowsePosition): MessageEntry | undefined {
    const at = this.entries.get(position.id);
    if (position.list === 'ready') {
      if (at !== undefined && at.place === Place.Ready) return at.next;
      let entry = this.ready.head;
      while (entry !== undefined && entry.id <= position.id) entry = entry.next;
      return entry;
    }
    const { index, ordinal } = position;
    if (
      at !== undefined &&
      at.place === Place.Returned &&
      at.returnIndex === index &&
      at.returnOrdinal === ordinal
    )
      return at.next ?? this.ready.head;
    let entry = this.returned.head;
    while (
      entry !== undefined &&
      (entry.returnIndex < index || (entry.returnIndex === index && entry.returnOrdinal <= ordinal))
    )
      entry = entry.next;
    return entry ?? this.ready.head;
  }

  /** `readyEntries` with each message's position, as a browse reads them (message-browse.ts). */
  *browseEntries(after: number | undefined, position?: BrowsePosition): IterableIterator<BrowsableReady> {
    for (const entry of this.readyEntries(after, position)) {
      const at: BrowsePosition =
        entry.place === Place.Returned
          ? { list: 'returned', id: entry.id, index: entry.returnIndex, ordinal: entry.returnOrdinal }
          : { list: 'ready', id: entry.id };
      yield { entry, position: at };
    }
  }

  /**
   * Every message whose body the queue still needs: queued (ready or unacked), then pending a
   * dead-letter hand-off. O(n); for snapshot transfers.
   */
  *liveIds(): IterableIterator<number> {
    yield* this.entries.keys();
    for (const entry of this.pending.values()) yield entry.id;
  }

  /** Whether message `id` is live: queued (ready or unacked) or pending a dead-letter hand-off. */
  isLive(id: number): boolean {
    return this.entries.has(id) || this.pending.get(id) !== undefined;
  }

  /** The owner holding message `id` unacked, or undefined (ready, pending, or gone). */
  heldBy(id: number): OwnerId | undefined {
    return this.entries.get(id)?.owner?.id;
  }

  /** Hand-off ids remembered per source, as the log last set it (see `setDedupeWindow`). */
  dedupeWindow(): number {
    return this.dedupe.maxIdsPerSource;
  }

  /** The dedupe state, for tests and diagnostics. */
  dedupeState(): DedupeWatermarks {
    return this.dedupe;
  }

  /** `x-expires` has fired: the queue is to be deleted (re-announced by a new leader). */
  isQueueExpired(): boolean {
    return this.queueExpired;
  }

  /** The configuration in force. */
  currentConfig(): QueueConfig {
    return this.config;
  }

  /** The index of the last applied entry (0 = nothing applied, restored from no snapshot). */
  get lastAppliedIndex(): number {
    return this.appliedIndex;
  }

  /** Owners holding consumers or unacked messages, in the order they first appeared. */
  ownerIds(): OwnerId[] {
    return [...this.owners.keys()];
  }

  /** Whether `owner` holds consumers or unacked messages here. */
  hasOwner(owner: OwnerId): boolean {
    return this.owners.has(owner);
  }

  /** Whether `owner`'s consumers are suspended (see `suspendOwner`). */
  isOwnerSuspended(owner: OwnerId): boolean {
    return this.owners.get(owner)?.suspended ?? false;
  }

  /** Every attached consumer. */
  consumers(): ConsumerInfo[] {
    const result: ConsumerInfo[] = [];
    for (const owner of this.owners.values()) {
      for (const c of owner.consumers.values()) {
        result.push({
          owner: owner.id,
          tag: c.tag,
          prefetch: c.prefetch,
          noAck: c.noAck,
          exclusive: c.exclusive,
          unacked: c.checkedOut,
        });
      }
    }
    return result;
  }

  /** `owner`'s unacked messages that went through a still-attached consumer, in delivery order. */
  outstandingDeliveries(ownerId: OwnerId): OutstandingDelivery[] {
    const result: OutstandingDelivery[] = [];
    const owner = this.owners.get(ownerId);
    if (owner === undefined) return result;
    for (let entry = owner.unacked.head; entry !== undefined; entry = entry.next) {
      const { consumer } = entry;
      if (consumer === undefined || !consumer.live) continue;
      result.push({ tag: consumer.tag, id: entry.id, deliveryCount: entry.deliveryCount });
    }
    return result;
  }

  /**
   * The counts recomputed by walking the whole state, with its structural invariants checked;
   * O(n). For tests and diagnostics: must always equal `counts()`.
   */
  recount(): QueueCounts {
    let ready = 0;
    let readyBytes = 0;
    let expiring = 0;
    for (const list of [this.returned, this.ready]) {
      for (let entry = list.head; entry !== undefined; entry = entry.next) {
        ready++;
        readyBytes += entry.size;
        if (entry.heapIndex >= 0) expiring++;
        if (this.entries.get(entry.id) !== entry) throw new Error(`ready message ${entry.id} not indexed`);
      }
    }
    if (expiring !== this.expiry.size) throw new Error('expiry index out of step with ready messages');
    let unacked = 0;
    let consumers = 0;
    for (const owner of this.owners.values()) {
      if (owner.consumers.size === 0 && owner.unacked.length === 0)
        throw new Error(`idle owner ${owner.id} kept`);
      consumers += owner.consumers.size;
      for (let entry = owner.unacked.head; entry !== undefined; entry = entry.next) {
        unacked++;
        if (entry.owner !== owner || entry.place !== Place.Unacked)
          throw new Error(`unacked ${entry.id} misfiled`);
      }
      for (const consumer of owner.consumers.values()) {
        if (consumer.waiting !== (consumer.hasCredit() && !owner.suspended))
          throw new Error(`consumer ${consumer.tag} credit out of step`);
      }
    }
    if (ready + unacked !== this.entries.size) throw new Error('message index out of step');
    if (ready > 0 && this.waiting.length > 0) throw new Error('ready messages left while a consumer waits');
    let deadLetterPending = 0;
    let deadLetterPendingBytes = 0;
    for (const entry of this.pending.values()) {
      deadLetterPending++;
      deadLetterPendingBytes += entry.size;
      if (this.entries.has(entry.id)) throw new Error(`pending message ${entry.id} also queued`);
    }
    let previous = -1;
    for (const id of this.entries.keys()) {
      if (id <= previous) throw new Error('message index out of id order');
      previous = id;
    }
    return { ready, unacked, readyBytes, consumers, deadLetterPending, deadLetterPendingBytes };
  }

  // ------------------------------------------------------------------------------ snapshots

  /**
   * The state as deterministic bytes (version 1), metadata only. Layout: version, config,
   * lastUsed, armedDeadline, queueExpired, removal totals, then per owner its consumers and
   * unacked messages (in order), the waiting consumers (round-robin order), the returned and
   * ready messages (in order). Derived state (counts, expiry index, credit) is rebuilt on restore.
   */
  snapshot(): Uint8Array {
    const w = new ByteWriter();
    const suspended: OwnerId[] = [];
    for (const owner of this.owners.values()) if (owner.suspended) suspended.push(owner.id);
    const windowed = this.dedupe.maxIdsPerSource !== this.dedupeLimits.maxIdsPerSource;
    const keyed = this.returned.length > 0 || windowed;
    w.u8(
      windowed
        ? SNAPSHOT_VERSION_5
        : keyed
          ? SNAPSHOT_VERSION_4
          : suspended.length > 0
            ? SNAPSHOT_VERSION_3
            : SNAPSHOT_VERSION,
    );
    writeConfig(w, this.config);
    w.optF64(this.lastUsed);
    w.optF64(this.armedDeadline);
    w.bool(this.queueExpired);
    for (const reason of REMOVAL_REASONS) w.varint(this.totals[reason]);
    w.varint(this.owners.size);
    for (const owner of this.owners.values()) {
      w.string(owner.id);
      w.varint(owner.consumers.size);
      for (const consumer of owner.consumers.values()) {
        w.varint(consumer.seq);
        w.string(consumer.tag);
        w.varint(consumer.prefetch);
        w.bool(consumer.noAck);
        w.bool(consumer.exclusive);
      }
      w.varint(owner.unacked.length);
      for (let entry = owner.unacked.head; entry !== undefined; entry = entry.next) {
        writeEntry(w, entry);
        // A cancelled consumer no longer matters (its credit is moot): written as none.
        const { consumer } = entry;
        w.varint(consumer?.live ? consumer.seq : 0);
      }
    }
    w.varint(this.waiting.length);
    for (let consumer = this.waiting.head; consumer !== undefined; consumer = consumer.next)
      w.varint(consumer.seq);
    for (const list of [this.returned, this.ready]) {
      w.varint(list.length);
      for (let entry = list.head; entry !== undefined; entry = entry.next) writeEntry(w, entry);
    }
    this.writeDeadLetterState(w);
    if (suspended.length > 0 || keyed) {
      w.varint(suspended.length);
      for (const id of suspended) w.string(id);
    }
    if (keyed) {
      w.varint(this.returnKeyIndex);
      w.varint(this.returnKeyOrdinal);
      for (let entry = this.returned.head; entry !== undefined; entry = entry.next) {
        w.varint(entry.returnIndex);
        w.varint(entry.returnOrdinal);
      }
    }
    if (windowed) w.varint(this.dedupe.maxIdsPerSource);
    return w.finish();
  }

  /**
   * Version 2's tail: counters (dead-lettered, dropped without DLX, per reason; duplicates), the
   * pending messages in order (id, reason, size, time), then the dedupe sources least recently used
   * first (source, watermark + 1, ids above it ascending).
   */
  private writeDeadLetterState(w: ByteWriter): void {
    for (const reason of REMOVAL_REASONS) w.varint(this.deadLettered[reason]);
    for (const reason of REMOVAL_REASONS) w.varint(this.droppedNoDlx[reason]);
    w.varint(this.duplicatesDropped);
    w.varint(this.pending.count);
    for (const entry of this.pending.values()) {
      w.varint(entry.id);
      w.u8(indexIn(REMOVAL_REASONS, entry.reason));
      w.varint(entry.size);
      w.f64(entry.deadLetteredAt);
    }
    const { sources } = this.dedupe.toSnapshot();
    w.varint(sources.length);
    for (const source of sources) {
      w.string(source.source);
      w.varint(source.watermark + 1);
      w.varint(source.above.length);
      for (const id of source.above) w.varint(id);
    }
  }

  /** `window`: the dedupe window to rebuild the sources under (see `restore`). */
  private readDeadLetterState(r: ByteReader, window: number): void {
    for (const reason of REMOVAL_REASONS) this.deadLettered[reason] = r.varint();
    for (const reason of REMOVAL_REASONS) this.droppedNoDlx[reason] = r.varint();
    this.duplicatesDropped = r.varint();
    const pendingCount = r.varint();
    for (let i = 0; i < pendingCount; i++) {
      const id = r.varint();
      const reason = valueAt(REMOVAL_REASONS, r.u8());
      const entry: PendingDeadLetter = { id, reason, size: r.varint(), deadLetteredAt: r.f64() };
      if (this.pending.has(id) || this.entries.has(id)) throw new QueueSnapshotError(`pending ${id} twice`);
      try {
        this.pending.add(entry);
      } catch (err) {
        throw new QueueSnapshotError(`pending ${id}: ${(err as Error).message}`);
      }
    }
    const sourceCount = r.varint();
    const sources: { source: string; watermark: number; above: number[] }[] = [];
    for (let i = 0; i < sourceCount; i++) {
      const source = r.string();
      const watermark = r.varint() - 1;
      const aboveCount = r.varint();
      if (aboveCount > r.remaining) throw new QueueSnapshotError(`dedupe id count ${aboveCount}`);
      const above: number[] = new Array(aboveCount);
      for (let j = 0; j < aboveCount; j++) above[j] = r.varint();
      sources.push({ source, watermark, above });
    }
    try {
      this.dedupe = DedupeWatermarks.fromSnapshot(
        { version: 1, sources },
        { ...this.dedupeLimits, maxIdsPerSource: window },
      );
    } catch (err) {
      throw new QueueSnapshotError(`dedupe state: ${(err as Error).message}`);
    }
  }

  restore(snapshot: Uint8Array, meta: EntryMeta): void {
    const r = new ByteReader(snapshot);
    const version = r.u8();
    if (
      version !== SNAPSHOT_VERSION &&
      version !== SNAPSHOT_VERSION_1 &&
      version !== SNAPSHOT_VERSION_3 &&
      version !== SNAPSHOT_VERSION_4 &&
      version !== SNAPSHOT_VERSION_5
    ) {
      throw new QueueSnapshotError(`unknown version ${version}`);
    }
    this.reset();
    this.config = readConfig(r);
    this.lastUsed = r.optF64();
    this.armedDeadline = r.optF64();
    this.queueExpired = r.bool();
    for (const reason of REMOVAL_REASONS) this.totals[reason] = r.varint();
    const bySeq = new Map<number, Consumer>();
    const ownerCount = r.varint();
    for (let i = 0; i < ownerCount; i++) {
      const owner = new Owner(r.string());
      if (this.owners.has(owner.id)) throw new QueueSnapshotError(`owner ${owner.id} twice`);
      this.owners.set(owner.id, owner);
      const consumerCount = r.varint();
      for (let j = 0; j < consumerCount; j++) {
        const seq = r.varint();
        const tag = r.string();
        const consumer = new Consumer(seq, owner, tag, r.varint(), r.bool(), r.bool());
        if (bySeq.has(seq) || owner.consumers.has(tag)) throw new QueueSnapshotError(`consumer ${seq} twice`);
        bySeq.set(seq, consumer);
        owner.consumers.set(tag, consumer);
        this.consumerTotal++;
        if (consumer.exclusive) this.exclusiveConsumer = consumer;
      }
      const unackedCount = r.varint();
      for (let j = 0; j < unackedCount; j++) {
        const entry = this.readNewEntry(r);
        const seq = r.varint();
        const consumer = seq === 0 ? undefined : bySeq.get(seq);
        if (seq !== 0 && consumer?.owner !== owner) throw new QueueSnapshotError(`unknown consumer ${seq}`);
        this.checkOut(entry, owner, consumer);
      }
    }
    const waitingCount = r.varint();
    for (let i = 0; i < waitingCount; i++) {
      const consumer = bySeq.get(r.varint());
      if (consumer === undefined || consumer.waiting || !consumer.hasCredit()) {
        throw new QueueSnapshotError('bad waiting consumer');
      }
      this.addWaiting(consumer);
    }
    for (const place of [Place.Returned, Place.Ready] as const) {
      const count = r.varint();
      for (let i = 0; i < count; i++) this.makeReady(this.readNewEntry(r), place);
    }
    // Entries were read by place; `lowestLiveId` needs them in id order.
    const inIdOrder = [...this.entries.values()].sort(byId);
    this.entries.clear();
    for (const entry of inIdOrder) this.entries.set(entry.id, entry);
    // Version 5's window comes last: its sources are read under the largest window any log may set
    // (none was written with more ids than its own window), then cut to the one read.
    const windowed = version === SNAPSHOT_VERSION_5;
    if (version !== SNAPSHOT_VERSION_1)
      this.readDeadLetterState(r, windowed ? MAX_DEDUPE_WINDOW : this.dedupeLimits.maxIdsPerSource);
    if (version === SNAPSHOT_VERSION_3 || version === SNAPSHOT_VERSION_4 || windowed)
      this.readSuspendedOwners(r);
    if (version === SNAPSHOT_VERSION_4 || windowed) this.readReturnKeys(r);
    else this.keyRestoredReturns();
    if (windowed) {
      const window = r.varint();
      if (!isDedupeWindow(window)) throw new QueueSnapshotError(`dedupe window ${window}`);
      this.dedupe.setMaxIdsPerSource(window);
    }
    r.end();
    this.appliedIndex = meta.index;
  }

  /**
   * Version 3's tail: the suspended owners. Their consumers were written out of the waiting list
   * (a waiting consumer of a suspended owner is a corrupt snapshot).
   */
  private readSuspendedOwners(r: ByteReader): void {
    const count = r.varint();
    for (let i = 0; i < count; i++) {
      const owner = this.owners.get(r.string());
      if (owner === undefined || owner.suspended) throw new QueueSnapshotError('bad suspended owner');
      for (const consumer of owner.consumers.values())
        if (consumer.waiting) throw new QueueSnapshotError('waiting consumer of a suspended owner');
      owner.suspended = true;
    }
  }

  /** Version 4's tail: the last return key given, then each returned message's key, in FIFO order. */
  private readReturnKeys(r: ByteReader): void {
    this.returnKeyIndex = r.varint();
    this.returnKeyOrdinal = r.varint();
    let previous: MessageEntry | undefined;
    for (let entry = this.returned.head; entry !== undefined; entry = entry.next) {
      entry.returnIndex = r.varint();
      entry.returnOrdinal = r.varint();
      if (
        previous !== undefined &&
        (entry.returnIndex < previous.returnIndex ||
          (entry.returnIndex === previous.returnIndex && entry.returnOrdinal <= previous.returnOrdinal))
      )
        throw new QueueSnapshotError('return keys out of order');
      previous = entry;
    }
  }

  /**
   * A snapshot from before return keys (version <= 3): its returned messages are keyed (0, rank).
   * Every later return has a higher apply index, so the order holds; a replica that restored such a
   * snapshot at another index ranks those older returns from another start (see the README's
   * redrive section: only a redrive across the upgrade, on a leader change, is affected).
   */
  private keyRestoredReturns(): void {
    let ordinal = 0;
    for (let entry = this.returned.head; entry !== undefined; entry = entry.next) {
      entry.returnIndex = 0;
      entry.returnOrdinal = ordinal++;
    }
    this.returnKeyIndex = 0;
    this.returnKeyOrdinal = ordinal;
  }

  private readNewEntry(r: ByteReader): MessageEntry {
    const entry = new MessageEntry(r.varint(), r.varint(), r.f64(), r.optF64(), r.varint());
    if (this.entries.has(entry.id)) throw new QueueSnapshotError(`message ${entry.id} twice`);
    this.entries.set(entry.id, entry);
    return entry;
  }

  private reset(): void {
    this.entries.clear();
    this.returned.clear();
    this.ready.clear();
    this.expiry.clear();
    this.owners.clear();
    this.waiting.clear();
    this.consumerTotal = 0;
    this.exclusiveConsumer = undefined;
    this.readyBytes = 0;
    this.unackedTotal = 0;
    for (const reason of REMOVAL_REASONS) {
      this.deadLettered[reason] = 0;
      this.droppedNoDlx[reason] = 0;
    }
    this.duplicatesDropped = 0;
    this.pending = new PendingDeadLetters(this.pendingLimits);
    this.dedupe = new DedupeWatermarks(this.dedupeLimits);
    this.returnKeyIndex = 0;
    this.returnKeyOrdinal = 0;
  }
}

function zeroTotals(): Record<RemovalReason, number> {
  return { rejected: 0, delivery_limit: 0, expired: 0, maxlen: 0 };
}

function byId(a: MessageEntry, b: MessageEntry): number {
  return a.id - b.id;
}

function writeEntry(w: ByteWriter, entry: MessageEntry): void {
  w.varint(entry.id);
  w.varint(entry.size);
  w.f64(entry.enqueuedAt);
  w.optF64(entry.ttl);
  w.varint(entry.deliveryCount);
}

// Config numbers are written as float64: they are validated upstream, but a snapshot must never
// fail or round because a limit was not an integer.
function writeConfig(w: ByteWriter, config: QueueConfig): void {
  w.optF64(config.messageTtl);
  w.optF64(config.expires);
  w.optF64(config.maxLength);
  w.optF64(config.maxLengthBytes);
  w.u8(indexIn(OVERFLOW_MODES, config.overflow));
  w.optF64(config.deliveryLimit);
  w.optString(config.deadLetterExchange);
  w.optString(config.deadLetterRoutingKey);
  w.u8(indexIn(DEAD_LETTER_STRATEGIES, config.deadLetterStrategy));
}

function readConfig(r: ByteReader): QueueConfig {
  return {
    messageTtl: r.optF64(),
    expires: r.optF64(),
    maxLength: r.optF64(),
    maxLengthBytes: r.optF64(),
    overflow: valueAt(OVERFLOW_MODES, r.u8()),
    deliveryLimit: r.optF64(),
    deadLetterExchange: r.optString(),
    deadLetterRoutingKey: r.optString(),
    deadLetterStrategy: valueAt(DEAD_LETTER_STRATEGIES, r.u8()),
  };
}

function indexIn<T>(values: readonly T[], value: T): number {
  const index = values.indexOf(value);
  if (index < 0) throw new RangeError(`unknown queue config value ${String(value)}`);
  return index;
}

function valueAt<T>(values: readonly T[], index: number): T {
  const value = values[index];
  if (value === undefined) throw new QueueSnapshotError(`unknown enum index ${index}`);
  return value;
}
