// Hand-written TypeScript mirrors of proto/styx.proto, in protobufjs's default camelCase naming.
//
// One type serves both directions: encodeBatch() accepts plain objects of these shapes, and
// decodeBatch() returns objects that satisfy them: plain objects carrying every field for the hot
// frames (publish, deliver, ack, nack, reject; see fast-codec.ts), protobufjs message instances for
// the rest and for properties. On a decoded instance a proto3 scalar that was absent on the wire (its
// zero value) reads from the prototype, so it is always readable but is not an own property: read
// fields directly, never enumerate them or spread a decoded message. 64-bit fields are plain JS numbers, exact up to 2^53 (Number.MAX_SAFE_INTEGER);
// larger values lose precision silently, like amqplib's own 64-bit decoding.

// ---------------------------------------------------------------- field values (AMQP 0-9-1 types)

/** The members of the FieldValue oneof, in schema order; each name is the AMQP type it carries. */
export const FIELD_VALUE_KINDS = [
  'i8',
  'u8',
  'i16',
  'u16',
  'i32',
  'u32',
  'i64',
  'u64',
  'f32',
  'f64',
  'decimal',
  'shortStr',
  'longStr',
  'bool',
  'timestamp',
  'array',
  'table',
  'byteArray',
  'void',
] as const;

/** The name of the one member a FieldValue carries. */
export type FieldValueKind = (typeof FIELD_VALUE_KINDS)[number];

/** An AMQP decimal: `value / 10^scale`. Scale is 0..255; value is a signed 32-bit integer. */
export interface Decimal {
  scale: number;
  value: number;
}

/** A proto message with no fields (`{}`). */
export type EmptyMessage = Record<string, never>;

/** The empty message that marks AMQP's void ('V') value. */
export type Void = EmptyMessage;

/** An ordered AMQP field array ('A'). */
export interface FieldArray {
  values: FieldValue[];
}

/** An ordered AMQP field table ('F'): order is observable (x-death) and preserved end to end. */
export interface FieldTable {
  entries: FieldEntry[];
}

/** One (key, value) pair of a field table. */
export interface FieldEntry {
  key: string;
  value: FieldValue;
}

/** The payload type of each FieldValue member. */
export interface FieldValueMap {
  i8: number;
  u8: number;
  i16: number;
  u16: number;
  i32: number;
  u32: number;
  i64: number;
  u64: number;
  f32: number;
  f64: number;
  decimal: Decimal;
  shortStr: string;
  longStr: string;
  bool: boolean;
  /** Seconds since the epoch. */
  timestamp: number;
  array: FieldArray;
  table: FieldTable;
  byteArray: Uint8Array;
  void: Void;
}

/** A FieldValue carrying exactly the member `K`. */
export type FieldValueOf<K extends FieldValueKind> = { [P in K]: FieldValueMap[K] } & {
  [P in Exclude<FieldValueKind, K>]?: never;
};

/**
 * One AMQP field value: an object with exactly one member set, named after its AMQP type.
 * Find which with fieldValueKind() — on decoded instances the unset members may still be readable
 * from the prototype, so `'i8' in v` or `v.i8 !== undefined` are not reliable tests.
 */
export type FieldValue = { [K in FieldValueKind]: FieldValueOf<K> }[FieldValueKind];

// ---------------------------------------------------------------- connection

/** Client → server, first frame on channel 0. */
export interface Hello {
  protocolVersion: number;
  username: string;
  password: string;
  vhost: string;
  /** Requested heartbeat interval in ms; 0 = the server's default. */
  heartbeatMs: number;
  /** Largest WebSocket message, in bytes, the client accepts; 0 = the server's. */
  frameMax: number;
  clientProperties?: FieldTable | null;
}

/** Server → client: the handshake succeeded, with the negotiated limits. */
export interface HelloOk {
  /** Negotiated heartbeat interval in ms; 0 = disabled. */
  heartbeatMs: number;
  /** Negotiated largest WebSocket message, in bytes, either direction. */
  frameMax: number;
  channelMax: number;
  serverProperties?: FieldTable | null;
  connectionName: string;
}

export type Heartbeat = EmptyMessage;

/** Either direction: a connection error, or a normal close (200). */
export interface ConnectionClose {
  replyCode: number;
  replyText: string;
  failingChannel: number;
  failingMethod: string;
}

export type ConnectionCloseOk = EmptyMessage;

export interface ConnectionBlocked {
  reason: string;
}

export type ConnectionUnblocked = EmptyMessage;

// ---------------------------------------------------------------- channel

export type ChannelOpen = EmptyMessage;
export type ChannelOpenOk = EmptyMessage;

/** Either direction: a channel error, or a normal close (200). */
export interface ChannelClose {
  replyCode: number;
  replyText: string;
  failingMethod: string;
}

export type ChannelCloseOk = EmptyMessage;
export type ConfirmSelect = EmptyMessage;
export type ConfirmSelectOk = EmptyMessage;

// ---------------------------------------------------------------- exchange

export interface ExchangeDeclare {
  exchange: string;
  type: string;
  passive: boolean;
  durable: boolean;
  autoDelete: boolean;
  internal: boolean;
  arguments?: FieldTable | null;
}
export type ExchangeDeclareOk = EmptyMessage;

export interface ExchangeDelete {
  exchange: string;
  ifUnused: boolean;
}
export type ExchangeDeleteOk = EmptyMessage;

export interface ExchangeBind {
  destination: string;
  source: string;
  routingKey: string;
  arguments?: FieldTable | null;
}
export type ExchangeBindOk = EmptyMessage;

export interface ExchangeUnbind {
  destination: string;
  source: string;
  routingKey: string;
  arguments?: FieldTable | null;
}
export type ExchangeUnbindOk = EmptyMessage;

// ---------------------------------------------------------------- queue

export interface QueueDeclare {
  /** Empty: the server generates a name. */
  queue: string;
  passive: boolean;
  durable: boolean;
  exclusive: boolean;
  autoDelete: boolean;
  arguments?: FieldTable | null;
}
export interface QueueDeclareOk {
  queue: string;
  messageCount: number;
  consumerCount: number;
}

export interface QueueDelete {
  queue: string;
  ifUnused: boolean;
  ifEmpty: boolean;
}
export interface QueueDeleteOk {
  messageCount: number;
}

export interface QueuePurge {
  queue: string;
}
export interface QueuePurgeOk {
  messageCount: number;
}

export interface QueueBind {
  queue: string;
  exchange: string;
  routingKey: string;
  arguments?: FieldTable | null;
}
export type QueueBindOk = EmptyMessage;

export interface QueueUnbind {
  queue: string;
  exchange: string;
  routingKey: string;
  arguments?: FieldTable | null;
}
export type QueueUnbindOk = EmptyMessage;

// ---------------------------------------------------------------- basic

/** The AMQP 0-9-1 basic properties; each is absent (undefined or null) unless set. */
export interface BasicProperties {
  contentType?: string | null;
  contentEncoding?: string | null;
  headers?: FieldTable | null;
  /** 1 transient, 2 persistent. */
  deliveryMode?: number | null;
  priority?: number | null;
  correlationId?: string | null;
  replyTo?: string | null;
  /** Per-message TTL in ms, as a decimal string. */
  expiration?: string | null;
  messageId?: string | null;
  /** Seconds since the epoch. */
  timestamp?: number | null;
  type?: string | null;
  userId?: string | null;
  appId?: string | null;
  clusterId?: string | null;
}

export interface BasicQos {
  /** Must be 0, as in RabbitMQ. */
  prefetchSize: number;
  prefetchCount: number;
  /** Refused by the server: replicated queues have no channel-wide prefetch. */
  global: boolean;
}
export type BasicQosOk = EmptyMessage;

export interface BasicConsume {
  queue: string;
  /** Empty: the server generates one. */
  consumerTag: string;
  noLocal: boolean;
  noAck: boolean;
  exclusive: boolean;
  arguments?: FieldTable | null;
}
export interface BasicConsumeOk {
  consumerTag: string;
}

/** Client → server: cancel a consumer. Server → client: the queue went away. */
export interface BasicCancel {
  consumerTag: string;
}
export interface BasicCancelOk {
  consumerTag: string;
}

export interface BasicPublish {
  exchange: string;
  routingKey: string;
  mandatory: boolean;
  /** Refused, as in RabbitMQ. */
  immediate: boolean;
  properties?: BasicProperties | null;
  body: Uint8Array;
  /** Set (and `body` empty) when the body follows in `bodyPart` frames: its length. */
  bodySize?: number;
}

export interface BasicReturn {
  replyCode: number;
  replyText: string;
  exchange: string;
  routingKey: string;
  properties?: BasicProperties | null;
  body: Uint8Array;
  /** Set (and `body` empty) when the body follows in `bodyPart` frames: its length. */
  bodySize?: number;
}

export interface BasicDeliver {
  consumerTag: string;
  deliveryTag: number;
  redelivered: boolean;
  exchange: string;
  routingKey: string;
  properties?: BasicProperties | null;
  body: Uint8Array;
  /** Set (and `body` empty) when the body follows in `bodyPart` frames: its length. */
  bodySize?: number;
}

export interface BasicGet {
  queue: string;
  noAck: boolean;
}
export interface BasicGetOk {
  deliveryTag: number;
  redelivered: boolean;
  exchange: string;
  routingKey: string;
  messageCount: number;
  properties?: BasicProperties | null;
  body: Uint8Array;
  /** Set (and `body` empty) when the body follows in `bodyPart` frames: its length. */
  bodySize?: number;
}
export type BasicGetEmpty = EmptyMessage;

/** Both directions: a consumer's ack, or a publisher confirm from the server. */
export interface BasicAck {
  deliveryTag: number;
  multiple: boolean;
}

/** Both directions: a consumer's nack, or a negative publisher confirm from the server. */
export interface BasicNack {
  deliveryTag: number;
  multiple: boolean;
  requeue: boolean;
}

export interface BasicReject {
  deliveryTag: number;
  requeue: boolean;
}

export interface BasicRecover {
  requeue: boolean;
}
export type BasicRecoverOk = EmptyMessage;

/** The next piece of a body whose method said `bodySize` (see proto/styx.proto). */
export interface BodyPart {
  data: Uint8Array;
}

// ---------------------------------------------------------------- frames

/** The members of the Frame `method` oneof, in schema order (checked against the schema by a test). */
export const METHOD_NAMES = [
  'hello',
  'helloOk',
  'heartbeat',
  'connectionClose',
  'connectionCloseOk',
  'connectionBlocked',
  'connectionUnblocked',
  'channelOpen',
  'channelOpenOk',
  'channelClose',
  'channelCloseOk',
  'confirmSelect',
  'confirmSelectOk',
  'exchangeDeclare',
  'exchangeDeclareOk',
  'exchangeDelete',
  'exchangeDeleteOk',
  'exchangeBind',
  'exchangeBindOk',
  'exchangeUnbind',
  'exchangeUnbindOk',
  'queueDeclare',
  'queueDeclareOk',
  'queueDelete',
  'queueDeleteOk',
  'queuePurge',
  'queuePurgeOk',
  'queueBind',
  'queueBindOk',
  'queueUnbind',
  'queueUnbindOk',
  'basicQos',
  'basicQosOk',
  'basicConsume',
  'basicConsumeOk',
  'basicCancel',
  'basicCancelOk',
  'basicPublish',
  'basicReturn',
  'basicDeliver',
  'basicGet',
  'basicGetOk',
  'basicGetEmpty',
  'basicAck',
  'basicNack',
  'basicReject',
  'basicRecover',
  'basicRecoverOk',
  'bodyPart',
] as const;

/** The name of a frame's method: the member set in the Frame `method` oneof. */
export type MethodName = (typeof METHOD_NAMES)[number];

/** The message type of each method. */
export interface MethodMap {
  hello: Hello;
  helloOk: HelloOk;
  heartbeat: Heartbeat;
  connectionClose: ConnectionClose;
  connectionCloseOk: ConnectionCloseOk;
  connectionBlocked: ConnectionBlocked;
  connectionUnblocked: ConnectionUnblocked;
  channelOpen: ChannelOpen;
  channelOpenOk: ChannelOpenOk;
  channelClose: ChannelClose;
  channelCloseOk: ChannelCloseOk;
  confirmSelect: ConfirmSelect;
  confirmSelectOk: ConfirmSelectOk;
  exchangeDeclare: ExchangeDeclare;
  exchangeDeclareOk: ExchangeDeclareOk;
  exchangeDelete: ExchangeDelete;
  exchangeDeleteOk: ExchangeDeleteOk;
  exchangeBind: ExchangeBind;
  exchangeBindOk: ExchangeBindOk;
  exchangeUnbind: ExchangeUnbind;
  exchangeUnbindOk: ExchangeUnbindOk;
  queueDeclare: QueueDeclare;
  queueDeclareOk: QueueDeclareOk;
  queueDelete: QueueDelete;
  queueDeleteOk: QueueDeleteOk;
  queuePurge: QueuePurge;
  queuePurgeOk: QueuePurgeOk;
  queueBind: QueueBind;
  queueBindOk: QueueBindOk;
  queueUnbind: QueueUnbind;
  queueUnbindOk: QueueUnbindOk;
  basicQos: BasicQos;
  basicQosOk: BasicQosOk;
  basicConsume: BasicConsume;
  basicConsumeOk: BasicConsumeOk;
  basicCancel: BasicCancel;
  basicCancelOk: BasicCancelOk;
  basicPublish: BasicPublish;
  basicReturn: BasicReturn;
  basicDeliver: BasicDeliver;
  basicGet: BasicGet;
  basicGetOk: BasicGetOk;
  basicGetEmpty: BasicGetEmpty;
  basicAck: BasicAck;
  basicNack: BasicNack;
  basicReject: BasicReject;
  basicRecover: BasicRecover;
  basicRecoverOk: BasicRecoverOk;
  bodyPart: BodyPart;
}

/** A frame carrying the method `K` on `channel` (0 = the connection). */
export type FrameOf<K extends MethodName> = { channel: number; method: K } & { [P in K]: MethodMap[K] };

/**
 * One frame: a discriminated union on `method`, so `if (f.method === 'basicPublish') f.basicPublish.body`
 * narrows. For encoding, `method` must name the one member that is set.
 */
export type Frame = { [K in MethodName]: FrameOf<K> }[MethodName];

/** One WebSocket binary message: one or more frames. */
export interface Batch {
  frames: Frame[];
}
