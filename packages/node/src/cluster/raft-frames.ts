import type { StreamMessageEvent } from '@libp2p/interface';
import { FrameTooLargeError } from './errors.ts';

/**
 * The kind of a Raft stream's frame, its payload's first byte: a `PeerBatch` (`encodePeerBatch`,
 * whose first byte is its format version, 1). Any other kind is a later version's: skipped and
 * answered (libp2p-transport.ts).
 */
export const RAFT_FRAME_PEER_BATCH = 1;

/**
 * The kind of the frame a Raft stream's receiver writes back for a frame it does not know:
 * `[u8 0x80][u8 the unknown kind][UTF-8 text naming both versions]`.
 */
export const RAFT_FRAME_UNKNOWN_ANSWER = 0x80;

/** Bound on the text of an unknown-frame answer, bytes (longer texts are cut). */
const MAX_ANSWER_TEXT_BYTES = 1_024;

export function encodeUnknownFrameAnswer(kind: number, text: string): Uint8Array {
  const bytes = new TextEncoder().encode(text).subarray(0, MAX_ANSWER_TEXT_BYTES);
  const payload = new Uint8Array(2 + bytes.byteLength);
  payload[0] = RAFT_FRAME_UNKNOWN_ANSWER;
  payload[1] = kind;
  payload.set(bytes, 2);
  return payload;
}

/** Throws `RangeError` for a payload that is not such an answer. */
export function decodeUnknownFrameAnswer(payload: Uint8Array): { kind: number; text: string } {
  if (payload.byteLength < 2 || payload[0] !== RAFT_FRAME_UNKNOWN_ANSWER) {
    throw new RangeError('not an unknown-frame answer');
  }
  return { kind: payload[1] as number, text: new TextDecoder().decode(payload.subarray(2)) };
}

/** Bytes of a frame's length prefix (u32 big-endian). */
export const FRAME_PREFIX_BYTES = 4;
const PREFIX_BYTES = FRAME_PREFIX_BYTES;

/** One frame: the payload's length as a u32 big-endian, then the payload. */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  const frame = allocFrame(payload.byteLength);
  frame.set(payload, PREFIX_BYTES);
  return frame;
}

/**
 * A frame for a payload of `payloadBytes`, its prefix written: the payload is written in place at
 * `FRAME_PREFIX_BYTES` (no second copy, as `encodeFrame` of a finished payload makes).
 */
export function allocFrame(payloadBytes: number): Uint8Array {
  const frame = new Uint8Array(PREFIX_BYTES + payloadBytes);
  new DataView(frame.buffer).setUint32(0, payloadBytes);
  return frame;
}

/**
 * Cuts a byte stream into the payloads of `encodeFrame`, whatever the chunking of the stream.
 * Holds at most one frame's bytes (plus one chunk): a prefix above `maxFrameBytes` throws
 * `FrameTooLargeError` as soon as the prefix is read, before its payload is buffered, so a corrupt
 * or hostile prefix cannot make the reader allocate gigabytes.
 */
export class FrameDecoder {
  readonly #maxFrameBytes: number;
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  /** The payload length of the frame being read, once its prefix is in. */
  #expected: number | undefined;

  constructor(maxFrameBytes: number) {
    this.#maxFrameBytes = maxFrameBytes;
  }

  /**
   * Feed the next chunk; returns the payloads it completed (fresh copies or views of `chunk`),
   * always plain `Uint8Array`s. Noise decrypts in place into the socket's chunks, which are Node
   * `Buffer`s: a payload that stayed one would reach Raft entries and RPC answers as a `Buffer`,
   * whose `slice` is a view rather than a copy and which compares unequal to the same bytes as a
   * `Uint8Array`. Re-viewing the chunk costs no copy.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    if (chunk.byteLength > 0) {
      this.#chunks.push(
        Buffer.isBuffer(chunk) ? new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength) : chunk,
      );
      this.#buffered += chunk.byteLength;
    }
    const payloads: Uint8Array[] = [];
    for (;;) {
      if (this.#expected === undefined) {
        if (this.#buffered < PREFIX_BYTES) break;
        const prefix = this.#take(PREFIX_BYTES);
        const length = new DataView(prefix.buffer, prefix.byteOffset, PREFIX_BYTES).getUint32(0);
        if (length > this.#maxFrameBytes) throw new FrameTooLargeError(length, this.#maxFrameBytes);
        this.#expected = length;
      }
      if (this.#buffered < this.#expected) break;
      payloads.push(this.#take(this.#expected));
      this.#expected = undefined;
    }
    return payloads;
  }

  /** Remove the first `n` buffered bytes (n <= buffered): a view when they lie in one chunk. */
  #take(n: number): Uint8Array {
    this.#buffered -= n;
    const first = this.#chunks[0];
    if (first !== undefined && first.byteLength >= n) {
      if (first.byteLength === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = new Uint8Array(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[0] as Uint8Array;
      const used = Math.min(chunk.byteLength, n - filled);
      out.set(chunk.subarray(0, used), filled);
      filled += used;
      if (used === chunk.byteLength) this.#chunks.shift();
      else this.#chunks[0] = chunk.subarray(used);
    }
    return out;
  }
}

/** The chunks of a stream's 'message' event (one buffer, or a list of them). */
export function messageChunks(data: StreamMessageEvent['data']): Iterable<Uint8Array> {
  return data instanceof Uint8Array ? [data] : data;
}
