import type { BasicProperties, Frame } from '@styx/client/wire';
import {
  encodeAckFrame,
  encodeDeliverFrame,
  encodeNackFrame,
  encodeProperties,
  encodePropertiesOnce,
} from '@styx/client/wire';
import type { Broker, Session } from '../../broker/broker.ts';
import type { Logger } from '../../logging/logger.ts';
import type { StoredMessage } from '../../queue/types.ts';
import { ChannelCore } from '../../session/channel-core.ts';
import type { ChannelReply, ReturnedMessage } from '../../session/channel-methods.ts';
import type { ChannelOutput } from '../../session/channel-output.ts';
import { frameOfReply, methodOfFrame } from './frame-methods.ts';

/** What a channel needs from its connection. */
export interface ChannelHost {
  readonly id: string;
  readonly session: Session;
  readonly logger: Logger;
  /** Queue a frame (a Frame, or one already encoded) for the next batched socket write. */
  send(frame: Frame | Uint8Array): void;
  /** The channel finished closing (close-ok sent or received). */
  channelClosed(channel: Channel): void;
  /** A connection-level fault on this channel: close the whole connection. */
  closeWithError(err: unknown): void;
}

/**
 * One channel of a WebSocket connection: a thin adapter between protobuf frames and the channel
 * core (session/channel-core.ts), which holds the AMQP semantics. Inbound frames become methods;
 * the core's output becomes frames. Deliveries take the fast path: encoded straight to bytes when
 * the queue delivers, the message's properties encoded once per message.
 */
export class Channel implements ChannelOutput<Uint8Array> {
  readonly number: number;
  /** The channel's semantics; what the broker sees (and queues deliver to) as the channel. */
  readonly core: ChannelCore<Uint8Array>;
  private readonly host: ChannelHost;

  constructor(host: ChannelHost, broker: Broker, number: number) {
    this.host = host;
    this.number = number;
    this.core = ChannelCore.of(host, broker, number, this);
  }

  get isOpen(): boolean {
    return this.core.isOpen;
  }

  /** Consumers registered on this channel. */
  get consumerCount(): number {
    return this.core.consumerCount;
  }

  /** Publishes taken in confirm mode and not yet confirmed (acked or nacked) to the client. */
  get unconfirmedPublishes(): number {
    return this.core.unconfirmedPublishes;
  }

  /** Published at least once (a publisher, for `rabbitmq_global_publishers`). */
  get hasPublished(): boolean {
    return this.core.hasPublished;
  }

  /** Handle one frame from the client, in order. */
  handle(frame: Frame): void {
    this.core.handle(methodOfFrame(frame));
  }

  /** The connection is gone: release without sending anything. */
  abandon(): void {
    this.core.abandon();
  }

  // ------------------------------------------------------------------------- ChannelOutput

  reply(reply: ChannelReply): void {
    this.host.send(frameOfReply(this.number, reply));
  }

  prepareDelivery(
    consumerTag: string,
    deliveryTag: number,
    redelivered: boolean,
    message: StoredMessage,
    properties: BasicProperties,
  ): Uint8Array {
    // The message's properties are encoded once per properties object (at publish: never, the
    // publisher's bytes are kept); per-delivery properties (x-delivery-count) are encoded each time.
    return encodeDeliverFrame(
      this.number,
      consumerTag,
      deliveryTag,
      redelivered,
      message.exchange,
      message.routingKey,
      properties === message.properties ? encodePropertiesOnce(properties) : encodeProperties(properties),
      message.body,
    );
  }

  sendDelivery(frame: Uint8Array): void {
    this.host.send(frame);
  }

  confirm(seq: number, multiple: boolean, ack: boolean): void {
    this.host.send(
      ack ? encodeAckFrame(this.number, seq, multiple) : encodeNackFrame(this.number, seq, multiple, false),
    );
  }

  returned(message: ReturnedMessage): void {
    this.host.send({ channel: this.number, method: 'basicReturn', basicReturn: message });
  }

  cancelled(consumerTag: string): void {
    this.host.send({ channel: this.number, method: 'basicCancel', basicCancel: { consumerTag } });
  }

  close(replyCode: number, replyText: string, failingMethod: string): void {
    this.host.send({
      channel: this.number,
      method: 'channelClose',
      channelClose: { replyCode, replyText, failingMethod },
    });
  }

  closed(): void {
    this.host.channelClosed(this);
  }

  connectionError(err: unknown): void {
    this.host.closeWithError(err);
  }
}
