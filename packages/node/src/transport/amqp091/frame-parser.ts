import { frameError } from './codec-error.ts';
import { AMQP_CONSTANTS } from './spec.gen.ts';

/** Frame types (spec constants FRAME-METHOD, -HEADER, -BODY, -HEARTBEAT). */
export const FrameType = {
  METHOD: AMQP_CONSTANTS.FRAME_METHOD,
  HEADER: AMQP_CONSTANTS.FRAME_HEADER,
  BODY: AMQP_CONSTANTS.FRAME_BODY,
  HEARTBEAT: AMQP_CONSTANTS.FRAME_HEARTBEAT,
} as const;

/** The octet that ends every frame (0xCE). */
export const FRAME_END = AMQP_CONSTANTS.FRAME_END;

/** Bytes a frame adds around its payload: type (1), channel (2), size (4), frame-end (1). */
export const FRAME_OVERHEAD = 8;

/** The frame size every peer must accept before connection.tune-ok negotiates another (4096). */
export const FRAME_MIN_SIZE = AMQP_CONSTANTS.FRAME_MIN_SIZE;

const HEADER_SIZE = 7;

/** One frame as it came off the wire; `payload` may be a view into the chunk it arrived in. */
export interface RawFrame {
  type: number;
  channel: number;
  payload: Buffer;
}

/**
 * Where a parser hands each frame without making an object of it: the frame's payload is
 * `buf[start, end)` (a view of the chunk it arrived in, or a buffer of its own), valid during the
 * call only unless the receiver keeps a view of it.
 */
export type FrameSink = (type: number, channel: number, buf: Buffer, start: number, end: number) => void;

/** Options of a FrameParser. */
export interface FrameParserOptions {
  /**
   * Largest frame accepted, in bytes, overhead included (AMQP's frame-max). Defaults to 4096,
   * the size every peer must accept before tuning; raise it with setFrameMax() after tune-ok.
   */
  frameMax?: number;
}

/**
 * Splits a byte stream into AMQP 0-9-1 frames, whatever the chunk boundaries (a frame split
 * across chunks, many frames in one chunk, or one byte per chunk). Memory is bounded by frame-max:
 * a frame's declared size is checked against it before its payload is buffered, so a peer that
 * declares 4 GiB gets a 501 FRAME_ERROR, not an allocation. A frame that arrives whole inside one
 * chunk is handed out as a view of that chunk, without a copy. Errors (all AmqpCodecError, 501)
 * are sticky: after one, every push throws it again, since the stream has lost its framing.
 */
export class FrameParser {
  private frameMax: number;
  private readonly header = Buffer.alloc(HEADER_SIZE);
  private headerLength = 0;
  private type = 0;
  private channel = 0;
  /** The payload being filled across chunks; undefined while reading a header. */
  private payload: Buffer | undefined;
  private payloadLength = 0;
  /** True when only the frame-end octet of the current frame is missing. */
  private awaitingEnd = false;
  private failure: Error | undefined;

  constructor(options: FrameParserOptions = {}) {
    this.frameMax = FRAME_MIN_SIZE;
    this.setFrameMax(options.frameMax ?? FRAME_MIN_SIZE);
  }

  /** Sets the largest accepted frame (bytes, overhead included), e.g. to the negotiated frame-max. */
  setFrameMax(frameMax: number): void {
    if (!Number.isInteger(frameMax) || frameMax < FRAME_MIN_SIZE || frameMax > 0xffff_ffff) {
      throw new RangeError(`frameMax must be an integer in ${FRAME_MIN_SIZE}..2^32-1, got ${frameMax}`);
    }
    this.frameMax = frameMax;
  }

  /** True while a frame has begun and is not complete (its header, payload or frame-end is awaited). */
  get midFrame(): boolean {
    return this.headerLength > 0 || this.payload !== undefined;
  }

  /** True once the stream lost its framing (every push throws): nothing more can be read from it. */
  get failed(): boolean {
    return this.failure !== undefined;
  }

  /** Feeds bytes; calls `onFrame` for every frame they complete, in order. */
  push(chunk: Buffer, onFrame: (frame: RawFrame) => void): void {
    this.pushTo(chunk, (type, channel, buf, start, end) =>
      onFrame({ type, channel, payload: start === 0 && end === buf.length ? buf : buf.subarray(start, end) }),
    );
  }

  /**
   * Feeds bytes; calls `sink` for every frame they complete, in order, with the frame's parts
   * (the connection's path: no frame object, no view of the chunk per frame).
   */
  pushTo(chunk: Buffer, sink: FrameSink): void {
    if (this.failure !== undefined) throw this.failure;
    try {
      this.consume(chunk, sink);
    } catch (e) {
      this.failure = e as Error;
      throw e;
    }
  }

  private consume(chunk: Buffer, sink: FrameSink): void {
    let pos = 0;
    const len = chunk.length;
    while (pos < len) {
      if (this.awaitingEnd) {
        this.checkEnd(chunk[pos] as number);
        pos++;
        this.emit(sink);
        continue;
      }
      if (this.payload !== undefined) {
        const n = Math.min(len - pos, this.payload.length - this.payloadLength);
        chunk.copy(this.payload, this.payloadLength, pos, pos + n);
        this.payloadLength += n;
        pos += n;
        if (this.payloadLength === this.payload.length) this.awaitingEnd = true;
        continue;
      }
      if (this.headerLength === 0 && len - pos >= HEADER_SIZE) {
        // Fast path: a whole header, and perhaps the whole frame, is in this chunk.
        const size = this.startFrame(
          chunk[pos] as number,
          chunk.readUInt16BE(pos + 1),
          chunk.readUInt32BE(pos + 3),
        );
        pos += HEADER_SIZE;
        if (len - pos > size) {
          this.checkEnd(chunk[pos + size] as number);
          const start = pos;
          pos += size + 1;
          sink(this.type, this.channel, chunk, start, start + size);
          continue;
        }
        this.beginPayload(size);
        continue;
      }
      const n = Math.min(len - pos, HEADER_SIZE - this.headerLength);
      chunk.copy(this.header, this.headerLength, pos, pos + n);
      this.headerLength += n;
      pos += n;
      if (this.headerLength === HEADER_SIZE) {
        this.headerLength = 0;
        const h = this.header;
        this.beginPayload(this.startFrame(h[0] as number, h.readUInt16BE(1), h.readUInt32BE(3)));
      }
    }
  }

  /** Checks a frame header before anything of its payload is buffered; returns the payload size. */
  private startFrame(type: number, channel: number, size: number): number {
    if (type !== FrameType.METHOD && type !== FrameType.HEADER && type !== FrameType.BODY) {
      if (type !== FrameType.HEARTBEAT) throw frameError(`unknown frame type ${type}`);
      // The spec: heartbeat frames are on channel 0 and carry nothing; anything else is a 501.
      if (channel !== 0) throw frameError(`heartbeat frame on channel ${channel}`);
      if (size !== 0) throw frameError(`heartbeat frame with a ${size}-byte payload`);
    }
    if (size > this.frameMax - FRAME_OVERHEAD) {
      throw frameError(`frame size ${size + FRAME_OVERHEAD} > negotiated max ${this.frameMax}`);
    }
    this.type = type;
    this.channel = channel;
    return size;
  }

  private beginPayload(size: number): void {
    this.payload = Buffer.allocUnsafe(size);
    this.payloadLength = 0;
    this.awaitingEnd = size === 0;
  }

  private checkEnd(octet: number): void {
    if (octet !== FRAME_END) {
      throw frameError(`frame-end octet is 0x${octet.toString(16)}, expected 0xce (type ${this.type})`);
    }
  }

  private emit(sink: FrameSink): void {
    const payload = this.payload as Buffer;
    this.payload = undefined;
    this.awaitingEnd = false;
    sink(this.type, this.channel, payload, 0, payload.length);
  }
}
