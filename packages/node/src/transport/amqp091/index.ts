// The AMQP 0-9-1 codec: frames, methods (generated from RabbitMQ's spec JSON), content
// properties, field tables with RabbitMQ's type tags, and hand-tuned codecs for the hot frames.
// Pure bytes in, values out: no sockets, no broker (the listener that speaks it is server.ts).

export { AmqpReader } from './amqp-reader.ts';
export { AmqpWriter } from './amqp-writer.ts';
export { AmqpCodecError, AmqpEncodeError } from './codec-error.ts';
export type { AmqpCommand, CommandAssemblerOptions } from './command-assembler.ts';
export { CommandAssembler } from './command-assembler.ts';
export { MAX_FIELD_NESTING, readFieldTable, writeFieldTable } from './field-table-codec.ts';
export {
  bodyChunkSize,
  encodeContentFrames,
  encodeMethodFrame,
  HEARTBEAT_FRAME,
  writeBodyFrames,
  writeHeaderFrame,
  writeMethodFrame,
} from './frame-encoder.ts';
export type { FrameParserOptions, RawFrame } from './frame-parser.ts';
export { FRAME_END, FRAME_MIN_SIZE, FRAME_OVERHEAD, FrameParser, FrameType } from './frame-parser.ts';
export type { DeliverFields } from './hot-path.ts';
export {
  encodeAckFrame,
  encodeDeliverFrames,
  encodePropertiesBytes,
  readBasicAck,
  readBasicPublish,
} from './hot-path.ts';
export { PROTOCOL_HEADER, ProtocolHeaderError, ProtocolHeaderReader } from './protocol-header.ts';
export type * from './spec.gen.ts';
export {
  AMQP_CONSTANTS,
  AMQP_VERSION,
  BASIC_PROPERTY_KEYS,
  decodeBasicProperties,
  decodeMethodFields,
  encodeBasicProperties,
  encodeMethodFields,
  METHOD_DEFS,
} from './spec.gen.ts';
