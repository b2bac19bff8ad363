// Hand-written protobuf for the hot frames: a batch decoder, and whole-frame encoders for BasicPublish,
// BasicDeliver, BasicAck, BasicNack and BasicReject. Brokers and clients encode and decode these for
// every message; through protobufjs each costs a reflection-driven writer or reader, a message instance
// per level, and on decode a oneof setter that deletes every other method (48 of them) one by one.
//
// Byte-compatible with protobufjs (the schema's codec, proto/styx.proto):
//  - the encoders write what protobufjs writes for the same values (fields in field-number order, proto3
//    default scalars left out, a message field written when present even if empty);
//  - the decoder gives, for any input, what protobufjs 8's generated decoder gives (same values, or an
//    error where it throws), with wire-reader.ts's primitives: a field whose wire type does not match the
//    schema is skipped as an unknown field, unknown fields are skipped by wire type, a repeated scalar
//    field is last-wins, a repeated message field merges. Properties are decoded by properties-codec.ts
//    into protobufjs's own message instances; frames of any other method, or with more than one method
//    field, are decoded by protobufjs whole. fast-codec.test.ts checks all of this against protobufjs on
//    random frames and on malformed bytes.
import type protobuf from 'protobufjs';
import { markBatchRoom } from './batch-room.ts';
import { createNumberReader } from './number-reader.ts';
import { readPropertiesMessage } from './properties-codec.ts';
import { rememberPropertiesEncoding } from './properties-encoding.ts';
import { EMPTY_BYTES, FrameType } from './schema.ts';
import type {
  BasicAck,
  BasicDeliver,
  BasicNack,
  BasicProperties,
  BasicPublish,
  BasicReject,
  Frame,
  MethodName,
} from './types.ts';
import { METHOD_NAMES } from './types.ts';
import { WireError } from './wire-error.ts';
import {
  cursor,
  LEN,
  outOfRange,
  readBool,
  readBytesOrDefault,
  readLengthDelimited,
  readSize,
  readString,
  readTag,
  readUint32,
  readUint64,
  skipField,
  startReading,
  stopReading,
  VARINT,
} from './wire-reader.ts';
import {
  alloc,
  lenFieldSize,
  splitUint64,
  utf8Length,
  varint32Size,
  varint64Size,
  writeBytesField,
  writeStringField,
  writeVarint32,
  writeVarint64,
} from './wire-writer.ts';

/** Frame field number of a method (the schema is the source of truth). */
function methodField(name: MethodName): number {
  const field = FrameType.fields[name];
  if (field === undefined) throw new Error(`the wire schema has no method ${name}`);
  return field.id;
}

const BASIC_PUBLISH = methodField('basicPublish');
const BASIC_DELIVER = methodField('basicDeliver');
const BASIC_ACK = methodField('basicAck');
const BASIC_NACK = methodField('basicNack');
const BASIC_REJECT = methodField('basicReject');

/** Whether a Frame field number is one of the `method` oneof's, indexed by field number. */
const IS_METHOD_FIELD: readonly boolean[] = (() => {
  const out: boolean[] = [];
  for (const name of METHOD_NAMES) out[methodField(name)] = true;
  return Array.from(out, (v) => v === true);
})();

/** The generated protobufjs decoder's full signature: reader, length, end-group tag, depth. */
interface DepthDecoder {
  decode(r: protobuf.Reader, length: number, endGroup: undefined, depth: number): unknown;
}

// ================================================================================================ decode

/** A protobufjs reader over the batch, made on first need (frames decoded by protobufjs). */
let reader: protobuf.Reader | undefined;

function batchReader(): protobuf.Reader {
  if (reader === undefined) reader = createNumberReader(cursor.buf);
  return reader;
}

/** Where the content of the last properties field read starts (its end is then `cursor.pos`). */
let propertiesStart = 0;

/** A `properties` field at depth 3 (Batch 0, Frame 1, method 2), merged into `into` if it came before. */
function readProperties(end: number, into: BasicProperties | null): BasicProperties {
  const length = readSize(end);
  propertiesStart = cursor.pos;
  if (propertiesStart + length > end) throw outOfRange(length, end);
  return readPropertiesMessage(propertiesStart + length, 3, into ?? undefined);
}

function decodePublish(end: number): BasicPublish {
  let exchange = '';
  let routingKey = '';
  let mandatory = false;
  let immediate = false;
  let properties: BasicProperties | null = null;
  let propertiesFields = 0;
  let rawStart = 0;
  let rawEnd = 0;
  let body: Uint8Array = EMPTY_BYTES;
  let bodySize = 0;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === LEN) exchange = readString(end);
    else if (field === 2 && wireType === LEN) routingKey = readString(end);
    else if (field === 3 && wireType === VARINT) mandatory = readBool(end);
    else if (field === 4 && wireType === VARINT) immediate = readBool(end);
    else if (field === 5 && wireType === LEN) {
      properties = readProperties(end, properties);
      rawStart = propertiesStart;
      rawEnd = cursor.pos;
      propertiesFields++;
    } else if (field === 6 && wireType === LEN) body = readBytesOrDefault(end);
    else if (field === 7 && wireType === VARINT) bodySize = readUint64(end);
    else skipField(wireType, 2, field, end);
  }
  // The publisher's bytes are these properties' encoding, unless the field came in several pieces
  // (merged into one object by the decoder). Copied (tens of bytes): a view would keep the whole
  // network batch alive for as long as the queued message keeps its properties.
  if (propertiesFields === 1)
    rememberPropertiesEncoding(
      properties as BasicProperties,
      new Uint8Array(cursor.buf.subarray(rawStart, rawEnd)),
    );
  return { exchange, routingKey, mandatory, immediate, properties, body, bodySize };
}

function decodeDeliver(end: number): BasicDeliver {
  let consumerTag = '';
  let deliveryTag = 0;
  let redelivered = false;
  let exchange = '';
  let routingKey = '';
  let properties: BasicProperties | null = null;
  let body: Uint8Array = EMPTY_BYTES;
  let bodySize = 0;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === LEN) consumerTag = readString(end);
    else if (field === 2 && wireType === VARINT) deliveryTag = readUint64(end);
    else if (field === 3 && wireType === VARINT) redelivered = readBool(end);
    else if (field === 4 && wireType === LEN) exchange = readString(end);
    else if (field === 5 && wireType === LEN) routingKey = readString(end);
    else if (field === 6 && wireType === LEN) properties = readProperties(end, properties);
    else if (field === 7 && wireType === LEN) body = readBytesOrDefault(end);
    else if (field === 12 && wireType === VARINT) bodySize = readUint64(end);
    else skipField(wireType, 2, field, end);
  }
  return { consumerTag, deliveryTag, redelivered, exchange, routingKey, properties, body, bodySize };
}

function decodeAck(end: number): BasicAck {
  let deliveryTag = 0;
  let multiple = false;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === VARINT) deliveryTag = readUint64(end);
    else if (field === 2 && wireType === VARINT) multiple = readBool(end);
    else skipField(wireType, 2, field, end);
  }
  return { deliveryTag, multiple };
}

function decodeNack(end: number): BasicNack {
  let deliveryTag = 0;
  let multiple = false;
  let requeue = false;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === VARINT) deliveryTag = readUint64(end);
    else if (field === 2 && wireType === VARINT) multiple = readBool(end);
    else if (field === 3 && wireType === VARINT) requeue = readBool(end);
    else skipField(wireType, 2, field, end);
  }
  return { deliveryTag, multiple, requeue };
}

function decodeReject(end: number): BasicReject {
  let deliveryTag = 0;
  let requeue = false;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === VARINT) deliveryTag = readUint64(end);
    else if (field === 2 && wireType === VARINT) requeue = readBool(end);
    else skipField(wireType, 2, field, end);
  }
  return { deliveryTag, requeue };
}

/** A frame whose method field is missing: reported once the whole batch has decoded, as before. */
interface MethodlessFrame {
  channel: number;
  method: undefined;
}

/**
 * One Frame, from `cursor.pos` to `end`, at depth 1. Scans the fields first: a frame with exactly one
 * method field, of a hot method, is decoded here; one with several method fields (merged and last-wins
 * in protobufjs) or of another method is decoded by protobufjs.
 */
function decodeFrame(end: number, batchEnd: number): Frame | MethodlessFrame {
  const start = cursor.pos;
  let channel = 0;
  let methods = 0;
  let methodField = 0;
  let methodStart = 0;
  let methodEnd = 0;
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === VARINT) {
      channel = readUint32(end);
    } else if (wireType === LEN && field < IS_METHOD_FIELD.length && IS_METHOD_FIELD[field] === true) {
      methodStart = readLengthDelimited(end);
      methodEnd = cursor.pos;
      methodField = field;
      methods++;
    } else {
      skipField(wireType, 1, field, end);
    }
  }
  if (methods === 0) return { channel, method: undefined };
  if (methods === 1) {
    cursor.pos = methodStart;
    switch (methodField) {
      case BASIC_PUBLISH:
        return { channel, method: 'basicPublish', basicPublish: decodePublish(methodEnd) };
      case BASIC_DELIVER:
        return { channel, method: 'basicDeliver', basicDeliver: decodeDeliver(methodEnd) };
      case BASIC_ACK:
        return { channel, method: 'basicAck', basicAck: decodeAck(methodEnd) };
      case BASIC_NACK:
        return { channel, method: 'basicNack', basicNack: decodeNack(methodEnd) };
      case BASIC_REJECT:
        return { channel, method: 'basicReject', basicReject: decodeReject(methodEnd) };
      default:
        break;
    }
  }
  const r = batchReader();
  r.pos = start;
  r.len = batchEnd;
  const decoded = (FrameType as unknown as DepthDecoder).decode(r, end - start, undefined, 1);
  cursor.pos = r.pos;
  return decoded as Frame;
}

/**
 * Decodes one batch (the implementation of `decodeBatch`, codec.ts, which states the contract).
 * Throws WireError 502 SYNTAX_ERROR, and nothing else, when the bytes do not decode or a frame has no method.
 */
export function decodeFrames(bytes: Uint8Array): Frame[] {
  const frames: Frame[] = [];
  let methodless = -1;
  startReading(bytes);
  reader = undefined;
  try {
    const end = bytes.length;
    while (cursor.pos < end) {
      const tag = readTag(end);
      const field = tag >>> 3;
      const wireType = tag & 7;
      if (field === 1 && wireType === LEN) {
        const length = readSize(end);
        if (cursor.pos + length > end) throw outOfRange(length, end);
        const frame = decodeFrame(cursor.pos + length, end);
        if (frame.method === undefined && methodless < 0) methodless = frames.length;
        frames.push(frame as Frame);
      } else {
        skipField(wireType, 0, field, end);
      }
    }
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw WireError.syntax(`undecodable batch of ${bytes.length} bytes: ${reason}`, err);
  } finally {
    // The batch must not outlive the decode through module state.
    stopReading();
    reader = undefined;
  }
  if (methodless >= 0) {
    const channel = (frames[methodless] as { channel: number }).channel;
    throw WireError.syntax(`frame ${methodless} of the batch (channel ${channel}) carries no known method`);
  }
  return frames;
}

// ================================================================================================ encode
//
// Each encoder measures the frame, allocates it once (a Buffer under Node, from its pool when small),
// and writes it front to back. A frame: [channel: 0x08 varint, when not 0] [the method field's tag,
// 2 bytes] [varint length] [the method's fields in field-number order, defaults left out].

/** Bytes the delivery tag field adds: none for 0, as protobufjs (which tests `!== 0`, so NaN is written). */
function tagFieldSize(deliveryTag: number): number {
  if (deliveryTag === 0) return 0;
  splitUint64(deliveryTag);
  return 1 + varint64Size();
}

/** Writes the delivery tag field measured last by tagFieldSize. */
function writeTagField(out: Uint8Array, p: number, tag: number, deliveryTag: number): number {
  if (deliveryTag === 0) return p;
  out[p++] = tag;
  return writeVarint64(out, p);
}

/** Bytes a string field adds (nothing for ''), given its UTF-8 length. */
function stringFieldSize(length: number): number {
  return length === 0 ? 0 : lenFieldSize(length);
}

function writeOptionalString(out: Uint8Array, p: number, tag: number, s: string, length: number): number {
  return length === 0 ? p : writeStringField(out, p, tag, s, length);
}

function writeTrue(out: Uint8Array, p: number, tag: number): number {
  out[p] = tag;
  out[p + 1] = 1;
  return p + 2;
}

/**
 * Frames of this many bytes or more (a large body) are allocated with room for their batch prefix
 * in front (batch-room.ts): sent alone in a WebSocket message, as such a frame usually is, it is not
 * copied again into the batch. Smaller ones come from Buffer's pool and are joined as usual.
 */
const BATCH_ROOM_FROM = 64 * 1024;

function allocWithBatchRoom(size: number): Uint8Array {
  const room = 1 + varint32Size(size);
  return markBatchRoom(alloc(room + size).subarray(room));
}

/** The frame being written (module state, released by `finishFrame`). */
let frameOut: Uint8Array = EMPTY_BYTES;

/** Allocates a frame of `methodField` whose method message takes `inner` bytes; writes up to the method. */
function startFrame(channel: number, methodField: number, inner: number): number {
  const methodTag = (methodField << 3) | LEN;
  const size =
    (channel === 0 ? 0 : 1 + varint32Size(channel)) + varint32Size(methodTag) + varint32Size(inner) + inner;
  const out = size < BATCH_ROOM_FROM ? alloc(size) : allocWithBatchRoom(size);
  let p = 0;
  if (channel !== 0) {
    out[p++] = 0x08;
    p = writeVarint32(out, p, channel);
  }
  p = writeVarint32(out, p, methodTag);
  frameOut = out;
  return writeVarint32(out, p, inner);
}

function finishFrame(): Uint8Array {
  const out = frameOut;
  frameOut = EMPTY_BYTES;
  return out;
}

/**
 * A whole BasicDeliver frame: the bytes `encodeFrame` gives for these values. `properties` is the
 * message's BasicProperties already encoded (`encodePropertiesOnce` or `encodeProperties`); undefined
 * leaves the field out (the receiver reads null). `deliveryTag` is exact up to 2^53 - 1.
 */
export function encodeDeliverFrame(
  channel: number,
  consumerTag: string,
  deliveryTag: number,
  redelivered: boolean,
  exchange: string,
  routingKey: string,
  properties: Uint8Array | undefined,
  body: Uint8Array,
  bodySize = 0,
): Uint8Array {
  const consumerTagLength = utf8Length(consumerTag);
  const exchangeLength = utf8Length(exchange);
  const routingKeyLength = utf8Length(routingKey);
  // Measured before the delivery tag, whose split the tag writer uses next.
  const bodySizeBytes = tagFieldSize(bodySize);
  const inner =
    stringFieldSize(consumerTagLength) +
    tagFieldSize(deliveryTag) +
    (redelivered ? 2 : 0) +
    stringFieldSize(exchangeLength) +
    stringFieldSize(routingKeyLength) +
    (properties === undefined ? 0 : lenFieldSize(properties.length)) +
    (body.length === 0 ? 0 : lenFieldSize(body.length)) +
    bodySizeBytes;
  let p = startFrame(channel >>> 0, BASIC_DELIVER, inner);
  const out = frameOut;
  p = writeOptionalString(out, p, 0x0a, consumerTag, consumerTagLength);
  p = writeTagField(out, p, 0x10, deliveryTag);
  if (redelivered) p = writeTrue(out, p, 0x18);
  p = writeOptionalString(out, p, 0x22, exchange, exchangeLength);
  p = writeOptionalString(out, p, 0x2a, routingKey, routingKeyLength);
  if (properties !== undefined) p = writeBytesField(out, p, 0x32, properties);
  if (body.length !== 0) p = writeBytesField(out, p, 0x3a, body);
  if (bodySize !== 0) {
    tagFieldSize(bodySize); // measured again: the varint writer writes what was measured last
    writeTagField(out, p, 0x60, bodySize);
  }
  return finishFrame();
}

/**
 * A whole BasicPublish frame: the bytes `encodeFrame` gives for these values. `properties` is the
 * BasicProperties already encoded (`encodeProperties`); undefined leaves the field out.
 */
export function encodePublishFrame(
  channel: number,
  exchange: string,
  routingKey: string,
  mandatory: boolean,
  immediate: boolean,
  properties: Uint8Array | undefined,
  body: Uint8Array,
  bodySize = 0,
): Uint8Array {
  const exchangeLength = utf8Length(exchange);
  const routingKeyLength = utf8Length(routingKey);
  const inner =
    stringFieldSize(exchangeLength) +
    stringFieldSize(routingKeyLength) +
    (mandatory ? 2 : 0) +
    (immediate ? 2 : 0) +
    (properties === undefined ? 0 : lenFieldSize(properties.length)) +
    (body.length === 0 ? 0 : lenFieldSize(body.length)) +
    tagFieldSize(bodySize);
  let p = startFrame(channel >>> 0, BASIC_PUBLISH, inner);
  const out = frameOut;
  p = writeOptionalString(out, p, 0x0a, exchange, exchangeLength);
  p = writeOptionalString(out, p, 0x12, routingKey, routingKeyLength);
  if (mandatory) p = writeTrue(out, p, 0x18);
  if (immediate) p = writeTrue(out, p, 0x20);
  if (properties !== undefined) p = writeBytesField(out, p, 0x2a, properties);
  if (body.length !== 0) p = writeBytesField(out, p, 0x32, body);
  if (bodySize !== 0) {
    tagFieldSize(bodySize); // measured again: the varint writer writes what was measured last
    writeTagField(out, p, 0x38, bodySize);
  }
  return finishFrame();
}

/** A whole BasicAck frame (a consumer's ack, or a publisher confirm): the bytes `encodeFrame` gives. */
export function encodeAckFrame(channel: number, deliveryTag: number, multiple: boolean): Uint8Array {
  const inner = tagFieldSize(deliveryTag) + (multiple ? 2 : 0);
  let p = startFrame(channel >>> 0, BASIC_ACK, inner);
  const out = frameOut;
  p = writeTagField(out, p, 0x08, deliveryTag);
  if (multiple) writeTrue(out, p, 0x10);
  return finishFrame();
}

/** A whole BasicNack frame (a consumer's nack, or a negative confirm): the bytes `encodeFrame` gives. */
export function encodeNackFrame(
  channel: number,
  deliveryTag: number,
  multiple: boolean,
  requeue: boolean,
): Uint8Array {
  const inner = tagFieldSize(deliveryTag) + (multiple ? 2 : 0) + (requeue ? 2 : 0);
  let p = startFrame(channel >>> 0, BASIC_NACK, inner);
  const out = frameOut;
  p = writeTagField(out, p, 0x08, deliveryTag);
  if (multiple) p = writeTrue(out, p, 0x10);
  if (requeue) writeTrue(out, p, 0x18);
  return finishFrame();
}

/** A whole BasicReject frame: the bytes `encodeFrame` gives. */
export function encodeRejectFrame(channel: number, deliveryTag: number, requeue: boolean): Uint8Array {
  const inner = tagFieldSize(deliveryTag) + (requeue ? 2 : 0);
  let p = startFrame(channel >>> 0, BASIC_REJECT, inner);
  const out = frameOut;
  p = writeTagField(out, p, 0x08, deliveryTag);
  if (requeue) writeTrue(out, p, 0x10);
  return finishFrame();
}
