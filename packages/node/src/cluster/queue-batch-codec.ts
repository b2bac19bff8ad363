/**
 * `QueueOp.batch`: several sends of this node's queue leaders to one other node's channels
 * (deliveries, cancellations), made in one event-loop turn, as one queue-link call: one frame, one
 * pending call and one deadline for all of them, and one answer frame back. Sent once the feature
 * flag `batched_remote_sends` is enabled (every member answers it); until then each send is a call
 * of its own, as before.
 *
 * Request body: `[u32 count]` then per send `[u8 op][u16 group length][group utf-8][u32 body
 * length][body]` (the op and body a call of its own would carry). The sends are run in order.
 * Answer body: `[u32 count]` then per send `[u8 0]` (done) or `[u8 1][u8 code length][code][u16
 * text length][text]` (refused, as a call of its own would have been answered with that error).
 *
 * Every decoder throws `QueueLinkFrameError` on bytes that do not follow the layout: the stream
 * they came on closes, never the node.
 */
import { QueueLinkFrameError } from './queue-link.ts';
import type { SendBody } from './queue-rpc-codec.ts';
import { sendBodyBytes } from './queue-rpc-codec.ts';

/** One send to put in a batch: its op, and its body whole or in parts. */
export interface OutgoingSend {
  readonly op: number;
  readonly body: SendBody;
}

/** One send inside a batch, as it arrives. */
export interface BatchedSend {
  readonly op: number;
  readonly group: string;
  readonly body: Uint8Array;
}

/** One send's outcome: done, or refused with an error code and text. */
export type BatchedOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly code: string; readonly text: string };

const DONE = 0;
const REFUSED = 1;
/** Bytes of a send's header besides its group: op, group length, body length. */
const SEND_HEAD_BYTES = 1 + 2 + 4;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const lenientDecoder = new TextDecoder('utf-8');

/** The encoded group ids a batch's heads need (most sends of a turn share a few). */
export function encodeGroup(group: string): Uint8Array {
  const bytes = encoder.encode(group);
  if (bytes.byteLength > 0xffff) throw new RangeError('group id too long');
  return bytes;
}

/** Bytes `sends` take in a batch besides their bodies. */
export function batchHeadBytes(groups: readonly Uint8Array[]): number {
  let size = 4;
  for (const group of groups) size += SEND_HEAD_BYTES + group.byteLength;
  return size;
}

/**
 * The batch of `sends` (their groups encoded in `groups`, same order) as the parts of one body: the
 * bodies are not copied here (the link copies every part once, into its frame).
 */
export function encodeBatch(sends: readonly OutgoingSend[], groups: readonly Uint8Array[]): Uint8Array[] {
  // Every head (and the count) in one buffer, the parts views into it: one allocation per batch.
  const heads = new Uint8Array(batchHeadBytes(groups));
  const view = new DataView(heads.buffer);
  view.setUint32(0, sends.length);
  const parts: Uint8Array[] = [];
  let start = 0;
  let pos = 4;
  for (let i = 0; i < sends.length; i++) {
    const send = sends[i] as OutgoingSend;
    const group = groups[i] as Uint8Array;
    heads[pos] = send.op;
    view.setUint16(pos + 1, group.byteLength);
    heads.set(group, pos + 3);
    view.setUint32(pos + 3 + group.byteLength, sendBodyBytes(send.body));
    pos += SEND_HEAD_BYTES + group.byteLength;
    parts.push(heads.subarray(start, pos));
    if (send.body instanceof Uint8Array) parts.push(send.body);
    else for (const part of send.body) parts.push(part);
    start = pos;
  }
  if (sends.length === 0) parts.push(heads);
  return parts;
}

/** The sends of a batch body; the bodies are views into `bytes`. */
export function decodeBatch(bytes: Uint8Array): BatchedSend[] {
  if (bytes.byteLength < 4) throw new QueueLinkFrameError('batch shorter than its count');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(0);
  // Each send takes at least its head: a count the bytes cannot hold is refused before any work.
  if (count * SEND_HEAD_BYTES > bytes.byteLength - 4)
    throw new QueueLinkFrameError(`batch of ${count} sends in ${bytes.byteLength} bytes`);
  const sends: BatchedSend[] = [];
  let pos = 4;
  for (let i = 0; i < count; i++) {
    if (pos + 3 > bytes.byteLength) throw new QueueLinkFrameError('batched send runs past the batch');
    const op = bytes[pos] as number;
    const groupLength = view.getUint16(pos + 1);
    const groupEnd = pos + 3 + groupLength;
    if (groupEnd + 4 > bytes.byteLength)
      throw new QueueLinkFrameError('batched send group runs past the batch');
    let group: string;
    try {
      group = decoder.decode(bytes.subarray(pos + 3, groupEnd));
    } catch {
      throw new QueueLinkFrameError('batched send group is not UTF-8');
    }
    const bodyLength = view.getUint32(groupEnd);
    const bodyEnd = groupEnd + 4 + bodyLength;
    if (bodyEnd > bytes.byteLength) throw new QueueLinkFrameError('batched send body runs past the batch');
    sends.push({ op, group, body: bytes.subarray(groupEnd + 4, bodyEnd) });
    pos = bodyEnd;
  }
  if (pos !== bytes.byteLength) throw new QueueLinkFrameError('trailing bytes after the batched sends');
  return sends;
}

/** The answer to a batch: each send's outcome, in order. */
export function encodeBatchAnswer(outcomes: readonly BatchedOutcome[]): Uint8Array {
  const texts: (readonly [Uint8Array, Uint8Array] | undefined)[] = [];
  let size = 4;
  for (const outcome of outcomes) {
    if (outcome.ok) {
      texts.push(undefined);
      size += 1;
      continue;
    }
    const code = encoder.encode(outcome.code).subarray(0, 255);
    const text = encoder.encode(outcome.text).subarray(0, 1024);
    texts.push([code, text]);
    size += 1 + 1 + code.byteLength + 2 + text.byteLength;
  }
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, outcomes.length);
  let pos = 4;
  for (const refused of texts) {
    if (refused === undefined) {
      out[pos++] = DONE;
      continue;
    }
    const [code, text] = refused;
    out[pos] = REFUSED;
    out[pos + 1] = code.byteLength;
    out.set(code, pos + 2);
    view.setUint16(pos + 2 + code.byteLength, text.byteLength);
    out.set(text, pos + 4 + code.byteLength);
    pos += 4 + code.byteLength + text.byteLength;
  }
  return out;
}

/** Each send's outcome from a batch answer, which must name exactly `expected` of them. */
export function decodeBatchAnswer(bytes: Uint8Array, expected: number): BatchedOutcome[] {
  if (bytes.byteLength < 4) throw new QueueLinkFrameError('batch answer shorter than its count');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const count = view.getUint32(0);
  if (count !== expected) throw new QueueLinkFrameError(`batch answer for ${count} sends, not ${expected}`);
  const outcomes: BatchedOutcome[] = [];
  let pos = 4;
  for (let i = 0; i < count; i++) {
    const status = bytes[pos];
    if (status === DONE) {
      outcomes.push(DONE_OUTCOME);
      pos++;
      continue;
    }
    if (status !== REFUSED || pos + 2 > bytes.byteLength)
      throw new QueueLinkFrameError(`batch answer with status ${status}`);
    const codeLength = bytes[pos + 1] as number;
    if (pos + 4 + codeLength > bytes.byteLength)
      throw new QueueLinkFrameError('batch answer code runs past it');
    const code = lenientDecoder.decode(bytes.subarray(pos + 2, pos + 2 + codeLength));
    const textLength = view.getUint16(pos + 2 + codeLength);
    const end = pos + 4 + codeLength + textLength;
    if (end > bytes.byteLength) throw new QueueLinkFrameError('batch answer text runs past it');
    const text = lenientDecoder.decode(bytes.subarray(pos + 4 + codeLength, end));
    outcomes.push({ ok: false, code, text });
    pos = end;
  }
  if (pos !== bytes.byteLength) throw new QueueLinkFrameError('trailing bytes after the batch answer');
  return outcomes;
}

const DONE_OUTCOME: BatchedOutcome = Object.freeze({ ok: true });
