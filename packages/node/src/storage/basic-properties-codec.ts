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
import { StoredBytesCorruptedError } from './errors.ts';

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
  if (bytes.length === 0) return {};
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
  // Delivered as the bytes they came from (the caller keeps `bytes` unmodified).
  rememberPropertiesEncoding(plain as BasicProperties, bytes);
  return plain as BasicProperties;
}
