// @styx/client/wire: the Styx wire codec, shared by the broker and the SDK. Browser-safe: no Node
// built-ins, and the schema is compiled in (schema.gen.ts), not read from disk.
//
// 64-bit fields (delivery tags, i64/u64/timestamp field values, the timestamp property) are plain
// JS numbers, exact up to 2^53 - 1 (Number.MAX_SAFE_INTEGER); beyond that they lose precision.

export {
  announcesBodyParts,
  BODY_PARTS_CAPABILITY,
  BodyAssembler,
  bodyPartCapacity,
  encodeBodyParts,
  encodeWithBody,
  otherBytesBound,
  withBodyPartsCapability,
} from './body-parts.ts';
export {
  batchEntrySize,
  decodeBatch,
  decodeProperties,
  encodeBatch,
  encodeFrame,
  encodeProperties,
  frame,
  joinEncodedFrames,
  sendInBatches,
} from './codec.ts';
export { DEFAULT_FRAME_MAX, DEFAULT_PORT, PROTOCOL_VERSION } from './constants.ts';
export {
  encodeAckFrame,
  encodeDeliverFrame,
  encodeNackFrame,
  encodePublishFrame,
  encodeRejectFrame,
} from './fast-codec.ts';
export type { JsFieldTable, JsFieldValue, TypedJsValue } from './field-js.ts';
export { fieldTableToJs, fieldValueToJs, jsToFieldTable, jsToFieldValue } from './field-js.ts';
export {
  fieldTableEquals,
  fieldValueEquals,
  fieldValueKind,
  fieldValuePayload,
  requireFieldValueKind,
  tableDelete,
  tableGet,
  tableSet,
} from './field-table.ts';
export type { ObjectSlot } from './object-slot.ts';
export { objectSlot } from './object-slot.ts';
export { encodePropertiesOnce, rememberPropertiesEncoding } from './properties-encoding.ts';
export { BASIC_PROPERTY_NAMES } from './property-names.ts';
export type { ReplyCodeValue } from './reply-codes.ts';
export { isConnectionError, ReplyCode, replyCodeName } from './reply-codes.ts';
export type * from './types.ts';
export { FIELD_VALUE_KINDS, METHOD_NAMES } from './types.ts';
export { WireError } from './wire-error.ts';
