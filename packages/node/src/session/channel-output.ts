import type { BasicProperties } from '@styx/client/wire';
import type { StoredMessage } from '../queue/types.ts';
import type { ChannelReply, ReturnedMessage } from './channel-methods.ts';

/**
 * Where a channel core's output goes: the transport of its connection implements it, encoding each
 * call in its own frames. Calls come in the order the client must see them.
 *
 * Deliveries go in two steps so that a transport can make their bytes at once, in the queue's turn
 * (WebSocket's fast path encodes a delivery straight to bytes and the message's properties once per
 * message): `prepareDelivery` makes what the transport will send, and the core hands it to
 * `sendDelivery` — at once, or later when it must hold deliveries back (those that arrive before
 * basic.consume-ok went out).
 */
export interface ChannelOutput<Prepared = unknown> {
  /** The reply of a synchronous method (declare-ok, consume-ok, close-ok, get-ok …). */
  reply(reply: ChannelReply): void;
  /**
   * basic.deliver for consumer `consumerTag`. `properties` is `message.properties` itself when the
   * delivery adds nothing to them (so a transport may encode them once per message), or a copy with
   * per-delivery headers (`x-delivery-count`).
   */
  prepareDelivery(
    consumerTag: string,
    deliveryTag: number,
    redelivered: boolean,
    message: StoredMessage,
    properties: BasicProperties,
  ): Prepared;
  /** Send a delivery made by `prepareDelivery`. */
  sendDelivery(prepared: Prepared): void;
  /** Publisher confirm: basic.ack (`ack`) or basic.nack of publish `seq` (and all before, if `multiple`). */
  confirm(seq: number, multiple: boolean, ack: boolean): void;
  /** basic.return of an unroutable mandatory message. */
  returned(message: ReturnedMessage): void;
  /** basic.cancel from the server: the queue removed the consumer (deleted, or taken exclusively). */
  cancelled(consumerTag: string): void;
  /** channel.close from the server on a channel error; the core then waits for close-ok. */
  close(replyCode: number, replyText: string, failingMethod: string): void;
  /** The channel finished closing (close-ok sent or received): the connection forgets it. */
  closed(): void;
  /**
   * A connection-level fault on this channel (a `ConnectionError`, or anything unexpected): close
   * the connection. `failingMethod`: the method that caused it, when one did ('queue.declare').
   */
  connectionError(err: unknown, failingMethod?: string): void;
}
