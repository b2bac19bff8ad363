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
// Where: a private field stamped onto the object itself (see EncodingSlot). A private field has no key
// and no symbol: nothing that copies an object (spread, Object.assign, structuredClone, JSON) carries it
// over, nothing that enumerates or compares one (for-in, Object.keys, reflection, deep equality) sees
// it, and an object that inherits from it (Object.create) does not have it. It costs a few tens of
// nanoseconds, where a WeakMap entry costs half a microsecond under V8 when keys are as short-lived as
// messages, and a non-enumerable symbol property (defineProperty) about 150 ns. A non-extensible object
// keeps its encoding in a WeakMap instead.
import { encodePropertiesMessage } from './properties-codec.ts';
import type { BasicProperties } from './types.ts';

/**
 * A constructor whose `new` result is its argument. A class extending it gets `this` = that argument
 * from `super(target)`, so its private fields are added to an object created elsewhere.
 */
const Adopt = function adopt(target: object): object {
  return target;
} as unknown as new (
  target: object,
) => object;

/** The encoding slot, stamped onto a properties object by `new EncodingSlot(properties, bytes)`. */
class EncodingSlot extends Adopt {
  #bytes: Uint8Array;

  constructor(target: object, bytes: Uint8Array) {
    super(target);
    this.#bytes = bytes;
  }

  /** Whether `target` carries a slot. */
  static has(target: object): boolean {
    return #bytes in target;
  }

  /** The bytes stamped onto `target`, if any. */
  static read(target: object): Uint8Array | undefined {
    return #bytes in target ? (target as EncodingSlot).#bytes : undefined;
  }

  /** Stamps `bytes` onto `target`, or replaces the ones it carries. */
  static write(target: object, bytes: Uint8Array): void {
    if (#bytes in target) (target as EncodingSlot).#bytes = bytes;
    else new EncodingSlot(target, bytes);
  }
}

const ofNonExtensible = new WeakMap<BasicProperties, Uint8Array>();

/** The remembered encoding of `properties`, if any. */
function rememberedEncoding(properties: BasicProperties): Uint8Array | undefined {
  const bytes = EncodingSlot.read(properties);
  if (bytes !== undefined || Object.isExtensible(properties)) return bytes;
  return ofNonExtensible.get(properties);
}

/**
 * The protobuf encoding of `properties` (what `encodeProperties` gives, or the bytes they were decoded
 * from): remembered for this object, or encoded now and remembered. The result is shared: never modify
 * it, nor `properties` after this call.
 */
export function encodePropertiesOnce(properties: BasicProperties): Uint8Array {
  let bytes = rememberedEncoding(properties);
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
  // A slot stamped before the object was frozen stays writable, and is what reads find first.
  if (EncodingSlot.has(properties) || Object.isExtensible(properties)) EncodingSlot.write(properties, bytes);
  else ofNonExtensible.set(properties, bytes);
}
