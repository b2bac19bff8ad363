import type { BasicProperties, BasicPublish, Frame } from '@styx/client/wire';
import {
  BodyAssembler,
  encodeAckFrame,
  encodeDeliverFrame,
  encodeFrame,
  encodeNackFrame,
  encodeProperties,
  encodePropertiesOnce,
  encodeWithBody,
  otherBytesBound,
  WireError,
} from '@styx/client/wire';
import type { Broker, Session } from '../../broker/broker.ts';
import { Code, ConnectionError } from '../../errors/amqp-error.ts';
import type { Logger } from '../../logging/logger.ts';
import type { StoredMessage } from '../../queue/types.ts';
import { ChannelCore } from '../../session/channel-core.ts';
import type { ChannelReply, ReturnedMessage } from '../../session/channel-methods.ts';
import type { ChannelOutput } from '../../session/channel-output.ts';
import { frameOfReply, methodOfFrame, publishMethod } from './frame-methods.ts';

/** What a channel needs from its connection. */
export interface ChannelHost {
  readonly id: string;
  readonly session: Session;
  readonly logger: Logger;
  /** The negotiated largest WebSocket message, bytes. */
  readonly frameMax: number;
  /** Whether the client takes bodies in BodyPart frames (it announced `body_parts`). */
  readonly takesBodyParts: boolean;
  /** Queue a frame (a Frame, or one already encoded) for the next batched socket write. */
  send(frame: Frame | Uint8Array): void;
  /** The channel finished closing (close-ok sent or received). */
  channelClosed(channel: Channel): void;
  /** A connection-level fault on this channel: close the whole connection. */
  closeWithError(err: unknown): void;
}

/** A delivery as the channel prepares it: one encoded frame, or a header frame and its body parts. */
type PreparedDelivery = Uint8Array | readonly Uint8Array[];

const EMPTY_BODY = new Uint8Array(0);

/**
 * One channel of a WebSocket connection: a thin adapter between protobuf frames and the channel
 * core (session/channel-core.ts), which holds the AMQP semantics. Inbound frames become methods;
 * the core's output becomes frames. Deliveries take the fast path: encoded straight to bytes when
 * the queue delivers, the message's properties encoded once per message.
 *
 * Bodies too large for one frame come and go in BodyPart frames (proto/styx.proto): a publish that
 * declares `body_size` is joined here from its parts — never more than max_message_size of it
 * held, the size checked against it before any part is taken — and handed to the core whole.
 */
export class Channel implements ChannelOutput<PreparedDelivery> {
  readonly number: number;
  /** The channel's semantics; what the broker sees (and queues deliver to) as the channel. */
  readonly core: ChannelCore<PreparedDelivery>;
  private readonly host: ChannelHost;
  private readonly broker: Broker;
  /** The body of a publish arriving in parts, and the publish itself. */
  private readonly assembler = new BodyAssembler();
  private partsOf: BasicPublish | undefined;

  constructor(host: ChannelHost, broker: Broker, number: number) {
    this.host = host;
    this.broker = broker;
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

  /**
   * Handle one frame from the client, in order. Throws ConnectionError on a body part out of place
   * (505) or one past the declared size (501).
   */
  handle(frame: Frame): void {
    if (frame.method === 'bodyPart') {
      this.takePart(frame.bodyPart.data);
      return;
    }
    if (this.assembler.assembling) {
      // The channel closed under a body in parts (a channel error): its parts are dropped, the
      // client's close-ok ends it. On an open channel nothing may come between the parts.
      if (this.core.isOpen) {
        throw new ConnectionError(
          Code.UNEXPECTED_FRAME,
          `${frame.method} on channel ${this.number} while ${this.assembler.remaining} bytes of a body were still to come`,
        );
      }
      this.dropBody();
    }
    if (frame.method === 'basicPublish' && (frame.basicPublish.bodySize ?? 0) > 0) {
      this.startBody(frame.basicPublish);
      return;
    }
    this.core.handle(methodOfFrame(frame));
  }

  private startBody(publish: BasicPublish): void {
    const size = publish.bodySize ?? 0;
    if (publish.body.length !== 0) {
      throw new ConnectionError(
        Code.FRAME_ERROR,
        `a publish with body_size ${size} carries ${publish.body.length} body bytes itself`,
      );
    }
    if (size > this.broker.maxMessageSize) {
      // Refused (406) on the declared size; the parts that follow are dropped with the channel.
      this.core.handle(publishMethod(publish, EMPTY_BODY, size));
      return;
    }
    this.partsOf = publish;
    this.assembler.start(size);
  }

  private takePart(data: Uint8Array): void {
    if (!this.core.isOpen) {
      this.dropBody(); // parts of a publish sent before the client heard its channel was closing
      return;
    }
    let body: Uint8Array | undefined;
    try {
      body = this.assembler.add(data);
    } catch (err) {
      if (err instanceof WireError) throw new ConnectionError(err.code, err.message);
      throw err;
    }
    if (body === undefined) return;
    const publish = this.partsOf as BasicPublish;
    this.partsOf = undefined;
    this.core.handle(publishMethod(publish, body));
  }

  private dropBody(): void {
    this.assembler.reset();
    this.partsOf = undefined;
  }

  /** The connection is gone: release without sending anything. */
  abandon(): void {
    this.core.abandon();
  }

  // ------------------------------------------------------------------------- ChannelOutput

  reply(reply: ChannelReply): void {
    if (reply.method === 'basic.get-ok') {
      this.sendWithBody(frameOfReply(this.number, { ...reply, body: EMPTY_BODY }), reply.body);
      return;
    }
    this.host.send(frameOfReply(this.number, reply));
  }

  /**
   * Send `frame` (a get-ok or return, its body left out) with `body`: whole in it when that fits in
   * one WebSocket message (or the client takes no body parts), else declaring `body_size`, the body
   * in parts.
   */
  private sendWithBody(frame: Frame, body: Uint8Array): void {
    const encode = (b: Uint8Array, bodySize: number): Uint8Array => encodeFrame(withBody(frame, b, bodySize));
    if (!this.host.takesBodyParts) {
      this.host.send(encode(body, 0));
      return;
    }
    const frames = encodeWithBody(this.number, body, this.host.frameMax, otherBytesBound(undefined), encode);
    if (frames instanceof Uint8Array) this.host.send(frames);
    else for (const f of frames) this.host.send(f);
  }

  prepareDelivery(
    consumerTag: string,
    deliveryTag: number,
    redelivered: boolean,
    message: StoredMessage,
    properties: BasicProperties,
  ): PreparedDelivery {
    // The message's properties are encoded once per properties object (at publish: never, the
    // publisher's bytes are kept); per-delivery properties (x-delivery-count) are encoded each time.
    const encoded =
      properties === message.properties ? encodePropertiesOnce(properties) : encodeProperties(properties);
    const { exchange, routingKey, body } = message;
    const encode = (b: Uint8Array, bodySize: number): Uint8Array =>
      encodeDeliverFrame(
        this.number,
        consumerTag,
        deliveryTag,
        redelivered,
        exchange,
        routingKey,
        encoded,
        b,
        bodySize,
      );
    if (!this.host.takesBodyParts) return encode(body, 0);
    const other = otherBytesBound(encoded, consumerTag, exchange, routingKey);
    return encodeWithBody(this.number, body, this.host.frameMax, other, encode);
  }

  sendDelivery(prepared: PreparedDelivery): void {
    if (prepared instanceof Uint8Array) this.host.send(prepared);
    else for (const frame of prepared) this.host.send(frame);
  }

  confirm(seq: number, multiple: boolean, ack: boolean): void {
    this.host.send(
      ack ? encodeAckFrame(this.number, seq, multiple) : encodeNackFrame(this.number, seq, multiple, false),
    );
  }

  returned(message: ReturnedMessage): void {
    this.sendWithBody(
      { channel: this.number, method: 'basicReturn', basicReturn: { ...message, body: EMPTY_BODY } },
      message.body,
    );
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

/** `frame` (a get-ok or return) with `body`, or declaring `bodySize` bytes in parts. */
function withBody(frame: Frame, body: Uint8Array, bodySize: number): Frame {
  if (frame.method === 'basicGetOk') return { ...frame, basicGetOk: { ...frame.basicGetOk, body, bodySize } };
  if (frame.method === 'basicReturn')
    return { ...frame, basicReturn: { ...frame.basicReturn, body, bodySize } };
  return frame;
}
