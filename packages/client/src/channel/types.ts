// The SDK's public shapes, matching amqplib's (and @types/amqplib's) option names, reply shapes
// and message objects.
import type { JsFieldTable } from '../wire/index.ts';

/**
 * Message content: a Buffer under Node, as amqplib gives it. In browsers it is a plain Uint8Array
 * at run time (there is no Buffer): use only Uint8Array methods in code meant for both.
 */
export type Content = Buffer;

/** assertQueue options (amqplib's). */
export interface AssertQueueOptions {
  exclusive?: boolean;
  /** Default true. */
  durable?: boolean;
  autoDelete?: boolean;
  /** Extra queue arguments; the named options below win over the same keys here. */
  arguments?: Record<string, unknown>;
  /** x-message-ttl, ms. */
  messageTtl?: number;
  /** x-expires, ms. */
  expires?: number;
  deadLetterExchange?: string;
  deadLetterRoutingKey?: string;
  maxLength?: number;
  maxPriority?: number;
  /** x-overflow. */
  overflow?: string;
  /** x-queue-mode. */
  queueMode?: string;
}

export interface DeleteQueueOptions {
  ifUnused?: boolean;
  ifEmpty?: boolean;
}

export interface AssertExchangeOptions {
  /** Default true. */
  durable?: boolean;
  internal?: boolean;
  autoDelete?: boolean;
  alternateExchange?: string;
  arguments?: Record<string, unknown>;
}

export interface DeleteExchangeOptions {
  ifUnused?: boolean;
}

/** publish/sendToQueue options (amqplib's). */
export interface PublishOptions {
  /** Per-message TTL in ms; numbers are sent as their decimal string. */
  expiration?: string | number;
  userId?: string;
  /** Extra routing keys, carried in the CC header. */
  CC?: string | string[];
  /** Extra routing keys, carried in the BCC header (removed before delivery). */
  BCC?: string | string[];
  mandatory?: boolean;
  persistent?: boolean;
  /** true/false or 1/2; `persistent` wins when both are given. */
  deliveryMode?: boolean | number;
  contentType?: string;
  contentEncoding?: string;
  headers?: Record<string, unknown>;
  priority?: number;
  correlationId?: string;
  replyTo?: string;
  messageId?: string;
  /** Seconds since the epoch (AMQP's unit), as amqplib sends it. */
  timestamp?: number;
  type?: string;
  appId?: string;
}

export interface ConsumeOptions {
  consumerTag?: string;
  noLocal?: boolean;
  noAck?: boolean;
  exclusive?: boolean;
  /** x-priority. */
  priority?: number;
  arguments?: Record<string, unknown>;
}

export interface GetOptions {
  noAck?: boolean;
}

/** createChannel/createConfirmChannel options (amqplib accepts highWaterMark; Styx's is per connection). */
export interface ChannelOptions {
  highWaterMark?: number;
}

/** An empty reply, as amqplib resolves RPCs without fields. */
export type EmptyReply = Record<string, never>;

export interface AssertQueueReply {
  queue: string;
  messageCount: number;
  consumerCount: number;
}

export interface DeleteQueueReply {
  messageCount: number;
}

export interface PurgeQueueReply {
  messageCount: number;
}

export interface AssertExchangeReply {
  exchange: string;
}

export interface ConsumeReply {
  consumerTag: string;
}

/** Message properties as amqplib decodes them: undefined where absent. */
export interface MessageProperties {
  contentType: string | undefined;
  contentEncoding: string | undefined;
  headers: JsFieldTable | undefined;
  deliveryMode: number | undefined;
  priority: number | undefined;
  correlationId: string | undefined;
  replyTo: string | undefined;
  expiration: string | undefined;
  messageId: string | undefined;
  timestamp: number | undefined;
  type: string | undefined;
  userId: string | undefined;
  appId: string | undefined;
  clusterId: string | undefined;
}

export interface CommonMessageFields {
  deliveryTag: number;
  redelivered: boolean;
  exchange: string;
  routingKey: string;
}

export interface ConsumeMessageFields extends CommonMessageFields {
  consumerTag: string;
}

export interface GetMessageFields extends CommonMessageFields {
  messageCount: number;
}

export interface MessageFields extends CommonMessageFields {
  consumerTag?: string;
  messageCount?: number;
}

export interface ReturnMessageFields {
  replyCode: number;
  replyText: string;
  exchange: string;
  routingKey: string;
}

/**
 * A message as amqplib builds it. `properties` is `{}` when the message carries no property at all
 * (amqplib's rendering of an empty property set), otherwise every key is present.
 */
export interface Message {
  fields: MessageFields;
  properties: MessageProperties;
  content: Content;
}

export interface ConsumeMessage extends Message {
  fields: ConsumeMessageFields;
}

export interface GetMessage extends Message {
  fields: GetMessageFields;
}

/** A mandatory message the server could not route, emitted as the channel's 'return' event. */
export interface ReturnMessage {
  fields: ReturnMessageFields;
  properties: MessageProperties;
  content: Content;
}
