/**
 * The queue state machine's vocabulary: its configuration, commands, replies and effects.
 *
 * A queue is an actor running the pure `QueueMachine` on a `ReplicatedLog`. Commands are proposed
 * by the leader's actor, committed, then applied on every replica. `apply` returns a reply (which
 * resolves the proposer's promise on the leader), effects (executed by the leader only; each must
 * be idempotent) and the ids of messages that left the queue for good (their bodies are deleted
 * from the body store on every replica).
 */
import type { BasicProperties } from '@styx/client/wire';
import type { HandOffId } from '@styx/dlx';

/** Overflow behaviour when a length limit is reached (RabbitMQ's `x-overflow`). */
export type OverflowMode = 'drop-head' | 'reject-publish' | 'reject-publish-dlx';

/** The effective queue configuration: declared arguments merged with the matching policy. */
export interface QueueConfig {
  /** `x-message-ttl`, ms; undefined = no queue-wide TTL. */
  readonly messageTtl: number | undefined;
  /** `x-expires`, ms of disuse after which the queue is deleted; undefined = never. */
  readonly expires: number | undefined;
  /** `x-max-length`: ready messages. */
  readonly maxLength: number | undefined;
  /** `x-max-length-bytes`: body bytes of ready messages. */
  readonly maxLengthBytes: number | undefined;
  readonly overflow: OverflowMode;
  /** `x-delivery-limit`; undefined = unlimited. */
  readonly deliveryLimit: number | undefined;
  /** `x-dead-letter-exchange`; undefined = no DLX ('' is the default exchange, a valid DLX). */
  readonly deadLetterExchange: string | undefined;
  /** `x-dead-letter-routing-key`. */
  readonly deadLetterRoutingKey: string | undefined;
  readonly deadLetterStrategy: 'at-most-once' | 'at-least-once';
}

export const DEFAULT_QUEUE_CONFIG: QueueConfig = {
  messageTtl: undefined,
  expires: undefined,
  maxLength: undefined,
  maxLengthBytes: undefined,
  overflow: 'drop-head',
  deliveryLimit: undefined,
  deadLetterExchange: undefined,
  deadLetterRoutingKey: undefined,
  deadLetterStrategy: 'at-most-once',
};

/**
 * A message as published and routed: what the body store keeps for each queued message and what a
 * delivery is built from. The routing keys it was published with are `routingKey` plus the `CC`
 * header's keys (still in `properties.headers`) plus `bcc` (removed from the headers at publish).
 */
export interface StoredMessage {
  readonly exchange: string;
  readonly routingKey: string;
  readonly properties: BasicProperties;
  readonly body: Uint8Array;
  /** BCC routing keys, kept for dead-lettering without a DLK; never shown to consumers. */
  readonly bcc: readonly string[] | undefined;
}

/**
 * Who holds checked-out messages: a channel, as `${connectionId}/${channelNumber}`. Unacked
 * messages belong to the channel (an ack after basic.cancel is valid), consumers are tags in it.
 */
export type OwnerId = string;

export type QueueCommand =
  /**
   * A published message. `ttl` is the per-message `expiration` in ms (already validated).
   * `handOff` is set on a dead-lettered copy sent at-least-once by another queue: its stable id,
   * by which this queue recognises (and drops) the same copy sent again after a lost confirm.
   * `publishId` is set instead on a publish a node sends to the queue's leader: the same kind of id
   * (its source names the sending node's run), so a publish re-sent after a lost answer or a leader
   * change is dropped as a duplicate; unlike a hand-off, a refused publish is still dead-lettered
   * under `reject-publish-dlx`.
   */
  | {
      readonly type: 'enqueue';
      readonly size: number;
      readonly ttl: number | undefined;
      readonly message: StoredMessage;
      readonly handOff?: HandOffId | undefined;
      readonly publishId?: HandOffId | undefined;
      /**
       * With a `publishId` from a gap-free source (a queue handle numbering its publishes 1, 2, 3...):
       * taken only in order (DedupeWatermarks.inOrder), else answered `outOfOrder`. Entries from
       * before this existed have no flag, and replay as they were applied.
       */
      readonly ordered?: true | undefined;
    }
  /** Attach a consumer. `prefetch` 0 = unlimited. */
  | {
      readonly type: 'consume';
      readonly owner: OwnerId;
      readonly tag: string;
      readonly prefetch: number;
      readonly noAck: boolean;
      readonly exclusive: boolean;
    }
  | { readonly type: 'cancel'; readonly owner: OwnerId; readonly tag: string }
  /** Ack. */
  | { readonly type: 'settle'; readonly owner: OwnerId; readonly ids: readonly number[] }
  /** Nack/reject with requeue, or recover: back to the queue, redelivered, delivery count + 1. */
  | { readonly type: 'return'; readonly owner: OwnerId; readonly ids: readonly number[] }
  /** Nack/reject without requeue: removed (dead-lettered with reason `rejected` when a DLX is set). */
  | { readonly type: 'discard'; readonly owner: OwnerId; readonly ids: readonly number[] }
  /** basic.get: take the head message. With noAck it is removed at once. */
  | { readonly type: 'get'; readonly owner: OwnerId; readonly noAck: boolean }
  /** Remove ready messages whose expiry is <= meta.ts, and delete the queue if `x-expires` passed. */
  | { readonly type: 'expire' }
  /** Remove all ready messages. */
  | { readonly type: 'purge' }
  /** The owner (channel) is gone: its consumers are removed and its unacked messages returned. */
  | { readonly type: 'ownerDown'; readonly owner: OwnerId }
  /**
   * The owner's node is suspected (it stopped answering): its consumers take no new messages until
   * `resumeOwner`; what it holds stays its own, and its acks still count. Proposed by the leader.
   */
  | { readonly type: 'suspendOwner'; readonly owner: OwnerId }
  /** The owner's node answers again (the same process): its consumers take messages again. */
  | { readonly type: 'resumeOwner'; readonly owner: OwnerId }
  /** A declare, passive declare or other use that resets the `x-expires` clock. */
  | { readonly type: 'touch' }
  /** New effective configuration (argument or policy change). */
  | { readonly type: 'setConfig'; readonly config: QueueConfig }
  /**
   * Every target confirmed the dead-lettered copies of these pending messages (or a cycle dropped
   * them): forget them and delete their bodies. Ids not pending are ignored (idempotent).
   */
  | { readonly type: 'deadLetterSettled'; readonly ids: readonly number[] }
  /**
   * Remove these ready messages, by id, as if acked: no dead-lettering, bodies deleted (a redrive
   * moved their copies elsewhere). Ids that are not ready here (unknown, gone, held unacked by a
   * consumer, pending a hand-off) are left alone: the reply lists those actually removed.
   */
  | { readonly type: 'remove'; readonly ids: readonly number[] }
  /**
   * From this entry on, remember this many hand-off ids per source to drop duplicates (see
   * `@styx/dlx` DedupeWatermarks; every queue starts at 1,024). A replicated parameter, so every
   * replica dedupes alike at every index. Proposed by the leader only once the feature flag
   * `wide_dedupe_window` is enabled (a replica of an older build cannot decode it); a value outside
   * [1, MAX_DEDUPE_WINDOW] is ignored, alike on every replica.
   */
  | { readonly type: 'setDedupeWindow'; readonly maxIdsPerSource: number };

/** Why a message left the queue without being acked. */
export type RemovalReason = 'rejected' | 'expired' | 'maxlen' | 'delivery_limit';

export type QueueEffect =
  /** Send message `id` to consumer `tag` of `owner`. */
  | {
      readonly type: 'deliver';
      readonly owner: OwnerId;
      readonly tag: string;
      readonly id: number;
      readonly redelivered: boolean;
      readonly deliveryCount: number;
    }
  /**
   * At-most-once dead-lettering: publish copies of these removed messages to the DLX now, without
   * waiting for confirms. The ids' bodies are still in the body store while this effect runs;
   * `removed` lists them too, so they are deleted right after. `deadLetteredAt` is the committed
   * entry's ts (ms): the copies' x-death time.
   */
  | {
      readonly type: 'deadLetter';
      readonly ids: readonly number[];
      readonly reason: RemovalReason;
      readonly deadLetteredAt: number;
    }
  /**
   * At-most-once dead-lettering of a publish refused by `reject-publish-dlx` overflow (reason
   * `maxlen`; the publisher gets a nack). It never entered the queue: it has no body in the body
   * store, so the effect carries the message itself and nothing is listed in `removed`.
   * `index` is the log index of the refused enqueue (unique within the group).
   */
  | {
      readonly type: 'deadLetterRejected';
      readonly index: number;
      readonly reason: 'maxlen';
      readonly message: StoredMessage;
      readonly deadLetteredAt: number;
    }
  /**
   * At-least-once dead-lettering: these messages became pending (see `PendingDeadLetters`); the
   * leader hands each off to the DLX's queues, confirm-backed, then proposes `deadLetterSettled`.
   * Their bodies stay in the body store until then.
   */
  | { readonly type: 'deadLetterHandOff'; readonly ids: readonly number[] }
  /**
   * Timing only (metrics): messages this entry (stamped `at`, ms) expired, as how far past its
   * deadline each one was at `at`, ms — the delay between a message coming due and the entry that
   * removed it being proposed. What happens to the messages is told by the other effects.
   */
  | { readonly type: 'expired'; readonly overdueMs: readonly number[]; readonly at: number }
  /** Arm the queue's single timer for `at` (ms since the epoch), replacing any earlier one. */
  | { readonly type: 'timer'; readonly at: number }
  /** Disarm the queue's timer. */
  | { readonly type: 'cancelTimer' }
  /** The consumer was removed by the queue (e.g. queue deleted): tell the client (basic.cancel). */
  | { readonly type: 'consumerCancelled'; readonly owner: OwnerId; readonly tag: string }
  /** `x-expires` elapsed with the queue unused: the node deletes the queue. */
  | { readonly type: 'queueExpired' };

/**
 * Why an enqueue was refused (the publisher gets a nack):
 * - `maxlen`: `reject-publish` / `reject-publish-dlx` overflow;
 * - `dead-letter-backlog`: too many messages wait for their dead-letter hand-off (the pending cap):
 *   back-pressure, so a missing or unreachable DLX cannot make the queue grow without bound.
 */
export type RejectReason = 'maxlen' | 'dead-letter-backlog';

export type QueueReply =
  | { readonly type: 'ok' }
  /** enqueue refused: nothing was enqueued. */
  | { readonly type: 'rejected'; readonly reason: RejectReason }
  /**
   * enqueue of a hand-off this queue already has (same source and message id): nothing enqueued;
   * for the source it confirms the hand-off like `ok`.
   */
  | { readonly type: 'duplicate' }
  /**
   * enqueue of a publish that overtook an earlier publish of its source (same publish id source,
   * an id between its horizon and it not taken yet): nothing enqueued; the sender sends it again
   * after the earlier one (see DedupeWatermarks.inOrder). Never reaches a client.
   */
  | { readonly type: 'outOfOrder' }
  | {
      readonly type: 'got';
      readonly id: number;
      readonly redelivered: boolean;
      readonly deliveryCount: number;
      /** Ready messages left after this one. */
      readonly messageCount: number;
    }
  | { readonly type: 'empty' }
  | { readonly type: 'purged'; readonly count: number }
  /** remove: the ids that were ready and are gone now, in the order given. */
  | { readonly type: 'removed'; readonly ids: readonly number[] }
  /** consume refused: exclusive consumer present, or exclusive requested while others consume. */
  | { readonly type: 'locked'; readonly text: string };

export interface QueueApplyResult {
  readonly reply: QueueReply;
  readonly effects: readonly QueueEffect[];
  /** Message ids that left the queue for good: delete their bodies (every replica). */
  readonly removed: readonly number[];
}

/** Messages that left the queue without an ack, per reason, since the queue was created. */
export type RemovalTotals = Readonly<Record<RemovalReason, number>>;

/**
 * What became of messages removed without an ack, per reason, since the queue was created. The
 * first two are replicated state (every replica agrees, they survive restarts); the last two are
 * counted by the leader that routed the copies, since it started leading.
 */
export interface DeadLetterTotals {
  /**
   * Left through dead-lettering: at-most-once, when the copies were published; at-least-once, when
   * the hand-off settled (every target confirmed, or a cycle dropped the copy).
   */
  readonly deadLettered: RemovalTotals;
  /** Dropped because the queue had no dead-letter exchange. */
  readonly droppedNoDlx: RemovalTotals;
  /** Copies not delivered to a target queue because they would close a dead-letter cycle (per target). */
  readonly droppedCycle: RemovalTotals;
  /**
   * At-most-once copies lost: the DLX was missing or routed nowhere (per message), or a target
   * refused the copy (per target).
   */
  readonly droppedAtMostOnce: RemovalTotals;
}

/** Counts kept incrementally by the machine, for declare-ok, get-ok and management. */
export interface QueueCounts {
  readonly ready: number;
  readonly unacked: number;
  readonly readyBytes: number;
  readonly consumers: number;
  /** Messages waiting for their at-least-once dead-letter hand-off (neither ready nor unacked). */
  readonly deadLetterPending: number;
  /** Body bytes of those messages. */
  readonly deadLetterPendingBytes: number;
}
