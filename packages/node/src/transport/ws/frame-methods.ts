/**
 * WebSocket frames ↔ the channel core's protocol-neutral methods (session/channel-methods.ts): a
 * client's frame on an open channel becomes a `ChannelMethod`, a core's `ChannelReply` a frame.
 * Nothing here decides anything: the semantics are the core's.
 */
import type { BasicPublish, Frame } from '@styx/client/wire';
import type { ChannelMethod, ChannelReply } from '../../session/channel-methods.ts';

/**
 * basic.publish of a BasicPublish frame with `body`: the frame's own, or one joined from its body
 * parts; `bodySize` when the body was refused unread (over max_message_size).
 */
export function publishMethod(p: BasicPublish, body: Uint8Array, bodySize?: number): ChannelMethod {
  return {
    method: 'basic.publish',
    exchange: p.exchange,
    routingKey: p.routingKey,
    mandatory: p.mandatory,
    immediate: p.immediate,
    properties: p.properties ?? undefined,
    body,
    ...(bodySize !== undefined ? { bodySize } : {}),
  };
}

/** The method a client's frame on an open channel asks for (`invalid` for the server's own). */
export function methodOfFrame(frame: Frame): ChannelMethod {
  switch (frame.method) {
    case 'basicPublish':
      return publishMethod(frame.basicPublish, frame.basicPublish.body);
    case 'basicAck':
      return {
        method: 'basic.ack',
        deliveryTag: frame.basicAck.deliveryTag,
        multiple: frame.basicAck.multiple,
      };
    case 'basicNack': {
      const n = frame.basicNack;
      return { method: 'basic.nack', deliveryTag: n.deliveryTag, multiple: n.multiple, requeue: n.requeue };
    }
    case 'basicReject':
      return {
        method: 'basic.reject',
        deliveryTag: frame.basicReject.deliveryTag,
        requeue: frame.basicReject.requeue,
      };
    case 'channelOpen':
      return { method: 'channel.open' };
    case 'channelClose':
      return { method: 'channel.close' };
    case 'channelCloseOk':
      return { method: 'channel.close-ok', name: frame.method };
    case 'confirmSelect':
      return { method: 'confirm.select' };
    case 'basicQos': {
      const q = frame.basicQos;
      return {
        method: 'basic.qos',
        prefetchSize: q.prefetchSize,
        prefetchCount: q.prefetchCount,
        global: q.global,
      };
    }
    case 'exchangeDeclare': {
      const m = frame.exchangeDeclare;
      return {
        method: 'exchange.declare',
        exchange: m.exchange,
        type: m.type,
        passive: m.passive,
        durable: m.durable,
        autoDelete: m.autoDelete,
        internal: m.internal,
        arguments: m.arguments ?? undefined,
      };
    }
    case 'exchangeDelete':
      return {
        method: 'exchange.delete',
        exchange: frame.exchangeDelete.exchange,
        ifUnused: frame.exchangeDelete.ifUnused,
      };
    case 'exchangeBind':
    case 'exchangeUnbind': {
      const m = frame.method === 'exchangeBind' ? frame.exchangeBind : frame.exchangeUnbind;
      return {
        method: frame.method === 'exchangeBind' ? 'exchange.bind' : 'exchange.unbind',
        destination: m.destination,
        source: m.source,
        routingKey: m.routingKey,
        arguments: m.arguments ?? undefined,
      };
    }
    case 'queueDeclare': {
      const m = frame.queueDeclare;
      return {
        method: 'queue.declare',
        queue: m.queue,
        passive: m.passive,
        durable: m.durable,
        exclusive: m.exclusive,
        autoDelete: m.autoDelete,
        arguments: m.arguments ?? undefined,
      };
    }
    case 'queueDelete': {
      const m = frame.queueDelete;
      return { method: 'queue.delete', queue: m.queue, ifUnused: m.ifUnused, ifEmpty: m.ifEmpty };
    }
    case 'queuePurge':
      return { method: 'queue.purge', queue: frame.queuePurge.queue };
    case 'queueBind':
    case 'queueUnbind': {
      const m = frame.method === 'queueBind' ? frame.queueBind : frame.queueUnbind;
      return {
        method: frame.method === 'queueBind' ? 'queue.bind' : 'queue.unbind',
        destination: m.queue,
        source: m.exchange,
        routingKey: m.routingKey,
        arguments: m.arguments ?? undefined,
      };
    }
    case 'basicConsume': {
      const m = frame.basicConsume;
      return {
        method: 'basic.consume',
        queue: m.queue,
        consumerTag: m.consumerTag,
        noAck: m.noAck,
        exclusive: m.exclusive,
        arguments: m.arguments ?? undefined,
      };
    }
    case 'basicCancel':
      return { method: 'basic.cancel', consumerTag: frame.basicCancel.consumerTag };
    case 'basicGet':
      return { method: 'basic.get', queue: frame.basicGet.queue, noAck: frame.basicGet.noAck };
    case 'basicRecover':
      return { method: 'basic.recover' };
    default:
      return { method: 'invalid', name: frame.method };
  }
}

const EMPTY = {};

/** The frame that carries `reply` on channel `channel`. */
export function frameOfReply(channel: number, reply: ChannelReply): Frame {
  switch (reply.method) {
    case 'channel.close-ok':
      return { channel, method: 'channelCloseOk', channelCloseOk: EMPTY };
    case 'confirm.select-ok':
      return { channel, method: 'confirmSelectOk', confirmSelectOk: EMPTY };
    case 'basic.qos-ok':
      return { channel, method: 'basicQosOk', basicQosOk: EMPTY };
    case 'exchange.declare-ok':
      return { channel, method: 'exchangeDeclareOk', exchangeDeclareOk: EMPTY };
    case 'exchange.delete-ok':
      return { channel, method: 'exchangeDeleteOk', exchangeDeleteOk: EMPTY };
    case 'exchange.bind-ok':
      return { channel, method: 'exchangeBindOk', exchangeBindOk: EMPTY };
    case 'exchange.unbind-ok':
      return { channel, method: 'exchangeUnbindOk', exchangeUnbindOk: EMPTY };
    case 'queue.declare-ok':
      return {
        channel,
        method: 'queueDeclareOk',
        queueDeclareOk: {
          queue: reply.queue,
          messageCount: reply.messageCount,
          consumerCount: reply.consumerCount,
        },
      };
    case 'queue.delete-ok':
      return { channel, method: 'queueDeleteOk', queueDeleteOk: { messageCount: reply.messageCount } };
    case 'queue.purge-ok':
      return { channel, method: 'queuePurgeOk', queuePurgeOk: { messageCount: reply.messageCount } };
    case 'queue.bind-ok':
      return { channel, method: 'queueBindOk', queueBindOk: EMPTY };
    case 'queue.unbind-ok':
      return { channel, method: 'queueUnbindOk', queueUnbindOk: EMPTY };
    case 'basic.consume-ok':
      return { channel, method: 'basicConsumeOk', basicConsumeOk: { consumerTag: reply.consumerTag } };
    case 'basic.cancel-ok':
      return { channel, method: 'basicCancelOk', basicCancelOk: { consumerTag: reply.consumerTag } };
    case 'basic.get-ok':
      return {
        channel,
        method: 'basicGetOk',
        basicGetOk: {
          deliveryTag: reply.deliveryTag,
          redelivered: reply.redelivered,
          exchange: reply.exchange,
          routingKey: reply.routingKey,
          messageCount: reply.messageCount,
          properties: reply.properties,
          body: reply.body,
        },
      };
    case 'basic.get-empty':
      return { channel, method: 'basicGetEmpty', basicGetEmpty: EMPTY };
    case 'basic.recover-ok':
      return { channel, method: 'basicRecoverOk', basicRecoverOk: EMPTY };
    case 'channel.flow-ok':
      // methodOfFrame never makes a channel.flow: the WebSocket protocol has none.
      throw new Error('channel.flow-ok has no WebSocket frame');
  }
}
