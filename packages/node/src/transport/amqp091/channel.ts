import type { BasicProperties } from '@styx/client/wire';
import { objectSlot } from '@styx/client/wire';
import type { Broker, Session } from '../../broker/broker.ts';
import type { Logger } from '../../logging/logger.ts';
import type { StoredMessage } from '../../queue/types.ts';
import { ChannelCore } from '../../session/channel-core.ts';
import type { ChannelReply, ReturnedMessage } from '../../session/channel-methods.ts';
import type { ChannelOutput } from '../../session/channel-output.ts';
import type { AmqpCommand } from './command-assembler.ts';
import { methodIds, methodOfCommand, methodOfReply } from './command-methods.ts';
import { encodeContentFrames, encodeMethodFrame } from './frame-encoder.ts';
import { encodeAckFrame, encodeDeliverFrames, encodePropertiesBytes } from './hot-path.ts';
import { replyText as withReplyName } from './reply-text.ts';

/** What a channel needs from its connection. */
export interface AmqpChannelHost {
  readonly id: string;
  readonly session: Session;
  readonly logger: Logger;
  /** The negotiated frame_max: content bodies are split into frames of this size. */
  readonly frameMax: number;
  /** Queue encoded frames for the next batched socket write. */
  write(frames: Uint8Array): void;
  /** The channel finished closing (close-ok sent or received). */
  channelClosed(channel: AmqpChannel): void;
  /** A connection-level fault on this channel (caused by `failingMethod`, if named): close the connection. */
  closeWithError(err: unknown, failingMethod?: string): void;
}

/**
 * A message's content-header property bytes, encoded once per properties object and reused for
 * every delivery of it (and, for a message published over AMQP, the publisher's own bytes: see
 * `rememberPropertiesBytes`). Kept in a slot on the object itself (object-slot.ts): a WeakMap
 * entry per published message cost ~0.8 µs of a publish's ~15 µs, and ephemeron work in every GC.
 * Safe because a properties object is never modified once encoded or decoded (properties-encoding.ts).
 */
const propertiesBytes = objectSlot<BasicProperties, Uint8Array>();

/** The bytes a publisher sent for `properties`, so deliveries of the message send them unchanged. */
export function rememberPropertiesBytes(properties: BasicProperties, bytes: Uint8Array): void {
  propertiesBytes.write(properties, bytes);
}

function propertiesBytesOnce(properties: BasicProperties): Uint8Array {
  let bytes = propertiesBytes.read(properties);
  if (bytes === undefined) {
    bytes = encodePropertiesBytes(properties);
    propertiesBytes.write(properties, bytes);
  }
  return bytes;
}

/** The replies a client may ask to go without (nowait), by the name of the reply. */
const NOWAIT_REPLIES: ReadonlySet<string> = new Set([
  'exchange.declare-ok',
  'exchange.delete-ok',
  'exchange.bind-ok',
  'exchange.unbind-ok',
  'queue.declare-ok',
  'queue.delete-ok',
  'queue.purge-ok',
  'queue.bind-ok',
  'basic.consume-ok',
  'basic.cancel-ok',
  'confirm.select-ok',
  'basic.recover-ok',
]);

/**
 * The reply a skippable reply answers, by the name of the method it answers: looked up per
 * command without building a '<method>-ok' string for every publish and ack.
 */
const NOWAIT_REPLY_OF: ReadonlyMap<string, string> = new Map(
  [...NOWAIT_REPLIES].map((reply) => [reply.slice(0, -'-ok'.length), reply]),
);

/**
 * One channel of an AMQP 0-9-1 connection: a thin adapter between assembled commands and the
 * channel core (session/channel-core.ts), which holds the semantics. Commands become methods; the
 * core's output becomes frames, content split at the negotiated frame_max. Deliveries and publisher
 * acks take the hand-tuned encoders (hot-path.ts), the message's properties encoded once.
 */
export class AmqpChannel implements ChannelOutput<Buffer> {
  readonly number: number;
  readonly core: ChannelCore<Buffer>;
  private readonly host: AmqpChannelHost;
  /**
   * For each reply a client may skip, whether each pending method of that kind asked to (nowait):
   * replies come in the order their methods came, so the first flag is the next reply's.
   */
  private readonly nowait = new Map<string, boolean[]>();

  constructor(host: AmqpChannelHost, broker: Broker, number: number) {
    this.host = host;
    this.number = number;
    this.core = ChannelCore.of(host, broker, number, this);
  }

  /** Handle one command from the client, in order. */
  handle(command: Exclude<AmqpCommand, { kind: 'heartbeat' }>): void {
    const { method, nowait } = methodOfCommand(command);
    if (command.kind === 'content' && method.method === 'basic.publish' && method.properties !== undefined) {
      rememberPropertiesBytes(method.properties, command.propertiesBytes);
    }
    const replyName = NOWAIT_REPLY_OF.get(method.method);
    if (replyName !== undefined) {
      const flags = this.nowait.get(replyName);
      if (flags === undefined) this.nowait.set(replyName, [nowait]);
      else flags.push(nowait);
    }
    this.core.handle(method);
  }

  /** The connection is gone: release without sending anything. */
  abandon(): void {
    this.core.abandon();
  }

  // ------------------------------------------------------------------------- ChannelOutput

  reply(reply: ChannelReply): void {
    if (NOWAIT_REPLIES.has(reply.method) && this.nowait.get(reply.method)?.shift() === true) return;
    if (reply.method === 'basic.get-ok') {
      this.host.write(
        encodeContentFrames(
          this.number,
          methodOfReply(reply),
          reply.properties,
          reply.body,
          this.host.frameMax,
        ),
      );
      return;
    }
    this.host.write(encodeMethodFrame(this.number, methodOfReply(reply)));
  }

  prepareDelivery(
    consumerTag: string,
    deliveryTag: number,
    redelivered: boolean,
    message: StoredMessage,
    properties: BasicProperties,
  ): Buffer {
    return encodeDeliverFrames(
      this.number,
      { consumerTag, deliveryTag, redelivered, exchange: message.exchange, routingKey: message.routingKey },
      properties === message.properties ? propertiesBytesOnce(properties) : encodePropertiesBytes(properties),
      message.body,
      this.host.frameMax,
    );
  }

  sendDelivery(frames: Buffer): void {
    this.host.write(frames);
  }

  confirm(seq: number, multiple: boolean, ack: boolean): void {
    this.host.write(
      ack
        ? encodeAckFrame(this.number, seq, multiple)
        : encodeMethodFrame(this.number, {
            name: 'basic.nack',
            args: { deliveryTag: seq, multiple, requeue: false },
          }),
    );
  }

  returned(message: ReturnedMessage): void {
    this.host.write(
      encodeContentFrames(
        this.number,
        {
          name: 'basic.return',
          args: {
            replyCode: message.replyCode,
            replyText: message.replyText,
            exchange: message.exchange,
            routingKey: message.routingKey,
          },
        },
        message.properties,
        message.body,
        this.host.frameMax,
      ),
    );
  }

  cancelled(consumerTag: string): void {
    // consumer_cancel_notify: the server's basic.cancel, which the client does not answer.
    this.host.write(
      encodeMethodFrame(this.number, { name: 'basic.cancel', args: { consumerTag, nowait: true } }),
    );
  }

  close(replyCode: number, replyText: string, failingMethod: string): void {
    const { classId, methodId } = methodIds(failingMethod);
    this.host.write(
      encodeMethodFrame(this.number, {
        name: 'channel.close',
        args: { replyCode, replyText: clip(withReplyName(replyCode, replyText)), classId, methodId },
      }),
    );
  }

  closed(): void {
    this.host.channelClosed(this);
  }

  connectionError(err: unknown, failingMethod?: string): void {
    this.host.closeWithError(err, failingMethod);
  }
}

/** A reply text as a shortstr can carry it: at most 255 bytes (cut at a character boundary). */
export function clip(text: string): string {
  if (Buffer.byteLength(text) <= 255) return text;
  let cut = text.slice(0, 255);
  while (Buffer.byteLength(cut) > 252) cut = cut.slice(0, -1);
  return `${cut}...`;
}
