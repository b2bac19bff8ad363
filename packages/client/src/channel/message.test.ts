import { describe, expect, it } from 'vitest';
import type { BasicDeliver } from '../wire/index.ts';
import { decodeBatch, encodeBatch, frame } from '../wire/index.ts';
import { deliveryMessage, getMessage, messageProperties, returnMessage } from './message.ts';

const asBuffer = (b: Uint8Array): Buffer =>
  Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);

function decodedDeliver(d: BasicDeliver): BasicDeliver {
  const [f] = decodeBatch(Buffer.from(encodeBatch([frame(1, 'basicDeliver', d)])));
  if (f?.method !== 'basicDeliver') throw new Error('method');
  return f.basicDeliver;
}

describe('message objects', () => {
  it('builds a delivery exactly as amqplib does', () => {
    const d = decodedDeliver({
      consumerTag: 'amq.ctag-1',
      deliveryTag: 7,
      redelivered: true,
      exchange: 'orders',
      routingKey: 'order.created',
      properties: {
        contentType: 'application/json',
        deliveryMode: 2,
        timestamp: 1795308382,
        headers: {
          entries: [
            { key: 'x-count', value: { i64: 3 } },
            { key: 'time', value: { timestamp: 1795308382 } },
          ],
        },
      },
      body: new TextEncoder().encode('{"id":1}'),
    });
    const msg = deliveryMessage(d, asBuffer);
    expect(msg).toStrictEqual({
      fields: {
        consumerTag: 'amq.ctag-1',
        deliveryTag: 7,
        redelivered: true,
        exchange: 'orders',
        routingKey: 'order.created',
      },
      properties: {
        contentType: 'application/json',
        contentEncoding: undefined,
        headers: { 'x-count': 3, time: { '!': 'timestamp', value: 1795308382 } },
        deliveryMode: 2,
        priority: undefined,
        correlationId: undefined,
        replyTo: undefined,
        expiration: undefined,
        messageId: undefined,
        timestamp: 1795308382,
        type: undefined,
        userId: undefined,
        appId: undefined,
        clusterId: undefined,
      },
      content: Buffer.from('{"id":1}'),
    });
    // amqplib's key order.
    expect(Object.keys(msg)).toEqual(['fields', 'properties', 'content']);
    expect(Object.keys(msg.properties)).toEqual([
      'contentType',
      'contentEncoding',
      'headers',
      'deliveryMode',
      'priority',
      'correlationId',
      'replyTo',
      'expiration',
      'messageId',
      'timestamp',
      'type',
      'userId',
      'appId',
      'clusterId',
    ]);
    expect(Buffer.isBuffer(msg.content)).toBe(true);
  });

  it('gives {} for a message with no property at all, as amqplib does', () => {
    const d = decodedDeliver({
      consumerTag: 'c',
      deliveryTag: 1,
      redelivered: false,
      exchange: '',
      routingKey: 'q',
      body: new Uint8Array(0),
    });
    const msg = deliveryMessage(d, asBuffer);
    expect(msg.properties).toStrictEqual({});
    expect(Buffer.isBuffer(msg.content)).toBe(true);
    expect(msg.content.length).toBe(0);
    expect(messageProperties({})).toStrictEqual({});
  });

  it('builds get and return messages with amqplib’s fields', () => {
    const got = getMessage(
      {
        deliveryTag: 2,
        redelivered: false,
        exchange: '',
        routingKey: 'q',
        messageCount: 41,
        properties: { messageId: 'm' },
        body: new Uint8Array([1]),
      },
      asBuffer,
    );
    expect(got.fields).toStrictEqual({
      deliveryTag: 2,
      redelivered: false,
      exchange: '',
      routingKey: 'q',
      messageCount: 41,
    });
    expect(got.properties.messageId).toBe('m');
    const returned = returnMessage(
      {
        replyCode: 312,
        replyText: 'NO_ROUTE',
        exchange: 'x',
        routingKey: 'nowhere',
        body: new Uint8Array([2]),
      },
      asBuffer,
    );
    expect(returned.fields).toStrictEqual({
      replyCode: 312,
      replyText: 'NO_ROUTE',
      exchange: 'x',
      routingKey: 'nowhere',
    });
    expect(returned.content).toEqual(Buffer.from([2]));
  });
});
