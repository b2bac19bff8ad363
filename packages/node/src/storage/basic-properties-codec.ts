/**
 * BasicProperties on their own as protobuf bytes, in the wire schema's encoding (so a stored
 * message keeps exactly what the publisher sent, field tables with their order and types).
 *
 * `@styx/client/wire` exports only whole-batch codecs, so this wraps the properties in the
 * smallest batch that carries them (one `basicPublish` frame with nothing else set) and cuts them
 * out again. When the wire module exports a properties codec of its own, replace the bodies of
 * the two functions below with it: the bytes are the same.
 */
import type { BasicProperties, Frame } from '@styx/client/wire';
import { decodeBatch, encodeBatch } from '@styx/client/wire';
import { varintSize, writeVarint } from './binary.ts';
import { StoredBytesCorruptedError } from './errors.ts';

// Field numbers and wire types of the envelope, from proto/styx.proto.
/** Batch.frames = 1 */
const BATCH_FRAMES_FIELD = 1;
/** Frame.basic_publish = 56 */
const FRAME_BASIC_PUBLISH_FIELD = 56;
/** BasicPublish.properties = 5 */
const PUBLISH_PROPERTIES_FIELD = 5;
const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

const EMPTY = new Uint8Array(0);

/** True when no property is set (an absent property is undefined or null). */
function isEmpty(properties: BasicProperties): boolean {
  for (const key in properties) {
    if (properties[key as keyof BasicProperties] != null) return false;
  }
  return true;
}

/**
 * The protobuf encoding of `properties` (a `BasicProperties` message). Empty properties encode to
 * zero bytes. Accepts plain objects and decoded wire messages alike.
 */
export function encodeBasicProperties(properties: BasicProperties): Uint8Array {
  if (isEmpty(properties)) return EMPTY;
  const envelope: Frame = {
    channel: 0,
    method: 'basicPublish',
    basicPublish: {
      exchange: '',
      routingKey: '',
      mandatory: false,
      immediate: false,
      properties,
      body: EMPTY,
    },
  };
  const batch = encodeBatch([envelope]);
  const frame = findLengthDelimited(batch, 0, batch.length, BATCH_FRAMES_FIELD);
  const publish = findLengthDelimited(batch, frame.start, frame.end, FRAME_BASIC_PUBLISH_FIELD);
  const props = findLengthDelimited(batch, publish.start, publish.end, PUBLISH_PROPERTIES_FIELD);
  return batch.subarray(props.start, props.end);
}

/**
 * Decode what `encodeBasicProperties` wrote. The result is a plain object holding only the set
 * properties (so it may be spread); a `headers` table is the wire decoder's message instance.
 */
export function decodeBasicProperties(bytes: Uint8Array): BasicProperties {
  if (bytes.length === 0) return {};
  // Rebuild the envelope around the bytes: Batch{frames: Frame{basicPublish: {properties}}}.
  const publishSize = tagSize(PUBLISH_PROPERTIES_FIELD) + varintSize(bytes.length) + bytes.length;
  const frameSize = tagSize(FRAME_BASIC_PUBLISH_FIELD) + varintSize(publishSize) + publishSize;
  const batch = new Uint8Array(tagSize(BATCH_FRAMES_FIELD) + varintSize(frameSize) + frameSize);
  let pos = writeTag(batch, 0, BATCH_FRAMES_FIELD);
  pos = writeVarint(batch, pos, frameSize);
  pos = writeTag(batch, pos, FRAME_BASIC_PUBLISH_FIELD);
  pos = writeVarint(batch, pos, publishSize);
  pos = writeTag(batch, pos, PUBLISH_PROPERTIES_FIELD);
  pos = writeVarint(batch, pos, bytes.length);
  batch.set(bytes, pos);
  let decoded: BasicProperties | null | undefined;
  try {
    const [frame] = decodeBatch(batch);
    if (frame?.method === 'basicPublish') decoded = frame.basicPublish.properties;
  } catch (error) {
    throw new StoredBytesCorruptedError('stored BasicProperties', String(error));
  }
  if (decoded == null) throw new StoredBytesCorruptedError('stored BasicProperties', 'no properties decoded');
  // A decoded message has own properties exactly for the fields that were set; absent ones read
  // null from its prototype. Copy the set ones into a plain object.
  const plain: Record<string, unknown> = {};
  for (const key of Object.keys(decoded)) plain[key] = decoded[key as keyof BasicProperties];
  return plain as BasicProperties;
}

function tagSize(field: number): number {
  return varintSize(field * 8);
}

function writeTag(buf: Uint8Array, pos: number, field: number): number {
  return writeVarint(buf, pos, field * 8 + WIRE_LENGTH_DELIMITED);
}

/** The content range of the first length-delimited field `field` in `bytes[start, end)`. */
function findLengthDelimited(
  bytes: Uint8Array,
  start: number,
  end: number,
  field: number,
): { start: number; end: number } {
  let pos = start;
  while (pos < end) {
    const [key, afterKey] = readVarint(bytes, pos);
    pos = afterKey;
    const wireType = key & 7;
    const number = Math.floor(key / 8);
    switch (wireType) {
      case WIRE_VARINT:
        pos = readVarint(bytes, pos)[1];
        break;
      case WIRE_FIXED64:
        pos += 8;
        break;
      case WIRE_FIXED32:
        pos += 4;
        break;
      case WIRE_LENGTH_DELIMITED: {
        const [size, contentStart] = readVarint(bytes, pos);
        if (number === field) return { start: contentStart, end: contentStart + size };
        pos = contentStart + size;
        break;
      }
      default:
        throw new Error(`unexpected protobuf wire type ${wireType} in an encoded envelope`);
    }
  }
  throw new Error(`field ${field} missing from an encoded envelope`);
}

function readVarint(bytes: Uint8Array, pos: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (;;) {
    const byte = bytes[pos++];
    if (byte === undefined) throw new Error('truncated varint in an encoded envelope');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, pos];
    scale *= 0x80;
  }
}
