import type { BasicProperties } from '@styx/client/wire';
import { AmqpWriter } from './amqp-writer.ts';
import { AmqpEncodeError } from './codec-error.ts';
import { FRAME_END, FRAME_MIN_SIZE, FRAME_OVERHEAD, FrameType } from './frame-parser.ts';
import type { AmqpMethodInit } from './spec.gen.ts';
import { encodeBasicProperties, encodeMethodFields } from './spec.gen.ts';

/** The heartbeat frame (type 8, channel 0, empty). */
export const HEARTBEAT_FRAME: Buffer = Buffer.from([FrameType.HEARTBEAT, 0, 0, 0, 0, 0, 0, FRAME_END]);

// One scratch writer for the module: encoding is synchronous, so it is never shared mid-frame, and
// its grown buffer is kept between calls.
const scratch = new AmqpWriter(4096);

/** Past this size (bytes) the scratch buffer is dropped after use, so one big message does not pin it. */
const SCRATCH_KEEP = 1 << 20;

function takeScratch(): Buffer {
  const out = scratch.take();
  if (scratch.buf.length > SCRATCH_KEEP) scratch.buf = Buffer.allocUnsafe(4096);
  return out;
}

function beginFrame(w: AmqpWriter, type: number, channel: number): number {
  w.ensure(7);
  w.buf[w.pos] = type;
  w.buf.writeUInt16BE(channel, w.pos + 1);
  const sizeAt = w.pos + 3;
  w.pos += 7;
  return sizeAt;
}

function endFrame(w: AmqpWriter, sizeAt: number): void {
  w.buf.writeUInt32BE(w.pos - sizeAt - 4, sizeAt);
  w.ensure(1);
  w.buf[w.pos++] = FRAME_END;
}

function checkChannel(channel: number): void {
  if (!Number.isInteger(channel) || channel < 0 || channel > 0xffff) {
    throw new AmqpEncodeError(`channel must be in 0..65535, got ${channel}`);
  }
}

/** Appends a method frame to `w`. */
export function writeMethodFrame(w: AmqpWriter, channel: number, method: AmqpMethodInit): void {
  checkChannel(channel);
  const at = beginFrame(w, FrameType.METHOD, channel);
  encodeMethodFields(w, method);
  endFrame(w, at);
}

/** Appends a content header frame (class 60, weight 0) to `w`. */
export function writeHeaderFrame(
  w: AmqpWriter,
  channel: number,
  bodySize: number,
  properties: BasicProperties,
): void {
  const at = beginFrame(w, FrameType.HEADER, channel);
  w.short(60);
  w.short(0);
  w.longlong(bodySize);
  encodeBasicProperties(w, properties);
  endFrame(w, at);
}

/**
 * Appends the body frames for `body`, each payload at most frameMax - 8 bytes (the negotiated
 * frame-max includes the frame's own 8 bytes); an empty body has no body frame.
 */
export function writeBodyFrames(w: AmqpWriter, channel: number, body: Uint8Array, frameMax: number): void {
  const max = bodyChunkSize(frameMax);
  for (let off = 0; off < body.length; off += max) {
    const end = Math.min(body.length, off + max);
    const at = beginFrame(w, FrameType.BODY, channel);
    w.raw(body.subarray(off, end));
    endFrame(w, at);
  }
}

/** The largest body-frame payload for a frame-max (bytes); refuses a frame-max below the spec's floor. */
export function bodyChunkSize(frameMax: number): number {
  if (!Number.isInteger(frameMax) || frameMax < FRAME_MIN_SIZE) {
    throw new AmqpEncodeError(`frameMax must be an integer >= ${FRAME_MIN_SIZE}, got ${frameMax}`);
  }
  return frameMax - FRAME_OVERHEAD;
}

/** One method frame, as its own Buffer. */
export function encodeMethodFrame(channel: number, method: AmqpMethodInit): Buffer {
  writeMethodFrame(scratch.reset(), channel, method);
  return takeScratch();
}

/**
 * A content-carrying method (basic.publish, .return, .deliver, .get-ok) with its header and body
 * frames, as one Buffer ready for one socket write: the body is split at `frameMax`.
 */
export function encodeContentFrames(
  channel: number,
  method: AmqpMethodInit,
  properties: BasicProperties,
  body: Uint8Array,
  frameMax: number,
): Buffer {
  const w = scratch.reset();
  writeMethodFrame(w, channel, method);
  writeHeaderFrame(w, channel, body.length, properties);
  writeBodyFrames(w, channel, body, frameMax);
  return takeScratch();
}
