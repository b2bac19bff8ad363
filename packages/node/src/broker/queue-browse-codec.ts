/**
 * The bytes of the cluster RPC `queue.browse` (broker/queue-browse.ts).
 *
 * Request: UTF-8 JSON `{groupId, after?, position?, offset, limit, bodyBytes, filter}` (filter as
 * `filterJson` writes it). `position` (redrive's stable cursor) and the answer's `position` per
 * message and `nextPosition` are absent to and from builds before them: a leader of such a build
 * ignores the field and pages by `after`, and its answer has no positions. Decoding validates everything (the caller is a member, but a bug or a
 * version skew must answer an error, never crash the leader).
 *
 * Answer (format 1): [u8 1][varint n][n bytes of UTF-8 JSON: the page without bodies] then, for
 * each message whose `hasBody` is true, in order, [varint n][its stored-message encoding] (the
 * body already cut to the request's preview size).
 */
import type { BrowsedMessage, BrowsePage, BrowsePosition, BrowseRequest } from '../queue/message-browse.ts';
import { BrowseRequestError, checkBrowseRequest, isBrowsePosition } from '../queue/message-browse.ts';
import { filterJson, MessageFilterError, parseFilterJson } from '../queue/message-filter.ts';
import type { StoredMessage } from '../queue/types.ts';
import { ByteCursor, varintSize, writeVarint } from '../storage/binary.ts';
import { decodeStoredMessage, encodeStoredMessage } from '../storage/stored-message-codec.ts';

const FORMAT = 1;
const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** A browse request for the leader of queue incarnation `groupId`. */
export interface GroupBrowseRequest extends BrowseRequest {
  readonly groupId: string;
}

export function encodeBrowseRequest(request: GroupBrowseRequest): Uint8Array {
  return encoder.encode(
    JSON.stringify({
      groupId: request.groupId,
      after: request.after ?? null,
      ...(request.position !== undefined ? { position: request.position } : {}),
      offset: request.offset,
      limit: request.limit,
      bodyBytes: request.bodyBytes,
      filter: filterJson(request.filter),
    }),
  );
}

/**
 * Throws `BrowseRequestError` for bytes that are not a valid request (`maxBodyBytes`: the largest
 * preview this node serves).
 */
export function decodeBrowseRequest(bytes: Uint8Array, maxBodyBytes: number): GroupBrowseRequest {
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new BrowseRequestError(`queue.browse request is not JSON: ${(error as Error).message}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new BrowseRequestError('queue.browse request must be a JSON object');
  const obj = raw as Record<string, unknown>;
  if (typeof obj.groupId !== 'string') throw new BrowseRequestError('queue.browse request without groupId');
  let filter: BrowseRequest['filter'];
  try {
    filter = parseFilterJson(obj.filter);
  } catch (error) {
    if (error instanceof MessageFilterError) throw new BrowseRequestError(error.message);
    throw error;
  }
  const request: GroupBrowseRequest = {
    groupId: obj.groupId,
    after: obj.after === null || obj.after === undefined ? undefined : (obj.after as number),
    ...(obj.position === null || obj.position === undefined
      ? {}
      : { position: obj.position as GroupBrowseRequest['position'] }),
    offset: obj.offset as number,
    limit: obj.limit as number,
    bodyBytes: obj.bodyBytes as number,
    filter,
  };
  checkBrowseRequest(request, maxBodyBytes);
  return request;
}

interface MessageHead {
  readonly id: number;
  readonly enqueuedAt: number;
  readonly deliveryCount: number;
  readonly size: number;
  readonly expiresAt: number | null;
  readonly hasBody: boolean;
  readonly position?: BrowsePosition;
}

interface PageHead {
  readonly ready: number;
  readonly scanned: number;
  readonly next: number | null;
  readonly nextPosition?: BrowsePosition | null;
  readonly offsetLeft: number;
  readonly appliedIndex: number;
  readonly readAt: number;
  readonly messages: readonly MessageHead[];
}

export function encodeBrowsePage(page: BrowsePage): Uint8Array {
  const head: PageHead = {
    ready: page.ready,
    scanned: page.scanned,
    next: page.next ?? null,
    nextPosition: page.nextPosition ?? null,
    offsetLeft: page.offsetLeft,
    appliedIndex: page.appliedIndex,
    readAt: page.readAt,
    messages: page.messages.map((m) => ({
      id: m.id,
      enqueuedAt: m.enqueuedAt,
      deliveryCount: m.deliveryCount,
      size: m.size,
      expiresAt: m.expiresAt ?? null,
      hasBody: m.message !== undefined,
      ...(m.position !== undefined ? { position: m.position } : {}),
    })),
  };
  const json = encoder.encode(JSON.stringify(head));
  const bodies: Uint8Array[] = [];
  for (const m of page.messages) if (m.message !== undefined) bodies.push(encodeStoredMessage(m.message));
  let size = 1 + varintSize(json.byteLength) + json.byteLength;
  for (const b of bodies) size += varintSize(b.byteLength) + b.byteLength;
  const out = new Uint8Array(size);
  out[0] = FORMAT;
  let pos = writeVarint(out, 1, json.byteLength);
  out.set(json, pos);
  pos += json.byteLength;
  for (const b of bodies) {
    pos = writeVarint(out, pos, b.byteLength);
    out.set(b, pos);
    pos += b.byteLength;
  }
  return out;
}

/** Throws `StoredBytesCorruptedError` or `RangeError` on bytes that do not follow the layout. */
export function decodeBrowsePage(bytes: Uint8Array): BrowsePage {
  const r = new ByteCursor(bytes, 'queue.browse answer');
  const format = r.u8();
  if (format !== FORMAT) throw new RangeError(`queue.browse answer: unknown format ${format}`);
  const head = JSON.parse(decoder.decode(r.bytes(r.varint()))) as PageHead;
  if (typeof head !== 'object' || head === null || !Array.isArray(head.messages))
    throw new RangeError('queue.browse answer: no messages');
  const messages: BrowsedMessage[] = head.messages.map((m) => {
    let message: StoredMessage | undefined;
    if (m.hasBody) message = decodeStoredMessage(r.bytes(r.varint()), 'queue.browse message');
    return {
      id: m.id,
      enqueuedAt: m.enqueuedAt,
      deliveryCount: m.deliveryCount,
      redelivered: m.deliveryCount > 0,
      size: m.size,
      expiresAt: m.expiresAt ?? undefined,
      message,
      position: isBrowsePosition(m.position) ? m.position : undefined,
    };
  });
  if (r.remaining !== 0) throw new RangeError('queue.browse answer: trailing bytes');
  return {
    messages,
    ready: head.ready,
    scanned: head.scanned,
    next: head.next ?? undefined,
    nextPosition: isBrowsePosition(head.nextPosition) ? head.nextPosition : undefined,
    offsetLeft: head.offsetLeft,
    appliedIndex: head.appliedIndex,
    readAt: head.readAt,
  };
}
