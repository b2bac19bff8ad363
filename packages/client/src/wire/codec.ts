// Batch encode/decode: the only place bytes become frames and back.
import { hasBatchRoom } from './batch-room.ts';
import { decodeFrames } from './fast-codec.ts';
import { encodePropertiesMessage, readPropertiesMessage } from './properties-codec.ts';
import { BatchType, FrameType } from './schema.ts';
import type { BasicProperties, Frame, FrameOf, MethodMap, MethodName } from './types.ts';
import { WireError } from './wire-error.ts';
import { startReading, stopReading } from './wire-reader.ts';

/**
 * Encodes frames into one WebSocket message. Accepts plain objects of the Frame shape and decoded
 * frames alike (a broker may relay what it decoded). The caller keeps the result under the
 * negotiated frameMax; this function does not split.
 */
export function encodeBatch(frames: readonly Frame[]): Uint8Array {
  return BatchType.encode({ frames }).finish();
}

/**
 * Decodes one WebSocket message into its frames, in order.
 *
 * Throws WireError 502 SYNTAX_ERROR, and nothing else, when the bytes do not decode (garbage,
 * truncation inside a frame, invalid UTF-8 in a string, nesting deeper than protobufjs's recursion
 * limit of 100 message levels) or when a frame carries no method (including one this version does not
 * know). A cut exactly at a frame boundary is indistinguishable from a shorter batch and decodes to the
 * frames before it. Unknown fields, and fields of the wrong wire type, are skipped.
 *
 * BasicPublish, BasicDeliver, BasicAck, BasicNack and BasicReject frames are decoded by hand
 * (fast-codec.ts) into plain objects carrying every field, absent ones as their defaults ('' / 0 /
 * false / null properties / empty body); their `properties` and every other frame are protobufjs
 * message instances, whose absent fields read from the prototype. Either way the values are exactly
 * those protobufjs's decoder gives. Bytes fields are views into `bytes` (Buffers when `bytes` is a
 * Buffer), so hold on to a body only as long as retaining the whole batch is fine, or copy it. A
 * publish's properties remember the bytes they came in (see `encodePropertiesOnce`). The caller bounds
 * the size of `bytes` (the WebSocket layer's frameMax).
 */
export function decodeBatch(bytes: Uint8Array): Frame[] {
  if (!(bytes instanceof Uint8Array)) throw WireError.syntax('a batch must be a Uint8Array of bytes');
  return decodeFrames(bytes);
}

/**
 * The protobuf encoding of a `BasicProperties` message on its own: the same bytes a publish or a
 * deliver frame carries in its `properties` field (written by hand, properties-codec.ts: the bytes
 * protobufjs writes). Lets a broker keep a message's properties as bytes (one encode per message)
 * instead of re-encoding them inside every frame; see also `encodePropertiesOnce`.
 */
export function encodeProperties(properties: BasicProperties): Uint8Array {
  return encodePropertiesMessage(properties);
}

/**
 * Decodes what `encodeProperties` wrote into what protobufjs's decoder gives (its message instances,
 * like the `properties` of a decoded frame; decoded by hand, properties-codec.ts). Throws WireError 502
 * SYNTAX_ERROR when the bytes do not decode.
 */
export function decodeProperties(bytes: Uint8Array): BasicProperties {
  startReading(bytes);
  try {
    return readPropertiesMessage(bytes.length, 0);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw WireError.syntax(`undecodable properties of ${bytes.length} bytes: ${reason}`, err);
  } finally {
    stopReading();
  }
}

/** Builds a frame: `frame(1, 'basicAck', { deliveryTag: 5, multiple: false })`. */
export function frame<K extends MethodName>(channel: number, method: K, body: MethodMap[K]): FrameOf<K> {
  return { channel, method, [method]: body } as FrameOf<K>;
}

// ---------------------------------------------------------------- batching by size
//
// A Batch is its frames, each written as field 1 (tag byte 0x0a), a varint length, then the frame's
// bytes. Encoding frames one by one and joining them gives the same bytes as encodeBatch, and lets a
// sender know each frame's size up front, so it can cut batches at frame boundaries under frameMax.

/** Tag byte of Batch.frames (field 1, length-delimited). */
const FRAMES_TAG = 0x0a;

function varintSize(n: number): number {
  let size = 1;
  while (n > 0x7f) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Encodes one frame on its own; join frames with joinEncodedFrames. */
export function encodeFrame(f: Frame): Uint8Array {
  return FrameType.encode(f).finish();
}

/** The bytes a frame of `frameLength` encoded bytes adds to a batch (tag + length + frame). */
export function batchEntrySize(frameLength: number): number {
  return 1 + varintSize(frameLength) + frameLength;
}

/**
 * One batch (one WebSocket message) from frames encoded with encodeFrame, in order: the same bytes
 * encodeBatch would give for the frames themselves. `end` defaults to all of them.
 */
export function joinEncodedFrames(frames: readonly Uint8Array[], start = 0, end = frames.length): Uint8Array {
  if (end - start === 1 && hasBatchRoom(frames[start] as Uint8Array))
    return inPlace(frames[start] as Uint8Array);
  let total = 0;
  for (let i = start; i < end; i++) total += batchEntrySize((frames[i] as Uint8Array).length);
  const out = new Uint8Array(total);
  let pos = 0;
  for (let i = start; i < end; i++) {
    const f = frames[i] as Uint8Array;
    out[pos++] = FRAMES_TAG;
    let n = f.length;
    while (n > 0x7f) {
      out[pos++] = (n & 0x7f) | 0x80;
      n = Math.floor(n / 128);
    }
    out[pos++] = n;
    out.set(f, pos);
    pos += f.length;
  }
  return out;
}

/** The batch of one frame allocated with room for its prefix: the prefix written there, no copy. */
function inPlace(f: Uint8Array): Uint8Array {
  const room = batchEntrySize(f.length) - f.length;
  const out = new Uint8Array(f.buffer, f.byteOffset - room, room + f.length);
  let pos = 0;
  out[pos++] = FRAMES_TAG;
  let n = f.length;
  while (n > 0x7f) {
    out[pos++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[pos] = n;
  return out;
}

/**
 * Joins encoded frames into as few batches (WebSocket messages) as `frameMax` allows, in order, and
 * hands each to `send`: a batch is cut at a frame boundary before it would exceed `frameMax`; a
 * frame larger than `frameMax` on its own goes alone (the caller decides whether that may happen),
 * and so does a frame allocated with batch room (a large body: sent without a second copy).
 */
export function sendInBatches(
  frames: readonly Uint8Array[],
  frameMax: number,
  send: (batch: Uint8Array) => void,
): void {
  let start = 0;
  while (start < frames.length) {
    let size = batchEntrySize((frames[start] as Uint8Array).length);
    let end = start + 1;
    // A frame with batch room (a large body) goes alone, written in place rather than copied.
    while (end < frames.length && !hasBatchRoom(frames[start] as Uint8Array)) {
      if (hasBatchRoom(frames[end] as Uint8Array)) break;
      const next = batchEntrySize((frames[end] as Uint8Array).length);
      if (size + next > frameMax) break;
      size += next;
      end++;
    }
    send(joinEncodedFrames(frames, start, end));
    start = end;
  }
}
