/**
 * The dead-lettered copy of a message: what a queue publishes to its dead-letter exchange (DLX).
 *
 * Rules (RabbitMQ's guide, "Routing Dead-Lettered Messages" and "Dead-Lettered Effects on Messages",
 * with the types and order of RabbitMQ 3.10's output):
 * - the exchange becomes the DLX;
 * - with a dead-letter routing key (DLK) the copy is routed on that key alone and the `CC` header is
 *   removed; without one it is routed on all the keys the message was published with: its routing
 *   key, its `CC` keys and its `BCC` keys (which stay hidden beside the message, as at publish);
 * - the `BCC` header is always removed;
 * - `expiration` is removed, so the copy does not expire again wherever it goes; when the message
 *   had one, the new `x-death` entry records it as `original-expiration` — whatever the reason
 *   (RabbitMQ records it on a rejection too: see the fixture). A TTL that came from the queue's
 *   `x-message-ttl` alone leaves no `original-expiration`;
 * - `x-death` gets one more event (see `x-death.ts`), recording the keys the message was routed on
 *   into the queue it died in (routing key + CC, never BCC) and the exchange it was published to;
 * - `x-first-death-reason`, `-queue` and `-exchange` are added by the first dead-lettering (the
 *   message has no `x-death` yet), each only if absent; once present they are never changed;
 * - the headers table is sorted by key, as RabbitMQ's `rabbit_misc:set_table_value` leaves it;
 * - the body and every other property are unchanged (shared, not copied).
 *
 * Pure and deterministic: the same input gives an equal copy. The caller takes `timeSeconds` (and the
 * message) from the committed log entry that dead-lettered the message, never from a clock at
 * hand-off time, so a retried hand-off sends an identical copy.
 */
import type { BasicProperties, FieldEntry, FieldValue } from '@styx/client/wire';
import { BASIC_PROPERTY_NAMES } from '@styx/client/wire';
import type { DeadLetterReason } from './dead-letter-reason.ts';
import { isDeadLetterReason } from './dead-letter-reason.ts';
import { DeadLetterInputError } from './errors.ts';
import { sortEntriesByKey } from './key-order.ts';
import { BCC_HEADER, CC_HEADER, routingKeysOfHeader } from './routing-headers.ts';
import {
  nextXDeath,
  X_DEATH_HEADER,
  X_FIRST_DEATH_EXCHANGE_HEADER,
  X_FIRST_DEATH_QUEUE_HEADER,
  X_FIRST_DEATH_REASON_HEADER,
} from './x-death.ts';

/**
 * A message as a queue holds it (structurally the node's `StoredMessage`). The keys it was published
 * with are `routingKey`, the `CC` header's keys (still in the headers) and `bcc` (removed from the
 * headers when it was published).
 */
export interface DeadLetterMessage {
  /** The exchange it was published to ('' = the default exchange). */
  readonly exchange: string;
  readonly routingKey: string;
  readonly properties: BasicProperties;
  readonly body: Uint8Array;
  /** BCC routing keys, kept beside the message; undefined when it had none. */
  readonly bcc: readonly string[] | undefined;
}

/** What to dead-letter, from where, to where, and when. */
export interface DeadLetterInput {
  readonly message: DeadLetterMessage;
  /** The queue the message dies in. */
  readonly queue: string;
  readonly reason: DeadLetterReason;
  /** The queue's dead-letter exchange ('' = the default exchange). */
  readonly dlx: string;
  /** The queue's dead-letter routing key; undefined = route on the message's own keys. */
  readonly dlk: string | undefined;
  /** When it was dead-lettered: the committed entry's time, in whole seconds since the epoch. */
  readonly timeSeconds: number;
}

/**
 * The copy to route through `exchange` on `routingKeys`. It is itself a {@link DeadLetterMessage}
 * (a storable message for the target queues), so a later dead-lettering starts from it.
 */
export interface DeadLetteredCopy extends DeadLetterMessage {
  /** The DLX. */
  readonly exchange: string;
  /** The DLK when set, otherwise the message's routing key. */
  readonly routingKey: string;
  /**
   * Every key to route on: `[dlk]`, or the routing key then the CC keys then the BCC keys. This is
   * the complete list: the router must not derive more keys from the copy's `CC` header.
   */
  readonly routingKeys: readonly string[];
  /** Undefined with a DLK; the message's BCC keys without one. */
  readonly bcc: readonly string[] | undefined;
}

const KEPT_PROPERTIES = BASIC_PROPERTY_NAMES.filter((name) => name !== 'expiration' && name !== 'headers');

/** Builds the dead-lettered copy of `input.message`. Throws DeadLetterInputError on bad input. */
export function deadLetterCopy(input: DeadLetterInput): DeadLetteredCopy {
  const { message, queue, reason, dlx, dlk, timeSeconds } = input;
  if (!Number.isSafeInteger(timeSeconds) || timeSeconds < 0) {
    throw new DeadLetterInputError(`timeSeconds must be a non-negative integer, got ${timeSeconds}`);
  }
  if (!isDeadLetterReason(reason)) {
    throw new DeadLetterInputError(`unknown dead-letter reason ${String(reason)}`);
  }

  const props = message.properties;
  const entries = props.headers?.entries ?? [];
  const useDlk = dlk !== undefined;

  // One pass over the headers: find x-death, the first CC and which x-first-death-* exist; keep
  // everything else. Every x-death entry is dropped here (the first one's value is the history).
  const kept: FieldEntry[] = [];
  let xDeath: FieldValue | undefined;
  let cc: FieldValue | undefined;
  let hasFirstReason = false;
  let hasFirstQueue = false;
  let hasFirstExchange = false;
  for (const entry of entries) {
    switch (entry.key) {
      case X_DEATH_HEADER:
        xDeath ??= entry.value;
        continue;
      case BCC_HEADER:
        continue;
      case CC_HEADER:
        cc ??= entry.value;
        if (useDlk) continue;
        break;
      case X_FIRST_DEATH_REASON_HEADER:
        hasFirstReason = true;
        break;
      case X_FIRST_DEATH_QUEUE_HEADER:
        hasFirstQueue = true;
        break;
      case X_FIRST_DEATH_EXCHANGE_HEADER:
        hasFirstExchange = true;
        break;
    }
    kept.push(entry);
  }

  const ccKeys = routingKeysOfHeader(cc);
  const publishedKeys = ccKeys.length === 0 ? [message.routingKey] : [message.routingKey, ...ccKeys];
  const originalExpiration = props.expiration ?? undefined;
  kept.push({
    key: X_DEATH_HEADER,
    value: nextXDeath(xDeath, {
      queue,
      reason,
      timeSeconds,
      exchange: message.exchange,
      routingKeys: publishedKeys,
      originalExpiration,
    }),
  });
  // Only the first dead-lettering (no x-death yet) knows the first death; one already present is
  // never changed. A message with a history but no x-first-death-* gets none invented.
  if (xDeath === undefined) {
    if (!hasFirstReason) kept.push({ key: X_FIRST_DEATH_REASON_HEADER, value: { longStr: reason } });
    if (!hasFirstQueue) kept.push({ key: X_FIRST_DEATH_QUEUE_HEADER, value: { longStr: queue } });
    if (!hasFirstExchange) {
      kept.push({ key: X_FIRST_DEATH_EXCHANGE_HEADER, value: { longStr: message.exchange } });
    }
  }
  sortEntriesByKey(kept);

  const properties: BasicProperties = { headers: { entries: kept } };
  const out = properties as Record<string, unknown>;
  for (const name of KEPT_PROPERTIES) {
    const value = props[name];
    if (value != null) out[name] = value;
  }

  return addressedCopy(message, dlx, dlk, publishedKeys, properties);
}

/**
 * The copy of `message` carrying `properties`, addressed to `dlx`: on `dlk` alone, or on the keys
 * it was published with (`publishedKeys`: its routing key and CC keys) and its BCC keys.
 */
export function addressedCopy(
  message: DeadLetterMessage,
  dlx: string,
  dlk: string | undefined,
  publishedKeys: readonly string[],
  properties: BasicProperties,
): DeadLetteredCopy {
  if (dlk !== undefined) {
    return {
      exchange: dlx,
      routingKey: dlk,
      routingKeys: [dlk],
      properties,
      body: message.body,
      bcc: undefined,
    };
  }
  const bcc = message.bcc !== undefined && message.bcc.length > 0 ? message.bcc : undefined;
  const routingKeys = bcc === undefined ? publishedKeys : [...publishedKeys, ...bcc];
  return { exchange: dlx, routingKey: message.routingKey, routingKeys, properties, body: message.body, bcc };
}
