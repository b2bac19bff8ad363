// Loads the wire schema into a private protobufjs Root, configured so 64-bit fields are plain JS
// numbers and decoded oneof members behave like plain optional properties.
//
// Nothing here touches protobufjs's global configuration (util.Long, Reader.prototype): an
// application may use protobufjs itself, with Long, in the same process.
import protobuf from 'protobufjs';
import { STYX_PROTO_SOURCE } from './schema.gen.ts';

/** The protobuf package of the wire schema. */
export const WIRE_PACKAGE = 'styx.wire.v1';

function typesOf(ns: protobuf.NamespaceBase): protobuf.Type[] {
  const out: protobuf.Type[] = [];
  for (const nested of ns.nestedArray) {
    if (nested instanceof protobuf.Type) out.push(nested);
    if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) out.push(...typesOf(nested));
  }
  return out;
}

/** A proto3 `optional` field is modelled as a synthetic one-member oneof; it is not a real oneof. */
function isRealOneof(oneof: protobuf.OneOf): boolean {
  return !oneof.fieldsArray.every((f) => f.options?.proto3_optional === true);
}

/**
 * What a decoded message reads for an absent (or empty) bytes field: an empty Uint8Array (a Buffer
 * under Node). Shared, never written: an empty array has no element to write and cannot grow.
 */
export const EMPTY_BYTES: Uint8Array = protobuf.util.newBuffer(0) as Uint8Array;

function loadRoot(): protobuf.Root {
  const { root } = protobuf.parse(STYX_PROTO_SOURCE, { keepCase: false });
  const types = typesOf(root);
  // `long` decides, at resolve time, whether a 64-bit field's default is a Long (and a proto3
  // optional one's default becomes Long(0) instead of null). Turned off before resolving, 64-bit
  // defaults are 0, and null for optional fields, like every other scalar.
  for (const type of types) for (const field of type.fieldsArray) field.long = false;
  root.resolveAll();
  for (const type of types) {
    const proto = type.ctor.prototype as unknown as Record<string, unknown>;
    // A real oneof member that is not set must read as undefined, so FieldValue and Frame look like
    // "exactly one member present" objects (protobufjs puts every member's zero value on the
    // prototype, which would make `v.u8` read 0 on a FieldValue that carries an i8).
    for (const oneof of type.oneofsArray) {
      if (!isRealOneof(oneof)) continue;
      for (const name of oneof.oneof) delete proto[name];
    }
    // protobufjs's default for an absent bytes field is a plain empty array; make it an empty
    // Uint8Array (a Buffer under Node) so decoded messages match their types.
    for (const field of type.fieldsArray) {
      if (field.type === 'bytes' && !field.repeated && field.partOf === null) proto[field.name] = EMPTY_BYTES;
    }
    // The remaining defaults (and $type) are enumerable on the prototype, so a for-in over a decoded
    // message would walk the schema's reflection objects. Hide them; reads are unaffected.
    for (const key of Object.keys(proto)) {
      Object.defineProperty(proto, key, { enumerable: false });
    }
  }
  return root;
}

const root = loadRoot();

/** The reflected type `name` (unqualified) of the wire package. */
export function wireType(name: string): protobuf.Type {
  return root.lookupType(`${WIRE_PACKAGE}.${name}`);
}

/** The Batch type: one WebSocket message. */
export const BatchType: protobuf.Type = wireType('Batch');

/** The Frame type: one method on one channel. */
export const FrameType: protobuf.Type = wireType('Frame');

/** The BasicProperties type: a message's properties, as publish and deliver frames carry them. */
export const PropertiesType: protobuf.Type = wireType('BasicProperties');
