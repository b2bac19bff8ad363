/**
 * BasicProperties on their own as protobuf bytes, in the wire schema's encoding (so a stored
 * message keeps exactly what the publisher sent, field tables with their order and types), through
 * the wire module's properties codec: the bytes are those a publish or deliver frame carries.
 */
import type { BasicProperties } from '@styx/client/wire';
import { decodeProperties, encodeProperties } from '@styx/client/wire';
import { StoredBytesCorruptedError } from './errors.ts';

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
  return encodeProperties(properties);
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
  return plain as BasicProperties;
}
