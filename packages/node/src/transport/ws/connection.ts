import type { Socket } from 'node:net';
import type { FieldTable, Frame, Hello } from '@styx/client/wire';
import {
  announcesBodyParts,
  decodeBatch,
  encodeFrame,
  PROTOCOL_VERSION,
  sendInBatches,
  WireError,
  withBodyPartsCapability,
} from '@styx/client/wire';
import type { WebSocket } from 'ws';
import type { Broker } from '../../broker/broker.ts';
import type { ClientConnection, ConnectionFacts } from '../../broker/client-connection.ts';
import { Code, ConnectionError } from '../../errors/amqp-error.ts';
import type { Logger } from '../../logging/logger.ts';
import type { ConnectionWire } from '../../session/connection-core.ts';
import { ConnectionCore, CoreConnection } from '../../session/connection-core.ts';
import { TurnBatch } from '../../session/turn-batch.ts';
import type { ChannelHost } from './channel.ts';
import { Channel } from './channel.ts';

/** Bounds and timings for one client connection. */
export interface ConnectionLimits {
  /** Largest WebSocket message accepted or sent, bytes (negotiated down to the client's value). */
  readonly frameMax: number;
  /** Highest channel number a client may open. */
  readonly channelMax: number;
  /** Heartbeat interval the server proposes, ms; 0 disables heartbeats unless the client asks. */
  readonly heartbeatMs: number;
  /** Time allowed between socket open and a valid hello, ms. */
  readonly handshakeTimeoutMs: number;
  /**
   * Bytes queued in the socket towards a client above which the server stops reading from that
   * client until the queue drains: a peer that does not read cannot keep publishing.
   */
  readonly socketHighWater: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  frameMax: 8 * 1024 * 1024,
  channelMax: 2047,
  heartbeatMs: 60_000,
  handshakeTimeoutMs: 10_000,
  socketHighWater: 4 * 1024 * 1024,
};

let connectionCounter = 0;

/**
 * Frames a client may pipeline behind its hello while the credentials are checked (they are handled,
 * in order, once the connection is open). A client that sends more before hello-ok is refused.
 */
const MAX_FRAMES_BEFORE_HELLO_OK = 1000;

/**
 * Frames queued in one turn after which they are written at once, as one WebSocket message, rather
 * than at the end of the turn. A queue may deliver a whole prefetch window (1,000 messages) in one
 * apply: sent as one message, the client can start on none of it before the broker has encoded all
 * of it, and its acks come back only after it has decoded all of it — broker and client then take
 * turns idling. Written in slices, the client works on (and acks) the first slice while the broker
 * encodes the next.
 */
const MAX_FRAMES_PER_MESSAGE = 128;

/**
 * One client connection: the handshake, channel multiplexing, heartbeats, batched writes (every
 * frame produced in one event-loop turn goes out in one WebSocket message) and back-pressure.
 * Faults follow AMQP's scopes: a channel error closes the channel, a connection error closes the
 * connection with a ConnectionClose frame that says why. Nothing a client sends can crash the node.
 * What every protocol's connection does alike (channels, pipelining, heartbeats, flow, graceful
 * close) is the connection core's (session/connection-core.ts).
 */
export class Connection
  extends CoreConnection<Channel, Frame>
  implements ChannelHost, ClientConnection, ConnectionWire
{
  readonly id: string;
  readonly logger: Logger;
  private readonly ws: WebSocket;
  protected readonly broker: Broker;
  private readonly limits: ConnectionLimits;
  private readonly remoteAddress: string;
  protected readonly core: ConnectionCore<Channel, Frame>;
  protected state: 'handshake' | 'open' | 'closing' | 'closed' = 'handshake';
  /** Frames queued this turn: Frame objects, or frames already encoded (the hot ones, see fast-codec). */
  private readonly outgoing = new TurnBatch<Frame | Uint8Array>(MAX_FRAMES_PER_MESSAGE, (f) =>
    this.writeBatch(f),
  );
  /** The negotiated largest WebSocket message, bytes (the channels split bodies by it). */
  frameMax: number;
  /** Whether the client takes bodies in BodyPart frames (it announced `body_parts`). */
  takesBodyParts = false;
  private handshakeTimer: NodeJS.Timeout | undefined;
  /** When the socket opened, ms since the epoch (`info`). */
  private readonly connectedAt = Date.now();
  /** The socket's two ends, read once: the socket is gone after the close (`info`). */
  private readonly ends: { peerPort: number; host: string; port: number; tls: boolean };
  /** What the client said of itself in its hello (`info`). */
  private clientProperties: FieldTable | null | undefined;

  constructor(
    ws: WebSocket,
    broker: Broker,
    limits: ConnectionLimits,
    remoteAddress: string,
    logger: Logger,
  ) {
    super();
    connectionCounter += 1;
    this.id = `${broker.nodeName}:${broker.runId}.${connectionCounter}`;
    this.ws = ws;
    this.broker = broker;
    this.limits = limits;
    this.frameMax = limits.frameMax;
    this.remoteAddress = remoteAddress;
    this.logger = logger.child({ conn: this.id, peer: remoteAddress });
    this.core = new ConnectionCore({
      broker,
      logger: this.logger,
      wire: this,
      channelMax: limits.channelMax,
      maxHeldCommands: MAX_FRAMES_BEFORE_HELLO_OK,
      heldRefusal: `more than ${MAX_FRAMES_BEFORE_HELLO_OK} frames sent before hello-ok`,
    });
    const socket = this.socket;
    this.ends = {
      peerPort: socket?.remotePort ?? 0,
      host: socket?.localAddress ?? '',
      port: socket?.localPort ?? 0,
      // A wss listener's socket is a TLSSocket, whose `encrypted` is true.
      tls: (socket as { encrypted?: boolean } | undefined)?.encrypted === true,
    };
    ws.binaryType = 'nodebuffer';
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    ws.on('close', () => this.onSocketClosed());
    ws.on('error', (err: Error) => this.logger.debug({ err: err.message }, 'socket error'));
    this.handshakeTimer = setTimeout(() => {
      this.closeWithError(new ConnectionError(Code.NOT_ALLOWED, 'handshake timeout: no hello received'));
    }, limits.handshakeTimeoutMs);
    this.handshakeTimer.unref();
    this.logger.debug('connection opened');
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  /** What an operator sees of this connection (`GET /api/connections`, broker/client-connection.ts). */
  info(): ConnectionFacts {
    const socket = this.socket;
    return this.coreFacts({
      id: this.id,
      user: '',
      protocol: `Styx WebSocket ${PROTOCOL_VERSION}`,
      ends: {
        peerHost: this.remoteAddress,
        peerPort: this.ends.peerPort,
        host: this.ends.host,
        port: this.ends.port,
      },
      ssl: this.ends.tls,
      connectedAt: this.connectedAt,
      frameMax: this.frameMax,
      channelMax: this.limits.channelMax,
      clientProperties: this.clientProperties,
      recvOct: socket?.bytesRead ?? 0,
      sendOct: socket?.bytesWritten ?? 0,
    });
  }

  /** An operator's close (or the user's or vhost's deletion): `code` and `reason` to the client. */
  close(code: number, reason: string): void {
    this.closeWithError(new ConnectionError(code, reason));
  }

  // ---------------------------------------------------------------------------------- inbound

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (this.state === 'closed' || (this.state === 'closing' && !this.core.holding)) return;
    this.core.received();
    try {
      if (!isBinary)
        throw new ConnectionError(Code.SYNTAX_ERROR, 'text WebSocket messages are not part of the protocol');
      if (data.length > this.frameMax) {
        throw new ConnectionError(
          Code.FRAME_ERROR,
          `message of ${data.length} bytes exceeds frame_max ${this.frameMax}`,
        );
      }
      let frames: Frame[];
      try {
        frames = decodeBatch(data);
      } catch (err) {
        if (err instanceof WireError) throw new ConnectionError(Code.SYNTAX_ERROR, err.message);
        throw err;
      }
      for (const frame of frames) {
        if (this.core.holding) {
          this.core.hold(frame);
          continue;
        }
        if (this.state !== 'open' && this.state !== 'handshake') break;
        this.onFrame(frame);
      }
    } catch (err) {
      this.closeWithError(err);
    }
  }

  private onFrame(frame: Frame): void {
    if (this.state === 'handshake') {
      if (frame.channel !== 0 || frame.method !== 'hello') {
        throw new ConnectionError(Code.COMMAND_INVALID, `expected hello on channel 0, got ${frame.method}`);
      }
      this.state = 'closing'; // nothing else is handled until authentication finishes…
      this.core.holdCommands(); // …but what the client sends meanwhile is kept, not dropped
      this.handshake(frame.hello).catch((err: unknown) => this.closeWithError(err));
      return;
    }
    if (frame.channel === 0) {
      this.onConnectionFrame(frame);
      return;
    }
    const channel = this.core.channel(frame.channel);
    if (channel === undefined) {
      if (frame.method !== 'channelOpen') {
        throw new ConnectionError(
          Code.CHANNEL_ERROR,
          `${frame.method} on channel ${frame.channel}, which is not open`,
        );
      }
      this.core.openChannel(frame.channel, () => new Channel(this, this.broker, frame.channel));
      this.send({ channel: frame.channel, method: 'channelOpenOk', channelOpenOk: {} });
      return;
    }
    // Closing gracefully: a publish (or a part of its body) sent after the decision is not taken.
    if ((frame.method === 'basicPublish' || frame.method === 'bodyPart') && !this.core.admitPublish()) return;
    channel.handle(frame);
  }

  private onConnectionFrame(frame: Frame): void {
    switch (frame.method) {
      case 'heartbeat':
        return;
      case 'connectionClose':
        this.logger.debug({ code: frame.connectionClose.replyCode }, 'client closed the connection');
        this.send({ channel: 0, method: 'connectionCloseOk', connectionCloseOk: {} });
        this.shutdown();
        return;
      case 'connectionCloseOk':
        this.shutdown();
        return;
      default:
        throw new ConnectionError(Code.COMMAND_INVALID, `${frame.method} is not valid on channel 0`);
    }
  }

  private async handshake(hello: Hello): Promise<void> {
    if (this.handshakeTimer !== undefined) clearTimeout(this.handshakeTimer);
    if (hello.protocolVersion !== PROTOCOL_VERSION) {
      throw new ConnectionError(
        Code.NOT_ALLOWED,
        `unsupported protocol version ${hello.protocolVersion}; this node speaks ${PROTOCOL_VERSION}`,
      );
    }
    const session = await this.broker.gate.authenticate(
      hello.username,
      hello.password,
      hello.vhost || '/',
      this.remoteAddress,
      this.id,
    );
    if (this.state === 'closed') return;
    this.sessionValue = session;
    this.clientProperties = hello.clientProperties;
    this.takesBodyParts = announcesBodyParts(hello.clientProperties);
    if (hello.frameMax > 0) this.frameMax = Math.min(this.frameMax, Math.max(hello.frameMax, 4096));
    const requested = hello.heartbeatMs;
    const heartbeatMs =
      requested === 0 || this.limits.heartbeatMs === 0
        ? Math.max(requested, this.limits.heartbeatMs)
        : Math.min(requested, this.limits.heartbeatMs);
    this.state = 'open';
    this.broker.gate.opened(this);
    this.send({
      channel: 0,
      method: 'helloOk',
      helloOk: {
        heartbeatMs,
        frameMax: this.frameMax,
        channelMax: this.limits.channelMax,
        serverProperties: withBodyPartsCapability(this.broker.serverProperties),
        connectionName: this.id,
      },
    });
    this.core.startHeartbeats(heartbeatMs);
    this.logger.info({ user: session.user, vhost: session.vhost }, 'connection authenticated');
    // What the client pipelined behind its hello, in arrival order (as RabbitMQ reads a socket).
    for (const frame of this.core.takeHeld()) {
      if (this.state !== 'open') break;
      this.onFrame(frame);
    }
  }

  // ---------------------------------------------------------------------------------- outbound

  /**
   * Queue a frame, as a Frame or already encoded (`encodeFrame`, `encodeDeliverFrame`, …); what is
   * queued in this turn is written as one WebSocket message per `MAX_FRAMES_PER_MESSAGE` frames.
   */
  send(frame: Frame | Uint8Array): void {
    if (this.state !== 'closed') this.outgoing.push(frame);
  }

  /** Write a turn's frames (or a full batch of them). */
  private readonly writeBatch = (frames: (Frame | Uint8Array)[]): void => {
    if (this.ws.readyState !== this.ws.OPEN) return;
    this.write(frames);
    this.core.sent();
    if (!this.core.pausedForDrain && this.ws.bufferedAmount > this.limits.socketHighWater)
      this.pauseUntilDrained();
  };

  /**
   * Encode what is not encoded yet and send, in order, as few WebSocket messages as frame_max allows:
   * a message is cut at a frame boundary before it would exceed frame_max, and a frame larger than
   * frame_max on its own is sent alone. Encodes `frames` in place.
   */
  private write(frames: (Frame | Uint8Array)[]): void {
    for (let i = 0; i < frames.length; i++) {
      const f = frames[i] as Frame | Uint8Array;
      if (!(f instanceof Uint8Array)) frames[i] = encodeFrame(f);
    }
    sendInBatches(frames as Uint8Array[], this.frameMax, this.sendBatch);
  }

  private readonly sendBatch = (batch: Uint8Array): void => {
    this.ws.send(batch, { binary: true });
  };

  private get socket(): Socket | undefined {
    return (this.ws as unknown as { _socket?: Socket })._socket;
  }

  /** The peer is not reading what we send: stop reading what it sends until it catches up. */
  private pauseUntilDrained(): void {
    const socket = this.socket;
    if (socket === undefined) return;
    this.logger.debug({ buffered: this.ws.bufferedAmount }, 'peer not draining; reading paused');
    this.core.pauseForDrain();
    socket.once('drain', () => this.core.drained());
  }

  // ---------------------------------------------------------------------------------- ConnectionWire

  sendHeartbeat(): void {
    this.send({ channel: 0, method: 'heartbeat', heartbeat: {} });
  }

  sendBlocked(reason: string): void {
    this.send({ channel: 0, method: 'connectionBlocked', connectionBlocked: { reason } });
  }

  sendUnblocked(): void {
    this.send({ channel: 0, method: 'connectionUnblocked', connectionUnblocked: {} });
  }

  pauseReading(): void {
    this.socket?.pause();
  }

  resumeReading(): void {
    this.socket?.resume();
  }

  heartbeatsMissed(): void {
    this.shutdown();
  }

  // ---------------------------------------------------------------------------------- closing

  channelClosed(channel: Channel): void {
    this.core.channelClosed(channel.number);
  }

  /** Close the connection because of `err` (a ConnectionError, or anything unexpected → 541). */
  closeWithError(err: unknown): void {
    if (this.state === 'closed') return;
    let code: number = Code.INTERNAL_ERROR;
    let text: string;
    if (err instanceof ConnectionError) {
      code = err.code;
      text = err.message;
    } else {
      text = `internal error: ${(err as Error)?.message ?? String(err)}`;
      this.logger.error({ err }, 'internal error; closing connection');
    }
    this.logger.info({ code, text }, 'closing connection on error');
    this.send({
      channel: 0,
      method: 'connectionClose',
      connectionClose: { replyCode: code, replyText: text, failingChannel: 0, failingMethod: '' },
    });
    this.shutdown();
  }

  /** Close with 320 CONNECTION_FORCED (node shutting down, or an operator closed it). */
  forceClose(text: string): void {
    this.closeWithError(new ConnectionError(Code.CONNECTION_FORCED, text));
  }

  /**
   * Close with 320 CONNECTION_FORCED once every publish taken is confirmed or nacked, taking no
   * new publish meanwhile (session/connection-core.ts). Resolves once closed.
   */
  closeGracefully(text: string, maxWaitMs?: number): Promise<void> {
    return this.core.closeGracefully(text, maxWaitMs);
  }

  // ---------------------------------------------------------------------------- CoreConnection

  protected flushWrites(): void {
    this.outgoing.flush();
  }

  protected endSocket(): void {
    if (this.ws.readyState === this.ws.OPEN) this.ws.close(1000);
  }

  protected destroySocket(): void {
    this.ws.terminate();
  }

  protected stopTimers(): void {
    clearTimeout(this.handshakeTimer);
  }
}
