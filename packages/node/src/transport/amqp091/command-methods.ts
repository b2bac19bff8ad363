/**
 * AMQP 0-9-1 commands ↔ the channel core's protocol-neutral methods (session/channel-methods.ts):
 * a client's command on an open channel becomes a `ChannelMethod`, a core's `ChannelReply` a method
 * to encode. Nothing here decides anything: the semantics are the core's. What AMQP adds that the
 * core does not know, `nowait`, is returned beside the method so the channel can drop the reply.
 */
import type { ChannelMethod, ChannelReply } from '../../session/channel-methods.ts';
import type { AmqpCommand } from './command-assembler.ts';
import type { AmqpMethod, AmqpMethodInit, MethodName } from './spec.gen.ts';
import { METHOD_DEFS } from './spec.gen.ts';

/** A client's command as the channel core takes it, and whether its reply is to be left out. */
export interface DecodedMethod {
  readonly method: ChannelMethod;
  /** The client set nowait: the core's reply to this method is not sent. */
  readonly nowait: boolean;
}

const IDS = new Map<string, { readonly classId: number; readonly methodId: number }>(
  METHOD_DEFS.map((d) => [d.name, { classId: d.classId, methodId: d.methodId }]),
);

/** A method's class and method ids by its spec name (0/0 for none: '' or not a method). */
export function methodIds(name: string): { readonly classId: number; readonly methodId: number } {
  return IDS.get(name) ?? { classId: 0, methodId: 0 };
}

/** The name of the method with these ids ('' if none). */
export function methodName(classId: number, methodId: number): string {
  for (const def of METHOD_DEFS) if (def.classId === classId && def.methodId === methodId) return def.name;
  return '';
}

const WAIT = false;

/** The method a client's command on an open channel asks for (`invalid` for the server's own). */
export function methodOfCommand(command: Exclude<AmqpCommand, { kind: 'heartbeat' }>): DecodedMethod {
  const m: AmqpMethod = command.method;
  if (command.kind === 'content') {
    if (m.name !== 'basic.publish') return { method: { method: 'invalid', name: m.name }, nowait: WAIT };
    const { exchange, routingKey, mandatory, immediate } = m.args;
    const { properties, body, oversize } = command;
    // Two literals rather than a spread of an empty object on every publish.
    const publish: ChannelMethod =
      oversize === undefined
        ? { method: 'basic.publish', exchange, routingKey, mandatory, immediate, properties, body }
        : {
            method: 'basic.publish',
            exchange,
            routingKey,
            mandatory,
            immediate,
            properties,
            body,
            bodySize: oversize,
          };
    return { method: publish, nowait: WAIT };
  }
  switch (m.name) {
    case 'basic.ack':
      return {
        method: { method: 'basic.ack', deliveryTag: m.args.deliveryTag, multiple: m.args.multiple },
        nowait: WAIT,
      };
    case 'basic.nack':
      return {
        method: {
          method: 'basic.nack',
          deliveryTag: m.args.deliveryTag,
          multiple: m.args.multiple,
          requeue: m.args.requeue,
        },
        nowait: WAIT,
      };
    case 'basic.reject':
      return {
        method: { method: 'basic.reject', deliveryTag: m.args.deliveryTag, requeue: m.args.requeue },
        nowait: WAIT,
      };
    case 'channel.open':
      return { method: { method: 'channel.open' }, nowait: WAIT };
    case 'channel.close':
      return { method: { method: 'channel.close' }, nowait: WAIT };
    case 'channel.close-ok':
      return { method: { method: 'channel.close-ok', name: m.name }, nowait: WAIT };
    case 'channel.flow':
      return { method: { method: 'channel.flow', active: m.args.active }, nowait: WAIT };
    case 'confirm.select':
      return { method: { method: 'confirm.select' }, nowait: m.args.nowait };
    case 'basic.qos':
      return {
        method: {
          method: 'basic.qos',
          prefetchSize: m.args.prefetchSize,
          prefetchCount: m.args.prefetchCount,
          global: m.args.global,
        },
        nowait: WAIT,
      };
    case 'exchange.declare': {
      const a = m.args;
      return {
        method: {
          method: 'exchange.declare',
          exchange: a.exchange,
          type: a.type,
          passive: a.passive,
          durable: a.durable,
          autoDelete: a.autoDelete,
          internal: a.internal,
          arguments: a.arguments,
        },
        nowait: a.nowait,
      };
    }
    case 'exchange.delete':
      return {
        method: { method: 'exchange.delete', exchange: m.args.exchange, ifUnused: m.args.ifUnused },
        nowait: m.args.nowait,
      };
    case 'exchange.bind':
    case 'exchange.unbind': {
      const a = m.args;
      return {
        method: {
          method: m.name,
          destination: a.destination,
          source: a.source,
          routingKey: a.routingKey,
          arguments: a.arguments,
        },
        nowait: a.nowait,
      };
    }
    case 'queue.declare': {
      const a = m.args;
      return {
        method: {
          method: 'queue.declare',
          queue: a.queue,
          passive: a.passive,
          durable: a.durable,
          exclusive: a.exclusive,
          autoDelete: a.autoDelete,
          arguments: a.arguments,
        },
        nowait: a.nowait,
      };
    }
    case 'queue.delete':
      return {
        method: {
          method: 'queue.delete',
          queue: m.args.queue,
          ifUnused: m.args.ifUnused,
          ifEmpty: m.args.ifEmpty,
        },
        nowait: m.args.nowait,
      };
    case 'queue.purge':
      return { method: { method: 'queue.purge', queue: m.args.queue }, nowait: m.args.nowait };
    case 'queue.bind':
      return {
        method: {
          method: 'queue.bind',
          destination: m.args.queue,
          source: m.args.exchange,
          routingKey: m.args.routingKey,
          arguments: m.args.arguments,
        },
        nowait: m.args.nowait,
      };
    case 'queue.unbind':
      return {
        method: {
          method: 'queue.unbind',
          destination: m.args.queue,
          source: m.args.exchange,
          routingKey: m.args.routingKey,
          arguments: m.args.arguments,
        },
        nowait: WAIT,
      };
    case 'basic.consume':
      return {
        method: {
          method: 'basic.consume',
          queue: m.args.queue,
          consumerTag: m.args.consumerTag,
          noAck: m.args.noAck,
          exclusive: m.args.exclusive,
          arguments: m.args.arguments,
        },
        nowait: m.args.nowait,
      };
    case 'basic.cancel':
      return { method: { method: 'basic.cancel', consumerTag: m.args.consumerTag }, nowait: m.args.nowait };
    case 'basic.get':
      return { method: { method: 'basic.get', queue: m.args.queue, noAck: m.args.noAck }, nowait: WAIT };
    case 'basic.recover':
    case 'basic.recover-async':
      // recover-async (deprecated) is recover without the ok; both requeue, as RabbitMQ does.
      return { method: { method: 'basic.recover' }, nowait: m.name === 'basic.recover-async' };
    default:
      return { method: { method: 'invalid', name: m.name }, nowait: WAIT };
  }
}

/** The method that carries `reply` (basic.get-ok's content is the channel's to add). */
export function methodOfReply(reply: ChannelReply): AmqpMethodInit {
  switch (reply.method) {
    case 'queue.declare-ok':
      return {
        name: reply.method,
        args: { queue: reply.queue, messageCount: reply.messageCount, consumerCount: reply.consumerCount },
      };
    case 'queue.delete-ok':
    case 'queue.purge-ok':
      return { name: reply.method, args: { messageCount: reply.messageCount } };
    case 'basic.consume-ok':
    case 'basic.cancel-ok':
      return { name: reply.method, args: { consumerTag: reply.consumerTag } };
    case 'channel.flow-ok':
      return { name: reply.method, args: { active: reply.active } };
    case 'basic.get-ok':
      return {
        name: reply.method,
        args: {
          deliveryTag: reply.deliveryTag,
          redelivered: reply.redelivered,
          exchange: reply.exchange,
          routingKey: reply.routingKey,
          messageCount: reply.messageCount,
        },
      };
    case 'basic.get-empty':
      return { name: reply.method, args: {} };
    default:
      return { name: reply.method satisfies MethodName, args: {} } as AmqpMethodInit;
  }
}
