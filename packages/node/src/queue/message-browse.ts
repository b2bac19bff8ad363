/**
 * Browsing a queue: reading its ready messages from the head, in the order consumers would get
 * them, without taking any (the dead-letter inspector, and redrive's selection). A pure function
 * of what the queue holds: the machine's ready entries and the body store's messages.
 *
 * Paging: a request starts at the head, or after a message id (`after`, the `next` of the previous
 * page: a cursor that stays right while messages ahead of it are consumed); it skips `offset`
 * selected messages, then returns up to `limit`. The scan is bounded (`MAX_BROWSE_SCAN` messages
 * looked at, `MAX_PAGE_BYTES` of messages returned, headers included: a publisher may send headers
 * as large as a frame) so a filter that selects little in a deep queue, or large messages, never
 * makes one request costly: a page cut short has a `next` cursor and
 * the caller asks again from there. `next` is undefined once the scan reached the tail.
 *
 * A page is a consistent read of the queue's state at one moment (it runs synchronously); pages
 * are not a snapshot of the whole queue: a message returned (nack with requeue) while paging goes
 * to the head and is not seen again by a cursor already past it.
 *
 * Redrive pages by `position` instead (each browsed message carries its own, and a page cut short
 * its `nextPosition`): a place in the delivery order that no removal can move, so a run that
 * removes what it moved neither skips nor repeats the returned messages (QueueMachine.readyEntries).
 */

import { measureStoredMessage } from '../storage/stored-message-codec.ts';
import type { MessageFilter } from './message-filter.ts';
import { matchesFilter, needsProperties } from './message-filter.ts';
import type { StoredMessage } from './types.ts';

/** Largest `limit`. */
export const MAX_BROWSE_LIMIT = 500;
/** `limit` when none is given. */
export const DEFAULT_BROWSE_LIMIT = 50;
/** Messages looked at by one request at most (selected or not). */
export const MAX_BROWSE_SCAN = 10_000;
/**
 * Bytes one page carries at most, its messages measured as stored (properties and headers, and the
 * part of each body carried); the first message is always carried, whatever its size.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;
/** Largest body preview the HTTP API asks for, bytes. */
export const MAX_PREVIEW_BYTES = 64 * 1024;
/** Body preview when none is asked for, bytes. */
export const DEFAULT_PREVIEW_BYTES = 4096;

/**
 * A stable place in a queue's delivery order: a message of the returns FIFO by its return key (the
 * log index that returned it and its rank in that apply), or of the main FIFO by its id. `id` is
 * the message's, to find it at once while it is still there.
 */
export type BrowsePosition =
  | { readonly list: 'returned'; readonly id: number; readonly index: number; readonly ordinal: number }
  | { readonly list: 'ready'; readonly id: number };

export interface BrowseRequest {
  /** Start after this message id; undefined: at the head. */
  readonly after?: number | undefined;
  /** Start after this position (redrive's cursor); when given, `after` is not used. */
  readonly position?: BrowsePosition | undefined;
  /** Selected messages to skip before the page starts (>= 0). */
  readonly offset: number;
  /** Messages in the page at most (1..MAX_BROWSE_LIMIT). */
  readonly limit: number;
  /** Bytes of each body to carry; the rest is cut (`BrowsedMessage.size` is the full size). */
  readonly bodyBytes: number;
  readonly filter: MessageFilter;
}

/** A ready message's metadata, as the queue machine keeps it. */
export interface BrowsableEntry {
  readonly id: number;
  /** Body size, bytes. */
  readonly size: number;
  /** ms since the epoch. */
  readonly enqueuedAt: number;
  /** Times it came back (nack/reject with requeue, recover, consumer gone). */
  readonly deliveryCount: number;
  /** Its per-message TTL (`expiration`), ms, if any. */
  readonly ttl: number | undefined;
  /** When it expires, ms since the epoch; Infinity = never. */
  readonly expiresAt: number;
}

/** A ready message as a browse source yields it: its metadata and its place in delivery order. */
export interface BrowsableReady {
  readonly entry: BrowsableEntry;
  readonly position: BrowsePosition;
}

export interface BrowsedMessage {
  readonly id: number;
  readonly enqueuedAt: number;
  readonly deliveryCount: number;
  /** Whether a consumer got it before (RabbitMQ's `redelivered`). */
  readonly redelivered: boolean;
  /** The full body size, bytes. */
  readonly size: number;
  /** When it expires, ms since the epoch, or undefined when it never does. */
  readonly expiresAt: number | undefined;
  /**
   * The message with its body cut to the request's `bodyBytes`; undefined when this replica lacks
   * the body (being repaired from another replica: see body-repair.ts).
   */
  readonly message: StoredMessage | undefined;
  /** Its place in delivery order (a `position` to go on after it); absent from a leader of an older build. */
  readonly position?: BrowsePosition | undefined;
}

export interface BrowsePage {
  readonly messages: readonly BrowsedMessage[];
  /** Ready messages in the queue when the page was read. */
  readonly ready: number;
  /** Messages looked at. */
  readonly scanned: number;
  /** The `after` of the next page; undefined when the scan reached the queue's tail. */
  readonly next: number | undefined;
  /** The `position` of the next page, with `next` (absent from a leader of an older build). */
  readonly nextPosition?: BrowsePosition | undefined;
  /** Of the request's `offset`, what the next page must still skip (the scan bound cut it short). */
  readonly offsetLeft: number;
  /** The queue's applied log index when the page was read (the state it shows). */
  readonly appliedIndex: number;
  /** The reader's clock, ms since the epoch (the `now` of the age criteria). */
  readonly readAt: number;
}

/** What a browse reads: the queue's state on the replica that answers. */
export interface BrowseSource {
  /** Ready messages in delivery order, starting after `after` or `position` (see QueueMachine.readyEntries). */
  readyEntries(after: number | undefined, position: BrowsePosition | undefined): Iterable<BrowsableReady>;
  readonly readyCount: number;
  readonly appliedIndex: number;
  /** The stored message of `id`, or undefined. */
  body(id: number): StoredMessage | undefined;
}

/** `message` with its body cut to `bytes` (the same object when it is short enough). */
function cut(message: StoredMessage, bytes: number): StoredMessage {
  if (message.body.byteLength <= bytes) return message;
  return { ...message, body: message.body.subarray(0, bytes) };
}

/** One page of the queue's ready messages (see the module comment). */
export function browseMessages(source: BrowseSource, request: BrowseRequest, now: number): BrowsePage {
  const { filter, limit, bodyBytes } = request;
  const readProperties = needsProperties(filter);
  let toSkip = request.offset;
  let scanned = 0;
  let pageBytes = 0;
  let last: BrowsableReady | undefined;
  let full = false;
  const messages: BrowsedMessage[] = [];
  for (const ready of source.readyEntries(request.after, request.position)) {
    if (full || scanned >= MAX_BROWSE_SCAN) {
      // Something is left behind the page: the caller may go on after the last one looked at.
      return page(source, messages, scanned, last, toSkip, now);
    }
    const { entry } = ready;
    scanned++;
    last = ready;
    const stored = readProperties || toSkip === 0 ? source.body(entry.id) : undefined;
    if (readProperties) {
      // Without its body the properties are unknown here: a property criterion cannot select it.
      if (stored === undefined) continue;
      if (!matchesFilter(filter, { enqueuedAt: entry.enqueuedAt, properties: stored.properties }, now))
        continue;
    } else if (!matchesFilter(filter, { enqueuedAt: entry.enqueuedAt, properties: {} }, now)) {
      continue;
    }
    if (toSkip > 0) {
      toSkip--;
      continue;
    }
    const carried = stored === undefined ? undefined : cut(stored, bodyBytes);
    if (stored !== undefined && carried !== undefined)
      pageBytes += measureStoredMessage(stored).size - stored.body.byteLength + carried.body.byteLength;
    messages.push({
      id: entry.id,
      enqueuedAt: entry.enqueuedAt,
      deliveryCount: entry.deliveryCount,
      redelivered: entry.deliveryCount > 0,
      size: entry.size,
      expiresAt: Number.isFinite(entry.expiresAt) ? entry.expiresAt : undefined,
      message: carried,
      position: ready.position,
    });
    full = messages.length >= limit || pageBytes >= MAX_PAGE_BYTES;
  }
  return page(source, messages, scanned, undefined, 0, now);
}

function page(
  source: BrowseSource,
  messages: BrowsedMessage[],
  scanned: number,
  last: BrowsableReady | undefined,
  offsetLeft: number,
  now: number,
): BrowsePage {
  return {
    messages,
    ready: source.readyCount,
    scanned,
    next: last?.entry.id,
    nextPosition: last?.position,
    offsetLeft,
    appliedIndex: source.appliedIndex,
    readAt: now,
  };
}

/** Why a browse request cannot be served (the API's 400). */
export class BrowseRequestError extends Error {
  readonly code = 'BROWSE_REQUEST_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'BrowseRequestError';
  }
}

/** Throws `BrowseRequestError` unless `request`'s numbers are in range (`maxBodyBytes`: the caller's cap). */
export function checkBrowseRequest(request: BrowseRequest, maxBodyBytes: number): void {
  const { after, offset, limit, bodyBytes } = request;
  if (after !== undefined && (!Number.isSafeInteger(after) || after < 0))
    throw new BrowseRequestError("'after' must be a message id (a whole number >= 0)");
  if (request.position !== undefined && !isBrowsePosition(request.position))
    throw new BrowseRequestError("'position' must be a browse position of a message");
  if (!Number.isSafeInteger(offset) || offset < 0)
    throw new BrowseRequestError("'offset' must be a whole number >= 0");
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_BROWSE_LIMIT)
    throw new BrowseRequestError(`'limit' must be a whole number from 1 to ${MAX_BROWSE_LIMIT}`);
  if (!Number.isSafeInteger(bodyBytes) || bodyBytes < 0 || bodyBytes > maxBodyBytes)
    throw new BrowseRequestError(`'body_bytes' must be a whole number from 0 to ${maxBodyBytes}`);
}

/** Whether `value` is a well-formed `BrowsePosition` (from the wire or a metadata record). */
export function isBrowsePosition(value: unknown): value is BrowsePosition {
  if (typeof value !== 'object' || value === null) return false;
  const p = value as Record<string, unknown>;
  const whole = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 0;
  if (p.list === 'ready') return whole(p.id);
  return p.list === 'returned' && whole(p.id) && whole(p.index) && whole(p.ordinal);
}
