// Channel and ConfirmChannel: amqplib's promise API over Styx frames.
//
// State machine (amqplib's): opening → open → closing (we sent ChannelClose) → closed, or
// open → closed directly when the server closes the channel or the connection goes away. Once
// closing or closed, every operation fails with IllegalOperationError ('Channel closing' /
// 'Channel closed'): synchronous methods throw it, promise methods reject with it.
//
// Synchronous requests are pipelined: each is sent at once and its reply matched by order (see
// RpcQueue). Replies are handled synchronously as frames are dispatched, so a consumer is
// registered before any delivery that follows its BasicConsumeOk in the same batch.
import type { Connection } from '../connection/connection.ts';
import { Emitter } from '../emitter.ts';
import {
  ConfirmError,
  closeMessage,
  GlobalPrefetchError,
  IllegalOperationError,
  ProtocolError,
  ServerCloseError,
  stackCapture,
} from '../errors.ts';
import type { ChannelClose, Frame, MethodMap, MethodName } from '../wire/index.ts';
import {
  encodeAckFrame,
  encodeNackFrame,
  encodeProperties,
  encodePublishFrame,
  encodeRejectFrame,
  encodeWithBody,
  frame,
  otherBytesBound,
  ReplyCode,
} from '../wire/index.ts';
import {
  assertExchangeArgs,
  assertQueueArgs,
  bindExchangeArgs,
  bindQueueArgs,
  checkExchangeArgs,
  checkQueueArgs,
  consumeArgs,
  deleteExchangeArgs,
  deleteQueueArgs,
  getArgs,
  publishArgs,
  qosArgs,
} from './args.ts';
import type { ConfirmCallback } from './confirm-tracker.ts';
import { ConfirmTracker } from './confirm-tracker.ts';
import { IncomingBodies } from './incoming-bodies.ts';
import type { ContentOf } from './message.ts';
import { deliveryMessage, getMessage, returnMessage } from './message.ts';
import type { PendingRpc } from './rpc-queue.ts';
import { RpcQueue } from './rpc-queue.ts';
import type {
  AssertExchangeOptions,
  AssertExchangeReply,
  AssertQueueOptions,
  AssertQueueReply,
  ConsumeMessage,
  ConsumeOptions,
  ConsumeReply,
  DeleteExchangeOptions,
  DeleteQueueOptions,
  DeleteQueueReply,
  EmptyReply,
  GetMessage,
  GetOptions,
  Message,
  PublishOptions,
  PurgeQueueReply,
  ReturnMessage,
} from './types.ts';

/** What a channel needs from its connection. */
export interface ChannelHost {
  /** Decoded bodies → the platform's content type. */
  readonly content: ContentOf;
  /** Encodes a frame; throws MessageTooLargeError if it cannot fit in a batch. */
  encode(f: Frame): Uint8Array;
  /** Checks a frame encoded elsewhere fits in a batch (MessageTooLargeError if not); returns it. */
  fit(bytes: Uint8Array): Uint8Array;
  /** Queues an encoded frame for this tick's batch. */
  enqueue(bytes: Uint8Array): void;
  /** The negotiated largest WebSocket message, bytes. */
  readonly frameMax: number;
  /** Whether the server takes bodies in BodyPart frames (it announced `body_parts`). */
  readonly bodyParts: boolean;
  /** True while below the write high-water mark; otherwise remembers to emit 'drain' on `ch`. */
  writable(ch: Channel): boolean;
  /** The channel is closed: free its number. */
  release(ch: Channel): void;
}

/** Channel events and their listener arguments. */
export interface ChannelEvents {
  [event: string]: unknown[];
  /** The channel closed, for any reason. */
  close: [];
  /** The server closed the channel with an error, or the channel closed itself on a protocol error. */
  error: [Error];
  /** A mandatory message the server could not route. */
  return: [ReturnMessage];
  /** The write buffer fell back below the high-water mark after publish() returned false. */
  drain: [];
}

type ChannelState = 'opening' | 'open' | 'closing' | 'closed';

/** amqplib's name for a method: 'queueDeclare' → 'QueueDeclare'. */
function amqpMethodName(method: string): string {
  return method.charAt(0).toUpperCase() + method.slice(1);
}

/** Compares a server's failing_method ('queueDeclare', 'queue.declare', 'QueueDeclare') to ours. */
function sameMethod(failing: string, method: MethodName): boolean {
  return failing.replace(/[^a-z]/gi, '').toLowerCase() === method.toLowerCase();
}

function checkString(name: string, value: unknown): void {
  if (typeof value !== 'string') {
    throw new TypeError(`Field '${name}' is the wrong type; must be a string (up to 255 chars)`);
  }
}

const NO_REPLY = 'Channel ended, no reply will be forthcoming';

/** A channel: amqplib's Channel with the same methods, options, replies and events. */
export class Channel extends Emitter<ChannelEvents> {
  /** The connection this channel belongs to (amqplib exposes it too). */
  readonly connection: Connection;
  /** The channel number (amqplib's `ch`). */
  readonly ch: number;
  #host: ChannelHost;
  #state: ChannelState = 'opening';
  #rpcs = new RpcQueue();
  #consumers = new Map<string, (msg: ConsumeMessage | null) => void>();
  /** Set once confirmSelect succeeded. */
  #confirms: ConfirmTracker | null = null;
  /** Why operations are refused, once closing or closed. */
  #refusal: IllegalOperationError | null = null;
  #closeWaiters: { resolve(): void; reject(err: Error): void }[] = [];
  /** The error to emit when our ChannelClose is acknowledged (a client-detected failure). */
  #closeError: Error | null = null;
  /** A body arriving in parts. */
  #bodies = new IncomingBodies();

  /** @internal Created by Connection.createChannel. */
  constructor(host: ChannelHost, number: number, connection: Connection) {
    super();
    this.#host = host;
    this.ch = number;
    this.connection = connection;
  }

  // ------------------------------------------------------------ lifecycle (used by Connection)

  /** @internal Sends ChannelOpen and waits for ChannelOpenOk. */
  _open(): Promise<void> {
    return this.#rpc('channelOpen', {}, ['channelOpenOk'], () => {
      this.#state = 'open';
    });
  }

  /** @internal Puts the channel in confirm mode. */
  _confirmSelect(): Promise<void> {
    return this.#rpc('confirmSelect', {}, ['confirmSelectOk'], () => {
      this.#confirms = new ConfirmTracker();
    });
  }

  /**
   * @internal The connection is gone: close without a handshake (no 'error', as amqplib).
   * `cause` (the connection's error, if any) becomes the cause of every failed confirm.
   */
  _connectionClosed(reason: string, cause?: Error): void {
    if (this.#state === 'closed') return;
    this.#toClosed(stackCapture(reason), cause);
    this.emit('close');
  }

  /**
   * @internal The frame to handle now (`_accept`): `f`, or the method whose body just came in
   * parts; undefined while parts are due. Throws WireError on parts out of place (see
   * IncomingBodies): a connection error.
   */
  _joinBody(f: Frame): Frame | undefined {
    return this.#bodies.take(f);
  }

  /** @internal Handles one frame for this channel. */
  _accept(f: Frame): void {
    switch (f.method) {
      case 'basicDeliver':
        // A closing channel drops deliveries: the server requeues them when the close completes.
        if (this.#state === 'open')
          this.#guard(() => this.#deliver(deliveryMessage(f.basicDeliver, this.#host.content)));
        return;
      case 'basicReturn':
        if (this.#state !== 'closed')
          this.#guard(() => this.emit('return', returnMessage(f.basicReturn, this.#host.content)));
        return;
      case 'basicAck':
        this.#confirms?.ack(f.basicAck.deliveryTag, f.basicAck.multiple);
        return;
      case 'basicNack':
        this.#confirms?.nack(f.basicNack.deliveryTag, f.basicNack.multiple, new ConfirmError('nacked'));
        return;
      case 'basicCancel':
        if (this.#state === 'open') this.#guard(() => this.#serverCancel(f.basicCancel.consumerTag));
        return;
      case 'channelClose':
        this.#serverClose(f.channelClose);
        return;
      case 'channelCloseOk':
        if (this.#state === 'closing') {
          this.#finishClose();
          return;
        }
        break;
      default:
        break;
    }
    this.#reply(f);
  }

  // ------------------------------------------------------------ public API

  /** Closes the channel; resolves when the server has acknowledged. */
  close(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#assertUsable();
      this.#closeWaiters.push({ resolve, reject });
      this.#startClose(ReplyCode.REPLY_SUCCESS, 'Goodbye', null);
    });
  }

  /** Declares a queue ('' for a server-named one). */
  assertQueue(queue: string, options?: AssertQueueOptions): Promise<AssertQueueReply> {
    return this.#rpc('queueDeclare', assertQueueArgs(queue, options), ['queueDeclareOk'], (f) => {
      const ok = (f as { queueDeclareOk: MethodMap['queueDeclareOk'] }).queueDeclareOk;
      return { queue: ok.queue, messageCount: ok.messageCount, consumerCount: ok.consumerCount };
    });
  }

  /** Checks that a queue exists (a passive declare); the channel closes with 404 if not. */
  checkQueue(queue: string): Promise<AssertQueueReply> {
    return this.#rpc('queueDeclare', checkQueueArgs(queue), ['queueDeclareOk'], (f) => {
      const ok = (f as { queueDeclareOk: MethodMap['queueDeclareOk'] }).queueDeclareOk;
      return { queue: ok.queue, messageCount: ok.messageCount, consumerCount: ok.consumerCount };
    });
  }

  deleteQueue(queue: string, options?: DeleteQueueOptions): Promise<DeleteQueueReply> {
    return this.#rpc('queueDelete', deleteQueueArgs(queue, options), ['queueDeleteOk'], (f) => ({
      messageCount: (f as { queueDeleteOk: MethodMap['queueDeleteOk'] }).queueDeleteOk.messageCount,
    }));
  }

  purgeQueue(queue: string): Promise<PurgeQueueReply> {
    return this.#rpc('queuePurge', { queue }, ['queuePurgeOk'], (f) => ({
      messageCount: (f as { queuePurgeOk: MethodMap['queuePurgeOk'] }).queuePurgeOk.messageCount,
    }));
  }

  bindQueue(
    queue: string,
    source: string,
    pattern: string,
    args?: Record<string, unknown>,
  ): Promise<EmptyReply> {
    return this.#rpc('queueBind', bindQueueArgs(queue, source, pattern, args), ['queueBindOk'], () => ({}));
  }

  unbindQueue(
    queue: string,
    source: string,
    pattern: string,
    args?: Record<string, unknown>,
  ): Promise<EmptyReply> {
    return this.#rpc(
      'queueUnbind',
      bindQueueArgs(queue, source, pattern, args),
      ['queueUnbindOk'],
      () => ({}),
    );
  }

  assertExchange(
    exchange: string,
    type: string,
    options?: AssertExchangeOptions,
  ): Promise<AssertExchangeReply> {
    return this.#rpc(
      'exchangeDeclare',
      assertExchangeArgs(exchange, type, options),
      ['exchangeDeclareOk'],
      () => ({
        exchange,
      }),
    );
  }

  checkExchange(exchange: string): Promise<EmptyReply> {
    return this.#rpc('exchangeDeclare', checkExchangeArgs(exchange), ['exchangeDeclareOk'], () => ({}));
  }

  deleteExchange(exchange: string, options?: DeleteExchangeOptions): Promise<EmptyReply> {
    return this.#rpc(
      'exchangeDelete',
      deleteExchangeArgs(exchange, options),
      ['exchangeDeleteOk'],
      () => ({}),
    );
  }

  bindExchange(
    destination: string,
    source: string,
    pattern: string,
    args?: Record<string, unknown>,
  ): Promise<EmptyReply> {
    return this.#rpc(
      'exchangeBind',
      bindExchangeArgs(destination, source, pattern, args),
      ['exchangeBindOk'],
      () => ({}),
    );
  }

  unbindExchange(
    destination: string,
    source: string,
    pattern: string,
    args?: Record<string, unknown>,
  ): Promise<EmptyReply> {
    return this.#rpc(
      'exchangeUnbind',
      bindExchangeArgs(destination, source, pattern, args),
      ['exchangeUnbindOk'],
      () => ({}),
    );
  }

  /**
   * Publishes a message. Returns false when the connection's write buffer is above its high-water
   * mark (keep publishing only after 'drain'); the message is queued either way. Throws
   * IllegalOperationError on a closed channel and MessageTooLargeError for a message that cannot be
   * sent (see MessageTooLargeError). A body larger than one frame goes in BodyPart frames; one over
   * the server's max_message_size (`connection.serverProperties.max_message_size`) closes the
   * channel with 406.
   */
  publish(exchange: string, routingKey: string, content: Uint8Array, options?: PublishOptions): boolean {
    return this._publish(exchange, routingKey, content, options, undefined);
  }

  /** publish('', queue, content, options). */
  sendToQueue(queue: string, content: Uint8Array, options?: PublishOptions): boolean {
    return this._publish('', queue, content, options, undefined);
  }

  /** @internal publish, registering a confirm callback on a confirm channel. */
  protected _publish(
    exchange: string,
    routingKey: string,
    content: Uint8Array,
    options: PublishOptions | undefined,
    confirm: ConfirmCallback | undefined,
  ): boolean {
    this.#assertUsable();
    checkString('exchange', exchange);
    checkString('routingKey', routingKey);
    if (!(content instanceof Uint8Array)) throw new TypeError('content is not a buffer');
    const p = publishArgs(exchange, routingKey, content, options);
    const properties = p.properties == null ? undefined : encodeProperties(p.properties);
    const frames = this.#publishFrames(p, properties);
    // Registered only once the frames are known to be sendable, so sequence numbers stay dense.
    this.#confirms?.register(confirm);
    for (const bytes of frames) this.#host.enqueue(bytes);
    return this.#host.writable(this);
  }

  /**
   * Starts a consumer. `onMessage` gets each message, and null if the server cancels the consumer
   * (e.g. the queue was deleted). Resolves with the consumer tag.
   */
  consume(
    queue: string,
    onMessage: (msg: ConsumeMessage | null) => void,
    options?: ConsumeOptions,
  ): Promise<ConsumeReply> {
    return this.#rpc('basicConsume', consumeArgs(queue, options), ['basicConsumeOk'], (f) => {
      const consumerTag = (f as { basicConsumeOk: MethodMap['basicConsumeOk'] }).basicConsumeOk.consumerTag;
      this.#consumers.set(consumerTag, onMessage);
      return { consumerTag };
    });
  }

  /** Cancels a consumer; messages already on their way may still arrive until this resolves. */
  cancel(consumerTag: string): Promise<ConsumeReply> {
    return this.#rpc('basicCancel', { consumerTag }, ['basicCancelOk'], () => {
      this.#consumers.delete(consumerTag);
      return { consumerTag };
    });
  }

  /** Fetches one message, or false when the queue is empty. */
  get(queue: string, options?: GetOptions): Promise<GetMessage | false> {
    return this.#rpc('basicGet', getArgs(queue, options), ['basicGetOk', 'basicGetEmpty'], (f) =>
      f.method === 'basicGetOk' ? getMessage(f.basicGetOk, this.#host.content) : false,
    );
  }

  /** Acknowledges a message (and every earlier unacknowledged one on this channel if allUpTo). */
  ack(message: Message, allUpTo?: boolean): void {
    this.#assertUsable();
    this.#sendEncoded(encodeAckFrame(this.ch, message.fields.deliveryTag, Boolean(allUpTo)));
  }

  /** Acknowledges every outstanding message on this channel. */
  ackAll(): void {
    this.#assertUsable();
    this.#sendEncoded(encodeAckFrame(this.ch, 0, true));
  }

  /** Rejects a message (and earlier ones if allUpTo); requeues unless requeue is false. */
  nack(message: Message, allUpTo?: boolean, requeue?: boolean): void {
    this.#assertUsable();
    this.#sendEncoded(
      encodeNackFrame(
        this.ch,
        message.fields.deliveryTag,
        Boolean(allUpTo),
        requeue === undefined ? true : Boolean(requeue),
      ),
    );
  }

  /** Rejects every outstanding message on this channel. */
  nackAll(requeue?: boolean): void {
    this.#assertUsable();
    this.#sendEncoded(encodeNackFrame(this.ch, 0, true, requeue === undefined ? true : Boolean(requeue)));
  }

  /** Rejects one message; requeues unless requeue is false. */
  reject(message: Message, requeue?: boolean): void {
    this.#assertUsable();
    this.#sendEncoded(
      encodeRejectFrame(this.ch, message.fields.deliveryTag, requeue === undefined ? true : Boolean(requeue)),
    );
  }

  /**
   * Limits unacknowledged deliveries per consumer (for consumers started after this). `global`
   * (channel-wide) prefetch is refused: Styx's replicated queues have no channel-wide prefetch, and
   * the server would refuse it too.
   */
  prefetch(count: number, global?: boolean): Promise<EmptyReply> {
    if (global) return Promise.reject(new GlobalPrefetchError());
    return this.#rpc('basicQos', qosArgs(count), ['basicQosOk'], () => ({}));
  }

  /** amqplib's alias of prefetch. */
  qos(count: number, global?: boolean): Promise<EmptyReply> {
    return this.prefetch(count, global);
  }

  /** Asks the server to redeliver this channel's unacknowledged messages. */
  recover(): Promise<EmptyReply> {
    return this.#rpc('basicRecover', { requeue: true }, ['basicRecoverOk'], () => ({}));
  }

  // ------------------------------------------------------------ confirm support for ConfirmChannel

  /** @internal The confirm tracker (confirm channels only). */
  protected get _confirms(): ConfirmTracker | null {
    return this.#confirms;
  }

  // ------------------------------------------------------------ internals

  #assertUsable(): void {
    if (this.#refusal !== null) throw this.#refusal;
  }

  /**
   * The frames of a publish: one, or — when the body does not fit in one WebSocket message and the
   * server takes body parts — the publish declaring `body_size` and the body in BodyPart frames.
   * Throws MessageTooLargeError when it cannot be sent (nothing queued).
   */
  #publishFrames(p: ReturnType<typeof publishArgs>, properties: Uint8Array | undefined): Uint8Array[] {
    const { exchange, routingKey, mandatory, immediate, body } = p;
    const encode = (b: Uint8Array, bodySize: number): Uint8Array =>
      encodePublishFrame(this.ch, exchange, routingKey, mandatory, immediate, properties, b, bodySize);
    const { frameMax, bodyParts } = this.#host;
    const frames = bodyParts
      ? encodeWithBody(this.ch, body, frameMax, otherBytesBound(properties, exchange, routingKey), encode)
      : encode(body, 0);
    // A whole frame, or a header (its properties and names), may still not fit: nothing is queued.
    if (frames instanceof Uint8Array) return [this.#host.fit(frames)];
    this.#host.fit(frames[0] as Uint8Array);
    return frames;
  }

  /** Queues a frame the fast encoders wrote (an ack, nack or reject). */
  #sendEncoded(bytes: Uint8Array): void {
    this.#host.enqueue(this.#host.fit(bytes));
  }

  #rpc<K extends MethodName, T>(
    method: K,
    body: MethodMap[K],
    expect: readonly MethodName[],
    onReply: (reply: Frame) => T,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#assertUsable();
      const bytes = this.#host.encode(frame(this.ch, method, body) as unknown as Frame);
      this.#rpcs.push({
        method,
        expect,
        resolve: (reply) => {
          try {
            resolve(onReply(reply));
          } catch (err) {
            reject(err);
          }
        },
        reject,
      });
      this.#host.enqueue(bytes);
    });
  }

  #reply(f: Frame): void {
    const taken = this.#rpcs.take(f);
    if (taken.kind === 'matched') {
      taken.rpc.resolve(f);
      return;
    }
    const expected =
      taken.kind === 'unexpected' ? taken.rpc.expect.map(amqpMethodName).join(' or ') : 'no reply';
    const message = `Expected ${expected}; got ${amqpMethodName(f.method)}`;
    if (taken.kind === 'unexpected') taken.rpc.reject(new ProtocolError(message, ReplyCode.UNEXPECTED_FRAME));
    if (this.#state === 'open' || this.#state === 'opening') {
      this.#startClose(
        ReplyCode.UNEXPECTED_FRAME,
        message,
        new ProtocolError(message, ReplyCode.UNEXPECTED_FRAME),
      );
    }
  }

  /** Runs application code (a consumer, a 'return' listener); if it throws, close as amqplib does. */
  #guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      if (this.#state === 'open')
        this.#startClose(ReplyCode.INTERNAL_ERROR, 'Error while processing message', error);
    }
  }

  #deliver(msg: ConsumeMessage): void {
    const consumer = this.#consumers.get(msg.fields.consumerTag);
    if (consumer === undefined) throw new Error(`Unknown consumer: ${msg.fields.consumerTag}`);
    consumer(msg);
  }

  #serverCancel(consumerTag: string): void {
    const consumer = this.#consumers.get(consumerTag);
    // A cancel for a consumer we already cancelled ourselves crossed ours on the wire: nothing to do.
    if (consumer === undefined) return;
    this.#consumers.delete(consumerTag);
    consumer(null);
  }

  /** Sends ChannelClose and waits for ChannelCloseOk; `error` (if any) is emitted then. */
  #startClose(code: number, text: string, error: Error | null): void {
    if (error !== null) (error as Error & { code?: number }).code ??= code;
    this.#closeError = error;
    // Sent before refusing further operations, so the close itself goes out.
    this.#host.enqueue(
      this.#host.encode(
        frame(this.ch, 'channelClose', { replyCode: code, replyText: text, failingMethod: '' }),
      ),
    );
    this.#state = 'closing';
    this.#refusal = new IllegalOperationError(
      'Channel closing',
      stackCapture(`closeBecause called: ${text}`),
    );
  }

  #finishClose(): void {
    const error = this.#closeError;
    const waiters = this.#closeWaiters;
    this.#closeWaiters = [];
    this.#toClosed(stackCapture('ChannelCloseOk frame received'));
    for (const w of waiters) w.resolve();
    if (error !== null && this.listenerCount('error') > 0) this.emit('error', error);
    this.emit('close');
  }

  #serverClose(close: ChannelClose): void {
    const detail = closeMessage(close.replyCode, close.replyText);
    const message = `Channel closed by server: ${detail}`;
    // Acknowledge even while closing ourselves (a simultaneous close), then wait for our CloseOk.
    this.#host.enqueue(this.#host.encode(frame(this.ch, 'channelCloseOk', {})));
    if (this.#state === 'closing') return;
    const head = this.#rpcs.peek();
    this.#rpcs.rejectAll((rpc: PendingRpc) =>
      rpc === head && close.failingMethod !== '' && sameMethod(close.failingMethod, rpc.method)
        ? new ServerCloseError(`Operation failed: ${amqpMethodName(rpc.method)}; ${detail}`, close.replyCode)
        : new ServerCloseError(message, close.replyCode),
    );
    this.#toClosed(stackCapture(message));
    // amqplib throws (through the connection) when nobody listens for a channel's 'error'; here
    // the rejected operation already reports it, so an unheard channel error is not fatal.
    if (this.listenerCount('error') > 0) this.emit('error', new ServerCloseError(message, close.replyCode));
    this.emit('close');
  }

  /** Moves to closed: refuses operations, fails what is outstanding, frees the channel number. */
  #toClosed(stack: string, cause?: Error): void {
    this.#state = 'closed';
    this.#refusal = new IllegalOperationError('Channel closed', stack);
    this.#rpcs.rejectAll(() => new Error(NO_REPLY));
    this.#confirms?.failAll(new ConfirmError('channel-closed', cause === undefined ? undefined : { cause }));
    this.#consumers.clear();
    // A close() still waiting (the connection went away first) is fulfilled: the channel is closed.
    for (const w of this.#closeWaiters) w.resolve();
    this.#closeWaiters = [];
    this.#host.release(this);
  }
}

/** A channel in confirm mode: publish and sendToQueue take a callback, and waitForConfirms() waits. */
export class ConfirmChannel extends Channel {
  /**
   * publish, with `callback(err, ok)` called once the server confirms: err null for an ack, an
   * Error ('message nacked', or 'channel closed' if the channel closes first) otherwise.
   */
  override publish(
    exchange: string,
    routingKey: string,
    content: Uint8Array,
    options?: PublishOptions,
    callback?: (err: Error | null, ok: EmptyReply) => void,
  ): boolean {
    return this._publish(exchange, routingKey, content, options, callback && ((err) => callback(err, {})));
  }

  override sendToQueue(
    queue: string,
    content: Uint8Array,
    options?: PublishOptions,
    callback?: (err: Error | null, ok: EmptyReply) => void,
  ): boolean {
    return this.publish('', queue, content, options, callback);
  }

  /**
   * Resolves when every message published so far is confirmed; rejects with the first nack (or
   * 'channel closed') among them. Once the channel closed with publishes unconfirmed (e.g. the
   * connection was lost), it rejects with 'channel closed' even if called after the close.
   */
  waitForConfirms(): Promise<void> {
    return this._confirms?.waitForAll() ?? Promise.resolve();
  }
}
