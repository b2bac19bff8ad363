/**
 * BasicProperties on their own as protobuf bytes, in the wire schema's encoding (so a stored
 * message keeps exactly what the publisher sent, field tables with their order and types), through
 * the wire module's properties codec: the bytes are those a publish or deliver frame carries.
 *
 * Encodings are shared with the WebSocket transport through the wire module's per-object memory
 * (`encodePropertiesOnce`): a published message's properties are stored as the bytes the publisher
 * sent, and properties decoded here are delivered as the bytes they were decoded from.
 */
import type { BasicProperties } from '@styx/client/wire';
import { decodeProperties, encodePropertiesOnce, rememberPropertiesEncoding } from '@styx/client/wire';
import { sameBytes, sameBytesAt } from './binary.ts';
import { StoredBytesCorruptedError } from './errors.ts';

/** Property bytes longer than this are decoded every time (comparing them would cost about as much). */
const MAX_REPEATED_BYTES = 512;

/**
 * The last properties decoded, and (a copy of) their bytes: a publisher's messages mostly carry the
 * same properties (delivery mode, content type, the same headers), and their decoding was ~1.5 µs
 * of every delivery to a consumer on another node (issue 28). Equal bytes give back the same
 * object, shared: decoded properties are never modified (a message is immutable once proposed;
 * changes such as an x-death or x-delivery-count header build a new object).
 */
let lastBytes = new Uint8Array(0);
let lastDecoded: BasicProperties = {};
/** Zero bytes: no property set (shared like the others, never modified). */
const NO_PROPERTIES: BasicProperties = {};

/**
 * `decodeBasicProperties` of `bytes[start, end)`, compared with the last ones in place: a repeat
 * makes no view of the field.
 */
export function decodeBasicPropertiesAt(bytes: Uint8Array, start: number, end: number): BasicProperties {
  if (end === start) return NO_PROPERTIES;
  if (sameBytesAt(bytes, start, end, lastBytes)) return lastDecoded;
  return decodeBasicProperties(bytes.subarray(start, end));
}

/**
 * The protobuf encoding of `properties` (a `BasicProperties` message): the one remembered for this
 * object, or a fresh one (then remembered). Empty properties (none set: absent is undefined or null)
 * encode to zero bytes. Accepts plain objects and decoded wire messages alike; the result is shared:
 * never modify it.
 */
export function encodeBasicProperties(properties: BasicProperties): Uint8Array {
  return encodePropertiesOnce(properties);
}

/**
 * Decode what `encodeBasicProperties` wrote. The result is a plain object holding only the set
 * properties (so it may be spread); a `headers` table is the wire decoder's message instance.
 */
export function decodeBasicProperties(bytes: Uint8Array): BasicProperties {
  if (bytes.length === 0) return NO_PROPERTIES;
  if (sameBytes(bytes, lastBytes)) return lastDecoded;
  let decoded: BasicProperties;
  try {
    decoded = decodeProperties(bytes);
  } catch (error) {
    throw new StoredBytesCorruptedError('stored BasicProperties', String(error));
  }
  // A decoded message has own properties exactly for the fields that were set; absent ones read
  // null from its prototype. Copy the set ones into a plain object.
  const plain: Record<string, unknown> = {};
  for (const key of Object.keys(decoded)) plain[key] = decoded[key as keyof BasicProperties];
  if (bytes.length > MAX_REPEATED_BYTES) {
    // Delivered as the bytes they came from (the caller keeps `bytes` unmodified).
    rememberPropertiesEncoding(plain as BasicProperties, bytes);
    return plain as BasicProperties;
  }
  // Kept for the next messages: their own copy of the bytes, so a shared object holds on to no
  // frame or page the bytes were a view of.
  const copy = bytes.slice();
  rememberPropertiesEncoding(plain as BasicProperties, copy);
  lastBytes = copy;
  lastDecoded = plain as BasicProperties;
  return plain as BasicProperties;
}
