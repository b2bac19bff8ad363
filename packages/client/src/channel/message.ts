// Message objects from wire frames, shaped exactly as amqplib builds them. Pure.
import type { BasicDeliver, BasicGetOk, BasicProperties, BasicReturn } from '../wire/index.ts';
import { fieldTableToJs } from '../wire/index.ts';
import type { ConsumeMessage, Content, GetMessage, MessageProperties, ReturnMessage } from './types.ts';

/** Turns decoded body bytes into the platform's content type (Buffer under Node). */
export type ContentOf = (body: Uint8Array) => Content;

function opt<T>(v: T | null | undefined): T | undefined {
  return v === null ? undefined : v;
}

/**
 * amqplib's decoded properties: `{}` when no property is present at all (amqplib returns that for
 * a header frame with no property flags), otherwise all fourteen keys with undefined for absent ones.
 */
export function messageProperties(p: BasicProperties | null | undefined): MessageProperties {
  if (
    p == null ||
    (p.contentType == null &&
      p.contentEncoding == null &&
      p.headers == null &&
      p.deliveryMode == null &&
      p.priority == null &&
      p.correlationId == null &&
      p.replyTo == null &&
      p.expiration == null &&
      p.messageId == null &&
      p.timestamp == null &&
      p.type == null &&
      p.userId == null &&
      p.appId == null &&
      p.clusterId == null)
  ) {
    return {} as MessageProperties;
  }
  return {
    contentType: opt(p.contentType),
    contentEncoding: opt(p.contentEncoding),
    headers: p.headers == null ? undefined : fieldTableToJs(p.headers),
    deliveryMode: opt(p.deliveryMode),
    priority: opt(p.priority),
    correlationId: opt(p.correlationId),
    replyTo: opt(p.replyTo),
    expiration: opt(p.expiration),
    messageId: opt(p.messageId),
    timestamp: opt(p.timestamp),
    type: opt(p.type),
    userId: opt(p.userId),
    appId: opt(p.appId),
    clusterId: opt(p.clusterId),
  };
}

/** The message a consumer receives for a BasicDeliver. */
export function deliveryMessage(d: BasicDeliver, content: ContentOf): ConsumeMessage {
  return {
    fields: {
      consumerTag: d.consumerTag,
      deliveryTag: d.deliveryTag,
      redelivered: d.redelivered,
      exchange: d.exchange,
      routingKey: d.routingKey,
    },
    properties: messageProperties(d.properties),
    content: content(d.body),
  };
}

/** The message get() resolves with for a BasicGetOk. */
export function getMessage(g: BasicGetOk, content: ContentOf): GetMessage {
  return {
    fields: {
      deliveryTag: g.deliveryTag,
      redelivered: g.redelivered,
      exchange: g.exchange,
      routingKey: g.routingKey,
      messageCount: g.messageCount,
    },
    properties: messageProperties(g.properties),
    content: content(g.body),
  };
}

/** The message of a channel's 'return' event for a BasicReturn. */
export function returnMessage(r: BasicReturn, content: ContentOf): ReturnMessage {
  return {
    fields: {
      replyCode: r.replyCode,
      replyText: r.replyText,
      exchange: r.exchange,
      routingKey: r.routingKey,
    },
    properties: messageProperties(r.properties),
    content: content(r.body),
  };
}
