/**
 * The AMQP channel methods as the channel core takes and answers them, whatever the wire: a
 * transport decodes its frames into `ChannelMethod`s and encodes `ChannelReply`s (and the other
 * `ChannelOutput` calls) into its own. Message properties and field tables are the broker's message
 * model (what queues store), not a wire's: a transport converts its own to them.
 */
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import type { ExchangeDeclareArgs, QueueDeclareArgs } from '../broker/broker.ts';

/** basic.publish: a message for an exchange. */
export interface PublishMethod {
  readonly exchange: string;
  readonly routingKey: string;
  /** Return it (basic.return) when it routes to no queue. */
  readonly mandatory: boolean;
  /** Refused (540 NOT_IMPLEMENTED), as in RabbitMQ. */
  readonly immediate: boolean;
  readonly properties: BasicProperties | undefined;
  readonly body: Uint8Array;
  /**
   * The body's length when the transport did not keep the body: a content header that declared
   * more than `max_message_size`, refused (406) before any of the body was buffered.
   */
  readonly bodySize?: number;
}

/** queue.bind / queue.unbind / exchange.bind / exchange.unbind, by what they bind. */
export interface BindMethod {
  /** The queue or exchange bound. */
  readonly destination: string;
  /** The exchange bound to. */
  readonly source: string;
  readonly routingKey: string;
  readonly arguments: FieldTable | undefined;
}

/** What a client may send on an open channel. */
export type ChannelMethod =
  | ({ readonly method: 'basic.publish' } & PublishMethod)
  | { readonly method: 'basic.ack'; readonly deliveryTag: number; readonly multiple: boolean }
  | {
      readonly method: 'basic.nack';
      readonly deliveryTag: number;
      readonly multiple: boolean;
      readonly requeue: boolean;
    }
  | { readonly method: 'basic.reject'; readonly deliveryTag: number; readonly requeue: boolean }
  | { readonly method: 'channel.open' }
  | { readonly method: 'channel.close' }
  /** `name`: the method's name in the client's protocol (the error text when the channel is open). */
  | { readonly method: 'channel.close-ok'; readonly name: string }
  | { readonly method: 'confirm.select' }
  /** `active` false asks the server to stop deliveries (refused, as RabbitMQ does). */
  | { readonly method: 'channel.flow'; readonly active: boolean }
  | {
      readonly method: 'basic.qos';
      readonly prefetchSize: number;
      readonly prefetchCount: number;
      readonly global: boolean;
    }
  | ({ readonly method: 'exchange.declare' } & ExchangeDeclareArgs)
  | { readonly method: 'exchange.delete'; readonly exchange: string; readonly ifUnused: boolean }
  | ({ readonly method: 'exchange.bind' } & BindMethod)
  | ({ readonly method: 'exchange.unbind' } & BindMethod)
  | ({ readonly method: 'queue.declare' } & QueueDeclareArgs)
  | {
      readonly method: 'queue.delete';
      readonly queue: string;
      readonly ifUnused: boolean;
      readonly ifEmpty: boolean;
    }
  | { readonly method: 'queue.purge'; readonly queue: string }
  | ({ readonly method: 'queue.bind' } & BindMethod)
  | ({ readonly method: 'queue.unbind' } & BindMethod)
  | {
      readonly method: 'basic.consume';
      readonly queue: string;
      /** Empty: the server generates one. */
      readonly consumerTag: string;
      readonly noAck: boolean;
      readonly exclusive: boolean;
      /**
       * The consumer's arguments (x-priority...), shown in its facts. AMQP's no-local is not
       * here: RabbitMQ ignores it too.
       */
      readonly arguments?: FieldTable | undefined;
    }
  | { readonly method: 'basic.cancel'; readonly consumerTag: string }
  | { readonly method: 'basic.get'; readonly queue: string; readonly noAck: boolean }
  | { readonly method: 'basic.recover' }
  /** A method of the transport's protocol that is not valid from a client on a channel. */
  | { readonly method: 'invalid'; readonly name: string };

/** basic.get-ok: one message taken from a queue. */
export interface GetOkReply {
  readonly method: 'basic.get-ok';
  readonly deliveryTag: number;
  readonly redelivered: boolean;
  readonly exchange: string;
  readonly routingKey: string;
  /** Messages left ready in the queue. */
  readonly messageCount: number;
  readonly properties: BasicProperties;
  readonly body: Uint8Array;
}

/** The reply of each synchronous method (sent in the order the methods came). */
export type ChannelReply =
  | { readonly method: 'channel.close-ok' }
  | { readonly method: 'confirm.select-ok' }
  | { readonly method: 'channel.flow-ok'; readonly active: boolean }
  | { readonly method: 'basic.qos-ok' }
  | { readonly method: 'exchange.declare-ok' }
  | { readonly method: 'exchange.delete-ok' }
  | { readonly method: 'exchange.bind-ok' }
  | { readonly method: 'exchange.unbind-ok' }
  | {
      readonly method: 'queue.declare-ok';
      readonly queue: string;
      readonly messageCount: number;
      readonly consumerCount: number;
    }
  | { readonly method: 'queue.delete-ok'; readonly messageCount: number }
  | { readonly method: 'queue.purge-ok'; readonly messageCount: number }
  | { readonly method: 'queue.bind-ok' }
  | { readonly method: 'queue.unbind-ok' }
  | { readonly method: 'basic.consume-ok'; readonly consumerTag: string }
  | { readonly method: 'basic.cancel-ok'; readonly consumerTag: string }
  | GetOkReply
  | { readonly method: 'basic.get-empty' }
  | { readonly method: 'basic.recover-ok' };

/** basic.return: a mandatory message that routed to no queue, handed back to its publisher. */
export interface ReturnedMessage {
  readonly replyCode: number;
  readonly replyText: string;
  readonly exchange: string;
  readonly routingKey: string;
  readonly properties: BasicProperties;
  readonly body: Uint8Array;
}
