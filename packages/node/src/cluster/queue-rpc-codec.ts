/**
 * What travels over the queue link (see queue-link.ts): the operations and their bodies.
 *
 * - `QueueOp.command`: a queue command for the queue's leader, in the log's own binary encoding
 *   (`queueCommandCodec`); the answer is the machine's reply as JSON, followed for a `got` by the
 *   message in its stored encoding.
 * - `QueueOp.commandBinary`: the same command, answered in binary (`encodeBinaryAnswer`: a tag and
 *   the reply's fields, no JSON on either side). Sent once the feature flag `binary_queue_answers`
 *   is enabled (every member answers it); the JSON form stays answered for older callers.
 * - `QueueOp.counts`: the leader's counts, as JSON.
 * - `QueueOp.deliver`: a leader hands a delivery to the node holding the consuming channel.
 * - `QueueOp.cancelled`: a leader tells that node the queue cancelled a consumer (queue deleted).
 * - `QueueOp.reassert`: a node that gave up another node's consumers while it counted that node
 *   down tells it, once it answers again, to register its consumers again (empty body, no group).
 * - `QueueOp.batch`: several deliveries and cancellations of one turn for one node's channels, in
 *   one call (queue-batch-codec.ts); sent once the feature flag `batched_remote_sends` is enabled.
 *
 * Every decoder throws `QueueLinkFrameError` on bytes that do not follow the layout, so a corrupt
 * or hostile body closes the stream it came on, never the node.
 */

import type { QueueCounts, QueueReply, RejectReason, StoredMessage } from '../queue/types.ts';
import { decodeStoredMessage, encodeStoredMessage } from '../storage/stored-message-codec.ts';
import { QueueLinkFrameError } from './queue-link.ts';

export const QueueOp = {
  command: 1,
  counts: 2,
  deliver: 3,
  cancelled: 4,
  /** The leader's view of its group: members, roles, progress (JSON `GroupStatus`). */
  status: 5,
  /** Hand the group's leadership to the node id in the body (UTF-8). */
  transfer: 6,
  reassert: 7,
  commandBinary: 8,
  batch: 9,
} as const;

/** One replica of a queue's group, as its leader sees it. */
export interface ReplicaStatus {
  readonly node: string;
  readonly role: 'leader' | 'follower' | 'learner';
  /** Highest log index known to be on the replica's disk. */
  readonly match: number;
  /** Heard from within the last election timeout. */
  readonly active: boolean;
}

/** A queue group's status (`styx ctl quorum_status`). */
export interface GroupStatus {
  readonly leader: string;
  readonly term: number | undefined;
  readonly commitIndex: number;
  readonly replicas: readonly ReplicaStatus[];
}

export function encodeJsonBody(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export function decodeGroupStatus(bytes: Uint8Array): GroupStatus {
  const status = parseJson(bytes, 'group status') as GroupStatus;
  if (typeof status !== 'object' || status === null || !Array.isArray(status.replicas)) {
    throw new QueueLinkFrameError('group status without replicas');
  }
  return status;
}

export function decodeText(bytes: Uint8Array, what: string): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new QueueLinkFrameError(`${what} is not UTF-8`);
  }
}

/** Error codes of queue-link answers (besides AMQP reply codes carried as numbers). */
export const QueueLinkCode = {
  /** This replica does not lead the group; the text is the leader's node id, or empty. */
  notLeader: 'NOT_LEADER',
  /** No replica of that group runs here (deleted, or never placed here). */
  unknownGroup: 'UNKNOWN_GROUP',
  /** No channel with that owner id on this node (closed, or the node restarted). */
  ownerGone: 'OWNER_GONE',
} as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/** The answer to a command: the reply, and the message of a `got`. */
export interface CommandAnswer {
  readonly reply: QueueReply;
  readonly message: StoredMessage | undefined;
}

export function encodeCommandAnswer(reply: QueueReply, message: StoredMessage | undefined): Uint8Array {
  const json = encoder.encode(JSON.stringify(reply));
  const body = message === undefined ? undefined : encodeStoredMessage(message);
  const out = new Uint8Array(4 + json.byteLength + (body?.byteLength ?? 0));
  new DataView(out.buffer).setUint32(0, json.byteLength);
  out.set(json, 4);
  if (body !== undefined) out.set(body, 4 + json.byteLength);
  return out;
}

export function decodeCommandAnswer(bytes: Uint8Array): CommandAnswer {
  if (bytes.byteLength < 4) throw new QueueLinkFrameError('command answer shorter than its header');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(0);
  if (4 + length > bytes.byteLength) throw new QueueLinkFrameError('command answer runs past its frame');
  const reply = parseJson(bytes.subarray(4, 4 + length), 'command answer') as QueueReply;
  if (typeof reply !== 'object' || reply === null || typeof reply.type !== 'string') {
    throw new QueueLinkFrameError('command answer without a reply type');
  }
  const rest = bytes.subarray(4 + length);
  return { reply, message: rest.byteLength > 0 ? decodeMessage(rest) : undefined };
}

/** The tags of `encodeBinaryAnswer`, one per reply type. */
const ANSWER_TAGS = {
  ok: 1,
  rejected: 2,
  duplicate: 3,
  outOfOrder: 4,
  got: 5,
  empty: 6,
  purged: 7,
  removed: 8,
  locked: 9,
} as const satisfies Record<QueueReply['type'], number>;

const REJECT_REASONS: readonly RejectReason[] = ['maxlen', 'dead-letter-backlog'];

/** Replies without fields, one shared object each (answers are read, never changed). */
const BARE_REPLIES: Readonly<Record<number, QueueReply>> = {
  [ANSWER_TAGS.ok]: Object.freeze({ type: 'ok' }),
  [ANSWER_TAGS.duplicate]: Object.freeze({ type: 'duplicate' }),
  [ANSWER_TAGS.outOfOrder]: Object.freeze({ type: 'outOfOrder' }),
  [ANSWER_TAGS.empty]: Object.freeze({ type: 'empty' }),
};

/** Bytes of a `got` answer's fields: id, redelivered, delivery count, message count. */
const GOT_FIELDS_BYTES = 8 + 1 + 4 + 8;

/**
 * The answer to a command in binary: `[u8 tag]` and the reply's fields — rejected `[u8 reason
 * (1 maxlen, 2 dead-letter-backlog)]`; got `[f64 id][u8 redelivered][u32 delivery count][f64
 * message count][message, stored encoding]`; purged `[f64 count]`; removed `[u32 n][f64 id]×n`;
 * locked `[UTF-8 text]`; the others nothing.
 */
export function encodeBinaryAnswer(reply: QueueReply, message: StoredMessage | undefined): Uint8Array {
  const tag = ANSWER_TAGS[reply.type];
  switch (reply.type) {
    case 'rejected':
      return Uint8Array.of(tag, REJECT_REASONS.indexOf(reply.reason) + 1);
    case 'got': {
      const body = message === undefined ? new Uint8Array(0) : encodeStoredMessage(message);
      const out = new Uint8Array(1 + GOT_FIELDS_BYTES + body.byteLength);
      const view = new DataView(out.buffer);
      out[0] = tag;
      view.setFloat64(1, reply.id);
      out[9] = reply.redelivered ? 1 : 0;
      view.setUint32(10, Math.min(reply.deliveryCount, 0xffffffff));
      view.setFloat64(14, reply.messageCount);
      out.set(body, 1 + GOT_FIELDS_BYTES);
      return out;
    }
    case 'purged': {
      const out = new Uint8Array(9);
      out[0] = tag;
      new DataView(out.buffer).setFloat64(1, reply.count);
      return out;
    }
    case 'removed': {
      const out = new Uint8Array(5 + 8 * reply.ids.length);
      const view = new DataView(out.buffer);
      out[0] = tag;
      view.setUint32(1, reply.ids.length);
      for (let i = 0; i < reply.ids.length; i++) view.setFloat64(5 + 8 * i, reply.ids[i] as number);
      return out;
    }
    case 'locked': {
      const text = encoder.encode(reply.text);
      const out = new Uint8Array(1 + text.byteLength);
      out[0] = tag;
      out.set(text, 1);
      return out;
    }
    default:
      return Uint8Array.of(tag);
  }
}

/** Throws `QueueLinkFrameError` on bytes `encodeBinaryAnswer` did not make. */
export function decodeBinaryAnswer(bytes: Uint8Array): CommandAnswer {
  if (bytes.byteLength < 1) throw new QueueLinkFrameError('command answer without a tag');
  const tag = bytes[0] as number;
  const bare = BARE_REPLIES[tag];
  if (bare !== undefined) {
    if (bytes.byteLength !== 1)
      throw new QueueLinkFrameError(`command answer ${bare.type} with trailing bytes`);
    return { reply: bare, message: undefined };
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  switch (tag) {
    case ANSWER_TAGS.rejected: {
      const reason = REJECT_REASONS[(bytes[1] ?? 0) - 1];
      if (reason === undefined || bytes.byteLength !== 2)
        throw new QueueLinkFrameError(`rejected answer with reason ${bytes[1]}`);
      return { reply: { type: 'rejected', reason }, message: undefined };
    }
    case ANSWER_TAGS.got: {
      if (bytes.byteLength < 1 + GOT_FIELDS_BYTES)
        throw new QueueLinkFrameError('got answer shorter than its fields');
      const id = safeCount(view.getFloat64(1), 'got id');
      const redelivered = bytes[9] === 1;
      const deliveryCount = view.getUint32(10);
      const messageCount = safeCount(view.getFloat64(14), 'got message count');
      const rest = bytes.subarray(1 + GOT_FIELDS_BYTES);
      return {
        reply: { type: 'got', id, redelivered, deliveryCount, messageCount },
        message: rest.byteLength > 0 ? decodeMessage(rest) : undefined,
      };
    }
    case ANSWER_TAGS.purged: {
      if (bytes.byteLength !== 9) throw new QueueLinkFrameError('purged answer of the wrong size');
      return {
        reply: { type: 'purged', count: safeCount(view.getFloat64(1), 'purged count') },
        message: undefined,
      };
    }
    case ANSWER_TAGS.removed: {
      const count = bytes.byteLength >= 5 ? view.getUint32(1) : -1;
      if (count < 0 || bytes.byteLength !== 5 + 8 * count)
        throw new QueueLinkFrameError('removed answer of the wrong size');
      const ids: number[] = [];
      for (let i = 0; i < count; i++) ids.push(safeCount(view.getFloat64(5 + 8 * i), 'removed id'));
      return { reply: { type: 'removed', ids }, message: undefined };
    }
    case ANSWER_TAGS.locked:
      return {
        reply: { type: 'locked', text: decodeText(bytes.subarray(1), 'locked text') },
        message: undefined,
      };
    default:
      throw new QueueLinkFrameError(`command answer with unknown tag ${tag}`);
  }
}

function safeCount(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new QueueLinkFrameError(`${what} ${value}`);
  return value;
}

export function encodeCounts(counts: QueueCounts): Uint8Array {
  return encoder.encode(JSON.stringify(counts));
}

export function decodeCounts(bytes: Uint8Array): QueueCounts {
  const counts = parseJson(bytes, 'counts') as QueueCounts;
  if (typeof counts !== 'object' || counts === null || typeof counts.ready !== 'number') {
    throw new QueueLinkFrameError('counts without ready');
  }
  return counts;
}

/** A delivery to a channel on another node. */
export interface RemoteDelivery {
  readonly owner: string;
  readonly tag: string;
  readonly id: number;
  readonly redelivered: boolean;
  readonly deliveryCount: number;
  readonly message: StoredMessage;
}

/**
 * A send's body, whole or in parts sent in a row: a delivery is its head, then its message's stored
 * encoding (shared with the message: never changed), so the link copies the body once, into its
 * frame, instead of once more into a delivery of its own.
 */
export type SendBody = Uint8Array | readonly Uint8Array[];

/** Bytes of `body`, its parts together. */
export function sendBodyBytes(body: SendBody): number {
  if (body instanceof Uint8Array) return body.byteLength;
  let bytes = 0;
  for (const part of body) bytes += part.byteLength;
  return bytes;
}

/** `body` in one piece (the body itself when it is one). */
export function joinSendBody(body: SendBody): Uint8Array {
  if (body instanceof Uint8Array) return body;
  if (body.length === 1) return body[0] as Uint8Array;
  const out = new Uint8Array(sendBodyBytes(body));
  let pos = 0;
  for (const part of body) {
    out.set(part, pos);
    pos += part.byteLength;
  }
  return out;
}

/** [u16 owner][owner][u16 tag][tag][f64 id][u8 redelivered][u32 delivery count][message] */
export function encodeDelivery(
  owner: string,
  tag: string,
  id: number,
  redelivered: boolean,
  deliveryCount: number,
  message: StoredMessage,
): Uint8Array {
  const head = deliveryHead(encoder.encode(owner), encoder.encode(tag), id, redelivered, deliveryCount);
  return joinSendBody([head, encodeStoredMessage(message)]);
}

/**
 * `encodeDelivery` for one owner's deliveries, in parts (`SendBody`): the owner's bytes encoded
 * once, and the last consumer tag's kept (a channel's deliveries mostly name one consumer).
 * Encoding the two strings for every delivery was the largest cost of a delivery to another node
 * after the body's copies.
 */
export class DeliveryEncoder {
  readonly #owner: Uint8Array;
  #tag = '';
  #tagBytes = new Uint8Array(0);

  constructor(owner: string) {
    this.#owner = encoder.encode(owner);
  }

  encode(
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
    message: StoredMessage,
  ): readonly [Uint8Array, Uint8Array] {
    if (tag !== this.#tag) {
      this.#tagBytes = encoder.encode(tag);
      this.#tag = tag;
    }
    const head = deliveryHead(this.#owner, this.#tagBytes, id, redelivered, deliveryCount);
    return [head, encodeStoredMessage(message)];
  }
}

/** A delivery's bytes before its message. */
function deliveryHead(
  ownerBytes: Uint8Array,
  tagBytes: Uint8Array,
  id: number,
  redelivered: boolean,
  deliveryCount: number,
): Uint8Array {
  const out = new Uint8Array(2 + ownerBytes.byteLength + 2 + tagBytes.byteLength + 8 + 1 + 4);
  const view = new DataView(out.buffer);
  let pos = 0;
  view.setUint16(pos, ownerBytes.byteLength);
  out.set(ownerBytes, pos + 2);
  pos += 2 + ownerBytes.byteLength;
  view.setUint16(pos, tagBytes.byteLength);
  out.set(tagBytes, pos + 2);
  pos += 2 + tagBytes.byteLength;
  view.setFloat64(pos, id);
  out[pos + 8] = redelivered ? 1 : 0;
  view.setUint32(pos + 9, Math.min(deliveryCount, 0xffffffff));
  return out;
}

export function decodeDelivery(bytes: Uint8Array): RemoteDelivery {
  const cursor = { pos: 0 };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const owner = readString(bytes, view, cursor, 'delivery owner');
  const tag = readString(bytes, view, cursor, 'delivery tag');
  if (cursor.pos + 13 > bytes.byteLength) throw new QueueLinkFrameError('delivery shorter than its header');
  const id = view.getFloat64(cursor.pos);
  if (!Number.isSafeInteger(id) || id < 0) throw new QueueLinkFrameError(`delivery id ${id}`);
  const redelivered = bytes[cursor.pos + 8] === 1;
  const deliveryCount = view.getUint32(cursor.pos + 9);
  const message = decodeMessage(bytes.subarray(cursor.pos + 13));
  return { owner, tag, id, redelivered, deliveryCount, message };
}

/** [u16 owner][owner][u16 tag][tag] */
export function encodeCancelled(owner: string, tag: string): Uint8Array {
  const ownerBytes = encoder.encode(owner);
  const tagBytes = encoder.encode(tag);
  const out = new Uint8Array(4 + ownerBytes.byteLength + tagBytes.byteLength);
  const view = new DataView(out.buffer);
  view.setUint16(0, ownerBytes.byteLength);
  out.set(ownerBytes, 2);
  view.setUint16(2 + ownerBytes.byteLength, tagBytes.byteLength);
  out.set(tagBytes, 4 + ownerBytes.byteLength);
  return out;
}

export function decodeCancelled(bytes: Uint8Array): { readonly owner: string; readonly tag: string } {
  const cursor = { pos: 0 };
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const owner = readString(bytes, view, cursor, 'cancel owner');
  const tag = readString(bytes, view, cursor, 'cancel tag');
  return { owner, tag };
}

function readString(bytes: Uint8Array, view: DataView, cursor: { pos: number }, what: string): string {
  if (cursor.pos + 2 > bytes.byteLength) throw new QueueLinkFrameError(`${what} missing`);
  const length = view.getUint16(cursor.pos);
  const end = cursor.pos + 2 + length;
  if (end > bytes.byteLength) throw new QueueLinkFrameError(`${what} runs past its frame`);
  let text: string;
  try {
    text = decoder.decode(bytes.subarray(cursor.pos + 2, end));
  } catch {
    throw new QueueLinkFrameError(`${what} is not UTF-8`);
  }
  cursor.pos = end;
  return text;
}

function parseJson(bytes: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch {
    throw new QueueLinkFrameError(`${what} is not JSON`);
  }
}

function decodeMessage(bytes: Uint8Array): StoredMessage {
  try {
    return decodeStoredMessage(bytes, 'forwarded message');
  } catch (error) {
    throw new QueueLinkFrameError(`message does not decode: ${(error as Error).message}`);
  }
}
