// A message's properties encoded once per properties object, not once per frame that carries them.
//
// A broker stores a published message's BasicProperties and delivers them, maybe many times (redeliveries,
// several queues, a dead-lettered copy's consumers): every deliver frame carries the same bytes. They are
// remembered per properties OBJECT, which is safe because a BasicProperties object is never modified once
// it has been encoded or decoded: code that needs different properties (a dead-lettered copy's x-death, a
// delivery's x-delivery-count, a publish without its BCC header) builds a new object, which has no
// remembered encoding. The decoder remembers the bytes a publish carried, so a published message's
// properties are never re-encoded at all.
//
// Where: a private field stamped onto the object itself (see object-slot.ts): invisible to copies,
// enumeration and equality, and far cheaper than a WeakMap entry per message.
import { objectSlot } from './object-slot.ts';
import { encodePropertiesMessage } from './properties-codec.ts';
import type { BasicProperties } from './types.ts';

const encodingOf = objectSlot<BasicProperties, Uint8Array>();

/**
 * The protobuf encoding of `properties` (what `encodeProperties` gives, or the bytes they were decoded
 * from): remembered for this object, or encoded now and remembered. The result is shared: never modify
 * it, nor `properties` after this call.
 */
export function encodePropertiesOnce(properties: BasicProperties): Uint8Array {
  let bytes = encodingOf.read(properties);
  if (bytes === undefined) {
    bytes = encodePropertiesMessage(properties);
    rememberPropertiesEncoding(properties, bytes);
  }
  return bytes;
}

/**
 * Remembers `bytes` as the encoding of `properties`: they must decode to exactly `properties` (they may
 * differ from what the encoder would write, e.g. carry fields this version does not know, which are then
 * passed on as they came). Neither may be modified afterwards.
 */
export function rememberPropertiesEncoding(properties: BasicProperties, bytes: Uint8Array): void {
  encodingOf.write(properties, bytes);
}
