// A connection to a Styx node: the handshake, channel multiplexing, heartbeats, batching,
// back-pressure and the close protocol. amqplib's ChannelModel API and events.
//
// States: opening (socket connecting, Hello sent, waiting for HelloOk) → open → closing (we sent
// ConnectionClose, waiting for ConnectionCloseOk) → closed. The server can close an open
// connection (ConnectionClose), and the transport can fail at any time; both go straight to closed.
import type { Channel, ChannelHost } from '../channel/channel.ts';
import { Channel as ChannelClass, ConfirmChannel } from '../channel/channel.ts';
import type { ContentOf } from '../channel/message.ts';
import type { ChannelOptions } from '../channel/types.ts';
import type { ConnectTarget, SocketOptions } from '../connect/target.ts';
import { DEFAULT_HIGH_WATER_MARK } from '../connect/target.ts';
import { Emitter } from '../emitter.ts';
import {
  closeMessage,
  HeartbeatTimeoutError,
  IllegalOperationError,
  ProtocolError,
  ServerCloseError,
  stackCapture,
} from '../errors.ts';
import type { SocketFactory, StyxSocket } from '../socket/socket.ts';
import { SDK_PRODUCT, SDK_VERSION } from '../version.ts';
import type { ConnectionClose, Frame, HelloOk, JsFieldTable } from '../wire/index.ts';
import {
  announcesBodyParts,
  BODY_PARTS_CAPABILITY,
  decodeBatch,
  fieldTableToJs,
  frame,
  jsToFieldTable,
  PROTOCOL_VERSION,
  ReplyCode,
  WireError,
} from '../wire/index.ts';
import { FrameWriter } from './frame-writer.ts';
import { Heartbeater } from './heartbeat.ts';

/** What differs between Node and browsers. */
export interface Platform {
  openSocket: SocketFactory;
  /** Decoded bodies → message content (a Buffer view under Node). */
  content: ContentOf;
  /** Hello's `platform` client property, e.g. 'Node.JS v24.9.0'. */
  name: string;
}

/** Connection events and their listener arguments (amqplib's). */
export interface ConnectionEvents {
  [event: string]: unknown[];
  /** The connection closed; the argument is the error that closed it, if any. */
  close: [Error | undefined];
  /** The connection failed: a server error close, a transport error, a heartbeat timeout. */
  error: [Error];
  /** The server stopped reading from this connection (e.g. a resource alarm). */
  blocked: [string];
  unblocked: [];
}

type ConnectionState = 'opening' | 'open' | 'closing' | 'closed';

/** Channel numbers available when the server sets no limit. */
const MAX_CHANNELS = 0xffff;

/**
 * How often, in ms, to check whether the write buffer fell below the high-water mark while some
 * publish() returned false. WebSockets have no 'drain' event, so this polls, and only then.
 */
export const DRAIN_POLL_MS = 10;

/** amqplib's advertised capabilities; Styx implements each. */
const CAPABILITIES = {
  publisher_confirms: true,
  exchange_exchange_bindings: true,
  'basic.nack': true,
  consumer_cancel_notify: true,
  'connection.blocked': true,
  authentication_failure_close: true,
  // Bodies larger than one WebSocket message come in BodyPart frames (proto/styx.proto).
  [BODY_PARTS_CAPABILITY]: true,
};

/** The reply codes with which a server close is not reported as an 'error' (amqplib's isFatalError). */
function isFatal(code: number): boolean {
  return code !== ReplyCode.REPLY_SUCCESS && code !== ReplyCode.CONNECTION_FORCED;
}

/** A connection: amqplib's ChannelModel (createChannel, createConfirmChannel, close, and events). */
export class Connection extends Emitter<ConnectionEvents> {
  /** The server's properties from HelloOk, as amqplib decodes tables. */
  serverProperties: JsFieldTable = {};
  /** The name the server gave this connection. */
  connectionName = '';
  /** Negotiated heartbeat interval, in seconds (0 = none). */
  heartbeat = 0;
  /** Negotiated largest WebSocket message, in bytes. */
  frameMax: number;
  /** Highest channel number. */
  channelMax = MAX_CHANNELS;

  #platform: Platform;
  #target: ConnectTarget;
  #options: SocketOptions;
  #socket: StyxSocket | null = null;
  #writer: FrameWriter;
  #state: ConnectionState = 'opening';
  #channels = new Map<number, Channel>();
  #highWaterMark: number;
  #drainWaiters = new Set<Channel>();
  #drainTimer: ReturnType<typeof setInterval> | null = null;
  #heartbeater: Heartbeater | null = null;
  #receivedSinceCheck = false;
  #refusal: IllegalOperationError | null = null;
  #handshake: {
    resolve(c: Connection): void;
    reject(err: Error): void;
    timer: ReturnType<typeof setTimeout> | null;
  } | null = null;
  #closeWaiters: (() => void)[] = [];
  #host: ChannelHost;
  /** Whether the server takes bodies in BodyPart frames (it announced `body_parts`). */
  #bodyParts = false;

  /** @internal Use connect(). */
  constructor(platform: Platform, target: ConnectTarget, options: SocketOptions = {}) {
    super();
    this.#platform = platform;
    this.#target = target;
    this.#options = options;
    this.frameMax = target.frameMax;
    this.#highWaterMark = options.highWaterMark ?? DEFAULT_HIGH_WATER_MARK;
    // The socket exists only once _open() runs; the sink reads it when the writer flushes.
    const conn = this;
    this.#writer = new FrameWriter(
      {
        send: (data) => conn.#socket?.send(data),
        get bufferedAmount(): number {
          return conn.#socket?.bufferedAmount ?? 0;
        },
      },
      {
        frameMax: target.frameMax,
        onError: (err) => this.#fail(err instanceof Error ? err : new Error(String(err))),
      },
    );
    const writer = this.#writer;
    this.#host = {
      get frameMax(): number {
        return conn.frameMax;
      },
      get bodyParts(): boolean {
        return conn.#bodyParts;
      },
      content: platform.content,
      encode: (f) => writer.encode(f),
      fit: (bytes) => writer.fit(bytes),
      enqueue: (bytes) => writer.enqueue(bytes),
      writable: (ch) => this.#writable(ch),
      release: (ch) => this.#release(ch),
    };
  }

  /** amqplib's ChannelModel exposes the underlying connection as `connection`; here they are one. */
  get connection(): this {
    return this;
  }

  /** @internal Opens the socket and runs the handshake. */
  _open(): Promise<Connection> {
    return new Promise<Connection>((resolve, reject) => {
      const timeout = this.#options.timeout;
      const timer =
        timeout !== undefined && timeout > 0
          ? setTimeout(() => this.#handshakeFailed(new Error('connect ETIMEDOUT')), timeout)
          : null;
      this.#handshake = { resolve, reject, timer };
      const extra: Record<string, unknown> = { ...this.#options.wsOptions };
      for (const key of [
        'ca',
        'cert',
        'key',
        'pfx',
        'passphrase',
        'rejectUnauthorized',
        'servername',
      ] as const) {
        if (this.#options[key] !== undefined) extra[key] = this.#options[key];
      }
      try {
        const socket = this.#platform.openSocket(
          this.#target.url,
          {
            open: () => this.#onOpen(),
            message: (data) => this.#onMessage(data),
            close: (code, reason) => this.#onSocketClose(code, reason),
            error: (err) => this.#onSocketError(err),
          },
          { maxPayload: this.#target.frameMax, extra },
        );
        this.#socket = socket;
      } catch (err) {
        this.#handshakeFailed(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /** Opens a channel. */
  async createChannel(_options?: ChannelOptions): Promise<Channel> {
    const ch = this.#newChannel(false);
    await ch._open();
    return ch;
  }

  /** Opens a channel in confirm mode. */
  async createConfirmChannel(_options?: ChannelOptions): Promise<ConfirmChannel> {
    const ch = this.#newChannel(true) as ConfirmChannel;
    await ch._open();
    await ch._confirmSelect();
    return ch;
  }

  /** Closes the connection (and every channel); resolves when the server has acknowledged. */
  close(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.#refusal !== null) {
        reject(this.#refusal);
        return;
      }
      this.#closeWaiters.push(resolve);
      this.#startClose(ReplyCode.REPLY_SUCCESS, 'Cheers, thanks');
    });
  }

  /** amqplib's updateSecret (OAuth token refresh): Styx has no token authentication, so it rejects. */
  updateSecret(_newSecret: Uint8Array, _reason: string): Promise<void> {
    return Promise.reject(new Error('updateSecret is not supported by Styx'));
  }

  // ------------------------------------------------------------ socket events

  #onOpen(): void {
    if (this.#state !== 'opening') return;
    const properties = Object.create({
      product: SDK_PRODUCT,
      version: SDK_VERSION,
      platform: this.#platform.name,
      capabilities: CAPABILITIES,
    }) as Record<string, unknown>;
    Object.assign(properties, this.#options.clientProperties);
    this.#writer.write(
      frame(0, 'hello', {
        protocolVersion: PROTOCOL_VERSION,
        username: this.#target.username,
        password: this.#target.password,
        vhost: this.#target.vhost,
        heartbeatMs: this.#target.heartbeat * 1000,
        frameMax: this.#target.frameMax,
        clientProperties: jsToFieldTable(properties),
      }),
    );
    this.#writer.flush();
  }

  #onMessage(data: Uint8Array): void {
    if (this.#state === 'closed') return;
    this.#receivedSinceCheck = true;
    let frames: Frame[];
    try {
      frames = decodeBatch(data);
    } catch (err) {
      this.#fail(err as Error);
      return;
    }
    for (const f of frames) {
      // A frame earlier in the batch may have closed the connection.
      if (this.#isClosed()) return;
      if (this.#state === 'opening') this.#acceptHandshake(f);
      else if (f.channel === 0) this.#acceptConnectionFrame(f);
      else this.#acceptChannelFrame(f);
    }
  }

  #isClosed(): boolean {
    return this.#state === 'closed';
  }

  #onSocketError(err: Error): void {
    if (this.#state === 'opening') this.#handshakeFailed(err);
    else if (this.#state !== 'closed') this.#fail(err);
  }

  #onSocketClose(_code: number, _reason: string): void {
    if (this.#state === 'opening') {
      this.#handshakeFailed(new Error('Socket closed abruptly during opening handshake'));
    } else if (this.#state === 'closing') {
      // Closed before the server's CloseOk: the close is complete all the same.
      this.#toClosed(undefined, 'Connection closed (by client)');
      this.#emitClosed(undefined);
    } else if (this.#state === 'open') {
      this.#fail(new Error('Unexpected close'));
    }
  }

  // ------------------------------------------------------------ handshake

  #acceptHandshake(f: Frame): void {
    if (f.method === 'helloOk' && f.channel === 0) {
      this.#handshakeSucceeded(f.helloOk);
    } else if (f.method === 'connectionClose') {
      const close = f.connectionClose;
      this.#handshakeFailed(
        new ServerCloseError(
          `Handshake terminated by server: ${closeMessage(close.replyCode, close.replyText)}`,
          close.replyCode,
        ),
      );
    } else {
      this.#handshakeFailed(
        new ProtocolError(`Expected helloOk during handshake; got ${f.method}`, ReplyCode.UNEXPECTED_FRAME),
      );
    }
  }

  #handshakeSucceeded(ok: HelloOk): void {
    const handshake = this.#handshake;
    this.#handshake = null;
    if (handshake?.timer != null) clearTimeout(handshake.timer);
    this.serverProperties = fieldTableToJs(ok.serverProperties);
    this.#bodyParts = announcesBodyParts(ok.serverProperties);
    this.connectionName = ok.connectionName;
    this.heartbeat = ok.heartbeatMs / 1000;
    this.frameMax = ok.frameMax > 0 ? ok.frameMax : this.#target.frameMax;
    this.#writer.frameMax = this.frameMax;
    const serverMax = ok.channelMax > 0 ? ok.channelMax : MAX_CHANNELS;
    this.channelMax = this.#target.channelMax > 0 ? Math.min(serverMax, this.#target.channelMax) : serverMax;
    this.#state = 'open';
    if (ok.heartbeatMs > 0) {
      this.#heartbeater = new Heartbeater(ok.heartbeatMs, {
        takeSent: () => this.#writer.takeSentFlag(),
        takeReceived: () => {
          const received = this.#receivedSinceCheck;
          this.#receivedSinceCheck = false;
          return received;
        },
        beat: () => this.#writer.write(frame(0, 'heartbeat', {})),
        timeout: () => this.#fail(new HeartbeatTimeoutError()),
      });
    }
    handshake?.resolve(this);
  }

  #handshakeFailed(err: Error): void {
    const handshake = this.#handshake;
    if (handshake === null) return;
    this.#handshake = null;
    if (handshake.timer !== null) clearTimeout(handshake.timer);
    this.#toClosed(err, `Connection closed (${err.toString()})`);
    handshake.reject(err);
  }

  // ------------------------------------------------------------ frames

  #acceptConnectionFrame(f: Frame): void {
    switch (f.method) {
      case 'heartbeat':
        return; // already counted as activity
      case 'connectionClose':
        this.#serverClose(f.connectionClose);
        return;
      case 'connectionCloseOk':
        if (this.#state === 'closing') {
          this.#toClosed(undefined, 'Connection closed (by client)');
          this.#emitClosed(undefined);
        }
        return;
      case 'connectionBlocked':
        if (this.#state === 'open') this.emit('blocked', f.connectionBlocked.reason);
        return;
      case 'connectionUnblocked':
        if (this.#state === 'open') this.emit('unblocked');
        return;
      default:
        if (this.#state === 'open') {
          this.#closeWithError(
            ReplyCode.UNEXPECTED_FRAME,
            'Unexpected frame on channel 0',
            new ProtocolError(`Unexpected frame on channel 0: ${f.method}`, ReplyCode.UNEXPECTED_FRAME),
          );
        }
    }
  }

  #acceptChannelFrame(f: Frame): void {
    // Once we sent ConnectionClose, the server discards everything else and so do we.
    if (this.#state !== 'open') return;
    const ch = this.#channels.get(f.channel);
    if (ch === undefined) {
      this.#closeWithError(
        ReplyCode.CHANNEL_ERROR,
        `Frame on unknown channel ${f.channel}`,
        new ProtocolError(
          `Frame on unknown channel: ${f.method} on channel ${f.channel}`,
          ReplyCode.CHANNEL_ERROR,
        ),
      );
      return;
    }
    let whole: Frame | undefined;
    try {
      whole = ch._joinBody(f);
    } catch (err) {
      if (!(err instanceof WireError)) throw err;
      this.#closeWithError(err.code, err.message, new ProtocolError(err.message, err.code));
      return;
    }
    if (whole !== undefined) ch._accept(whole);
  }

  // ------------------------------------------------------------ channels and back-pressure

  #newChannel(confirm: boolean): Channel {
    if (this.#refusal !== null) throw this.#refusal;
    let number = 1;
    while (this.#channels.has(number)) number++;
    if (number > this.channelMax) throw new Error('No channels left to allocate');
    const ch = confirm
      ? new ConfirmChannel(this.#host, number, this)
      : new ChannelClass(this.#host, number, this);
    this.#channels.set(number, ch);
    return ch;
  }

  #release(ch: Channel): void {
    if (this.#channels.get(ch.ch) === ch) this.#channels.delete(ch.ch);
    this.#drainWaiters.delete(ch);
  }

  #writable(ch: Channel): boolean {
    if (this.#writer.bufferedBytes <= this.#highWaterMark) return true;
    this.#drainWaiters.add(ch);
    if (this.#drainTimer === null) {
      this.#drainTimer = setInterval(() => this.#checkDrain(), DRAIN_POLL_MS);
      (this.#drainTimer as unknown as { unref?: () => void }).unref?.();
    }
    return false;
  }

  #checkDrain(): void {
    if (this.#writer.bufferedBytes > this.#highWaterMark && this.#state === 'open') return;
    this.#stopDrainPoll();
    if (this.#state !== 'open') return;
    const waiters = [...this.#drainWaiters];
    this.#drainWaiters.clear();
    for (const ch of waiters) ch.emit('drain');
  }

  #stopDrainPoll(): void {
    if (this.#drainTimer !== null) clearInterval(this.#drainTimer);
    this.#drainTimer = null;
  }

  // ------------------------------------------------------------ closing

  #startClose(code: number, text: string): void {
    this.#writer.write(
      frame(0, 'connectionClose', { replyCode: code, replyText: text, failingChannel: 0, failingMethod: '' }),
    );
    this.#writer.flush();
    this.#state = 'closing';
    this.#refusal = new IllegalOperationError(
      'Connection closing',
      stackCapture(`closeBecause called: ${text}`),
    );
  }

  /** A protocol error we detected: report it, then close the connection with `code`. */
  #closeWithError(code: number, text: string, error: Error): void {
    this.#startClose(code, text);
    this.emit('error', error);
  }

  #serverClose(close: ConnectionClose): void {
    this.#writer.write(frame(0, 'connectionCloseOk', {}));
    this.#writer.flush();
    if (this.#state === 'closing') return; // a simultaneous close: wait for our CloseOk
    const err = new ServerCloseError(
      `Connection closed: ${closeMessage(close.replyCode, close.replyText)}`,
      close.replyCode,
    );
    this.#toClosed(err, `Connection closed (${err.toString()})`);
    if (isFatal(close.replyCode)) {
      try {
        this.emit('error', err);
      } finally {
        this.#emitClosed(err);
      }
    } else {
      this.#emitClosed(err);
    }
  }

  /** The transport failed (or the server broke the protocol): 'error', then 'close', at once. */
  #fail(err: Error): void {
    if (this.#state === 'closed') return;
    if (this.#state === 'opening') {
      this.#handshakeFailed(err);
      return;
    }
    this.#toClosed(err, `Connection closed (${err.toString()})`);
    try {
      this.emit('error', err);
    } finally {
      this.#emitClosed(err);
    }
  }

  /** Moves to closed: stops timers, closes every channel and the socket, refuses operations. */
  #toClosed(err: Error | undefined, info: string): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#refusal = new IllegalOperationError(info, stackCapture(info));
    this.#heartbeater?.stop();
    this.#heartbeater = null;
    this.#stopDrainPoll();
    this.#drainWaiters.clear();
    // Flush what is queued (a CloseOk) before the socket closes; drop it if the socket is gone.
    try {
      this.#writer.flush();
    } catch {
      this.#writer.discard();
    }
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    for (const ch of channels) ch._connectionClosed(info, err);
    try {
      this.#socket?.close(1000, err === undefined ? 'closed' : 'error');
    } catch {
      // Already closed.
    }
  }

  #emitClosed(err: Error | undefined): void {
    const waiters = this.#closeWaiters;
    this.#closeWaiters = [];
    for (const w of waiters) w();
    this.emit('close', err);
  }
}
