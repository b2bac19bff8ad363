import type { BasicProperties, BasicPublish, Frame } from '@styx/client/wire';
import {
  BodyAssembler,
  batchEntrySize,
  encodeAckFrame,
  encodeBodyParts,
  encodeDeliverFrame,
  encodeFrame,
  encodeNackFrame,
  encodeProperties,
  encodePropertiesOnce,
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
 * Bytes a deliver frame takes besides its body and properties, at most, for strings of these
 * lengths in UTF-16 units (each at most 3 UTF-8 bytes): below it, no delivery needs measuring.
 */
function deliverOverheadBound(consumerTag: string, exchange: string, routingKey: string): number {
  return 3 * (consumerTag.length + exchange.length + routingKey.length) + 64;
}

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
    this.core = new ChannelCore({
      broker,
      session: host.session,
      connectionId: host.id,
      number,
      logger: host.logger,
      output: this,
    });
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
    if (reply.method === 'basic.get-ok' && this.splitsBody(reply.body.length)) {
      this.sendInParts(frameOfReply(this.number, { ...reply, body: EMPTY_BODY }), reply.body);
      return;
    }
    this.host.send(frameOfReply(this.number, reply));
  }

  /** Whether a body of `length` bytes may need parts (then measured exactly by `sendInParts`). */
  private splitsBody(length: number): boolean {
    return this.host.takesBodyParts && length + 1024 > this.host.frameMax;
  }

  /**
   * Send `frame` (a get-ok or return, its body left out) with `body`: whole in it when that fits in
   * one WebSocket message, else with `body_size` and the body in parts.
   */
  private sendInParts(frame: Frame, body: Uint8Array): void {
    const header = encodeFrame(withBodySize(frame, body.length));
    if (batchEntrySize(header.length + body.length + 4) <= this.host.frameMax) {
      this.host.send(encodeFrame(withBody(frame, body)));
      return;
    }
    this.host.send(header);
    for (const part of encodeBodyParts(this.number, body, this.host.frameMax)) this.host.send(part);
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
    const body = message.body;
    const { exchange, routingKey } = message;
    if (
      this.host.takesBodyParts &&
      body.length + encoded.length + deliverOverheadBound(consumerTag, exchange, routingKey) >
        this.host.frameMax
    ) {
      const header = encodeDeliverFrame(
        this.number,
        consumerTag,
        deliveryTag,
        redelivered,
        exchange,
        routingKey,
        encoded,
        EMPTY_BODY,
        body.length,
      );
      // The whole frame is the header with the body field for the body_size one (as long), give or
      // take the method's length varint.
      if (batchEntrySize(header.length + body.length + 4) > this.host.frameMax)
        return [header, ...encodeBodyParts(this.number, body, this.host.frameMax)];
    }
    return encodeDeliverFrame(
      this.number,
      consumerTag,
      deliveryTag,
      redelivered,
      exchange,
      routingKey,
      encoded,
      body,
    );
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
    if (this.splitsBody(message.body.length)) {
      this.sendInParts(
        { channel: this.number, method: 'basicReturn', basicReturn: { ...message, body: EMPTY_BODY } },
        message.body,
      );
      return;
    }
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

/** `frame` (a get-ok or return) declaring a body of `size` bytes in parts. */
function withBodySize(frame: Frame, size: number): Frame {
  if (frame.method === 'basicGetOk') return { ...frame, basicGetOk: { ...frame.basicGetOk, bodySize: size } };
  if (frame.method === 'basicReturn')
    return { ...frame, basicReturn: { ...frame.basicReturn, bodySize: size } };
  return frame;
}

/** `frame` (a get-ok or return) carrying `body` whole. */
function withBody(frame: Frame, body: Uint8Array): Frame {
  if (frame.method === 'basicGetOk') return { ...frame, basicGetOk: { ...frame.basicGetOk, body } };
  if (frame.method === 'basicReturn') return { ...frame, basicReturn: { ...frame.basicReturn, body } };
  return frame;
}
