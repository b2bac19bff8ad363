// Hand-tuned codecs for the frames on every message's path: basic.deliver + content header + body
// (encode), basic.publish and basic.ack (decode), basic.ack (encode). They write and read the same
// bytes as the generated codec (spec.gen.ts) — a unit test checks byte for byte — but size the
// output once and allocate one Buffer per delivery, and read straight from the frame without a
// reader or a method wrapper.
import type { BasicProperties } from '@styx/client/wire';
import { AmqpWriter } from './amqp-writer.ts';
import { AmqpEncodeError, frameError } from './codec-error.ts';
import { bodyChunkSize } from './frame-encoder.ts';
import { FRAME_END, FrameType } from './frame-parser.ts';
import type { BasicAck, BasicPublish } from './spec.gen.ts';
import { encodeBasicProperties } from './spec.gen.ts';

const TWO_32 = 0x1_0000_0000;

/** basic.deliver's fields. */
export interface DeliverFields {
  consumerTag: string;
  deliveryTag: number;
  redelivered: boolean;
  exchange: string;
  routingKey: string;
}

const propertiesWriter = new AmqpWriter(256);

/**
 * A content header's property bytes (flags and values) for `properties`, to encode once per
 * message and reuse for every delivery of it.
 */
export function encodePropertiesBytes(properties: BasicProperties): Buffer {
  encodeBasicProperties(propertiesWriter.reset(), properties);
  const out = propertiesWriter.take();
  if (propertiesWriter.buf.length > 1 << 20) propertiesWriter.buf = Buffer.allocUnsafe(256);
  return out;
}

/**
 * The UTF-8 length of a shortstr, checked (≤ 255). An ASCII string's length is its byte count,
 * found by a loop: Buffer.byteLength is a native call that cost more than the loop for strings
 * this short (a delivery encodes three: consumer tag, exchange, routing key).
 */
function shortstrLength(s: string, what: string): number {
  let n = s.length;
  if (n <= 255) {
    let i = 0;
    while (i < n && s.charCodeAt(i) < 0x80) i++;
    if (i === n) return n;
  }
  n = Buffer.byteLength(s, 'utf8');
  if (n > 255) throw new AmqpEncodeError(`${what} is ${n} bytes, more than 255`);
  return n;
}

function checkDeliveryTag(tag: number): void {
  if (!Number.isSafeInteger(tag) || tag < 0) {
    throw new AmqpEncodeError(`delivery tag must be a safe integer >= 0, got ${tag}`);
  }
}

function writeU64(buf: Buffer, v: number, at: number): void {
  const high = Math.floor(v / TWO_32);
  buf.writeUInt32BE(high, at);
  buf.writeUInt32BE(v - high * TWO_32, at + 4);
}

/** Writes shortstr `s` of `n` UTF-8 bytes (from shortstrLength) at `at`; an ASCII one by a loop. */
function writeShortstr(buf: Buffer, s: string, n: number, at: number): number {
  buf[at] = n;
  if (n === s.length) {
    // n bytes for n UTF-16 units: every one is ASCII.
    for (let i = 0; i < n; i++) buf[at + 1 + i] = s.charCodeAt(i);
  } else buf.write(s, at + 1, n, 'utf8');
  return at + 1 + n;
}

/**
 * basic.deliver, its content header and its body frames on `channel`, as one Buffer:
 * `propertiesBytes` comes from encodePropertiesBytes (or a header kept from the publish), and the
 * body is split at `frameMax` as the generated path would.
 */
export function encodeDeliverFrames(
  channel: number,
  d: DeliverFields,
  propertiesBytes: Uint8Array,
  body: Uint8Array,
  frameMax: number,
): Buffer {
  const chunk = bodyChunkSize(frameMax);
  if (!Number.isInteger(channel) || channel < 0 || channel > 0xffff) {
    throw new AmqpEncodeError(`channel must be in 0..65535, got ${channel}`);
  }
  checkDeliveryTag(d.deliveryTag);
  const tagLen = shortstrLength(d.consumerTag, 'consumer tag');
  const exLen = shortstrLength(d.exchange, 'exchange');
  const rkLen = shortstrLength(d.routingKey, 'routing key');
  const methodPayload = 4 + 1 + tagLen + 8 + 1 + 1 + exLen + 1 + rkLen;
  const headerPayload = 12 + propertiesBytes.length;
  const bodyFrames = Math.ceil(body.length / chunk);
  const total = 8 + methodPayload + 8 + headerPayload + bodyFrames * 8 + body.length;
  const buf = Buffer.allocUnsafe(total);
  // method frame
  buf[0] = FrameType.METHOD;
  buf.writeUInt16BE(channel, 1);
  buf.writeUInt32BE(methodPayload, 3);
  buf.writeUInt32BE((60 << 16) | 60, 7);
  let p = writeShortstr(buf, d.consumerTag, tagLen, 11);
  writeU64(buf, d.deliveryTag, p);
  p += 8;
  buf[p++] = d.redelivered ? 1 : 0;
  p = writeShortstr(buf, d.exchange, exLen, p);
  p = writeShortstr(buf, d.routingKey, rkLen, p);
  buf[p++] = FRAME_END;
  // content header frame: class 60, weight 0, body size, properties
  buf[p] = FrameType.HEADER;
  buf.writeUInt16BE(channel, p + 1);
  buf.writeUInt32BE(headerPayload, p + 3);
  buf.writeUInt32BE(60 << 16, p + 7);
  writeU64(buf, body.length, p + 11);
  buf.set(propertiesBytes, p + 19);
  p += 19 + propertiesBytes.length;
  buf[p++] = FRAME_END;
  // body frames
  for (let off = 0; off < body.length; off += chunk) {
    const n = Math.min(chunk, body.length - off);
    buf[p] = FrameType.BODY;
    buf.writeUInt16BE(channel, p + 1);
    buf.writeUInt32BE(n, p + 3);
    buf.set(n === body.length ? body : body.subarray(off, off + n), p + 7);
    p += 7 + n;
    buf[p++] = FRAME_END;
  }
  return buf;
}

/** basic.ack (server → publisher confirm, or either way) as one 21-byte frame. */
export function encodeAckFrame(channel: number, deliveryTag: number, multiple: boolean): Buffer {
  checkDeliveryTag(deliveryTag);
  const buf = Buffer.allocUnsafe(21);
  buf[0] = FrameType.METHOD;
  buf.writeUInt16BE(channel, 1);
  buf.writeUInt32BE(13, 3);
  buf.writeUInt32BE((60 << 16) | 80, 7);
  writeU64(buf, deliveryTag, 11);
  buf[19] = multiple ? 1 : 0;
  buf[20] = FRAME_END;
  return buf;
}

function truncated(what: string, methodId: number): never {
  throw frameError(`truncated ${what}`, 60, methodId);
}

/**
 * basic.publish's fields from a method frame's payload (`buf[start, end)`, class and method ids
 * included), read directly; the same result and the same errors (501 for truncated or trailing
 * bytes) as the generated decoder.
 */
export function readBasicPublish(buf: Buffer, start = 0, end = buf.length): BasicPublish {
  if (end - start < 7) truncated('basic.publish', 40);
  const ticket = buf.readUInt16BE(start + 4);
  const exLen = buf[start + 6] as number;
  const exStart = start + 7;
  let p = exStart + exLen;
  if (p + 1 > end) truncated('basic.publish exchange', 40);
  const exchange = exLen === 0 ? '' : buf.toString('utf8', exStart, p);
  const rkLen = buf[p] as number;
  const rkStart = p + 1;
  p = rkStart + rkLen;
  if (p + 1 > end) truncated('basic.publish routing key', 40);
  const routingKey = lastRoutingKey.read(buf, rkStart, p);
  const bits = buf[p] as number;
  if (p + 1 !== end) throw frameError(`basic.publish has ${end - p - 1} bytes after its fields`, 60, 40);
  return { ticket, exchange, routingKey, mandatory: (bits & 1) !== 0, immediate: (bits & 2) !== 0 };
}

/**
 * The last short string read, and its bytes: a publisher usually sends the same routing key
 * message after message, so comparing a few bytes replaces decoding them into a new string.
 */
class ShortStringMemo {
  private bytes = Buffer.alloc(255);
  private length = -1;
  private value = '';

  read(buf: Buffer, start: number, end: number): string {
    const n = end - start;
    if (n === this.length && this.matches(buf, start, n)) return this.value;
    const value = buf.toString('utf8', start, end);
    buf.copy(this.bytes, 0, start, end);
    this.length = n;
    this.value = value;
    return value;
  }

  /** A loop, not Buffer.compare: for strings this short the native call costs more than it saves. */
  private matches(buf: Buffer, start: number, n: number): boolean {
    const bytes = this.bytes;
    for (let i = 0; i < n; i++) if (bytes[i] !== buf[start + i]) return false;
    return true;
  }
}

const lastRoutingKey = new ShortStringMemo();

/** basic.ack's fields from a method frame's payload (`buf[start, end)`), read directly (see readBasicPublish). */
export function readBasicAck(buf: Buffer, start = 0, end = buf.length): BasicAck {
  const n = end - start;
  if (n < 13) truncated('basic.ack', 80);
  if (n > 13) throw frameError(`basic.ack has ${n - 13} bytes after its fields`, 60, 80);
  const deliveryTag = buf.readUInt32BE(start + 4) * TWO_32 + buf.readUInt32BE(start + 8);
  return { deliveryTag, multiple: ((buf[start + 12] as number) & 1) !== 0 };
}
