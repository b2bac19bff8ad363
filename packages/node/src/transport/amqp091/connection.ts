import type { Socket } from 'node:net';
import type { FieldTable } from '@styx/client/wire';
import type { Broker } from '../../broker/broker.ts';
import type { ClientConnection, ConnectionFacts } from '../../broker/client-connection.ts';
import { Code, ConnectionError } from '../../errors/amqp-error.ts';
import type { Logger } from '../../logging/logger.ts';
import type { ConnectionWire } from '../../session/connection-core.ts';
import { ConnectionCore, CoreConnection } from '../../session/connection-core.ts';
import { TurnBatch } from '../../session/turn-batch.ts';
import type { AmqpChannelHost } from './channel.ts';
import { AmqpChannel, clip } from './channel.ts';
import { writeCoalesced } from './coalesced-write.ts';
import { AmqpCodecError, frameError } from './codec-error.ts';
import type { AmqpCommand } from './command-assembler.ts';
import { CommandAssembler } from './command-assembler.ts';
import { methodIds } from './command-methods.ts';
import { encodeMethodFrame, HEARTBEAT_FRAME } from './frame-encoder.ts';
import type { FrameSink } from './frame-parser.ts';
import { FRAME_MIN_SIZE, FrameParser } from './frame-parser.ts';
import { PROTOCOL_HEADER, ProtocolHeaderError, ProtocolHeaderReader } from './protocol-header.ts';
import { replyText } from './reply-text.ts';
import { parseSaslResponse, SASL_MECHANISMS } from './sasl.ts';
import type { AmqpMethod } from './spec.gen.ts';

/** Bounds and timings of one AMQP 0-9-1 connection. */
export interface AmqpConnectionLimits {
  /** frame_max the server offers in connection.tune, bytes (a client may take less, not more). */
  readonly frameMax: number;
  /** channel_max offered in connection.tune. */
  readonly channelMax: number;
  /** Heartbeat offered in connection.tune, seconds (0: none); the client's tune-ok decides. */
  readonly heartbeatS: number;
  /** Time from the socket's opening to connection.open-ok, ms (RabbitMQ's handshake_timeout). */
  readonly handshakeTimeoutMs: number;
  /**
   * Longest time a frame may take to arrive once its first byte came, ms. Heartbeats do not bound
   * it: a peer that trickles a byte now and then (or none, with heartbeats off) would otherwise hold
   * a half-read frame, and its buffer, for ever. RabbitMQ has no such bound; its frames are bounded
   * by frame_max alone.
   */
  readonly frameTimeoutMs: number;
  /** Time the server waits for connection.close-ok after its connection.close, ms. */
  readonly closeTimeoutMs: number;
  /** Bytes queued towards a client above which its socket is no longer read until they drain. */
  readonly socketHighWater: number;
}

export const DEFAULT_AMQP_LIMITS: AmqpConnectionLimits = {
  // RabbitMQ's defaults: frame_max 128 KiB, channel_max 2047, heartbeat 60 s, handshake 10 s.
  frameMax: 131_072,
  channelMax: 2047,
  heartbeatS: 60,
  handshakeTimeoutMs: 10_000,
  frameTimeoutMs: 30_000,
  closeTimeoutMs: 3_000,
  socketHighWater: 4 * 1024 * 1024,
};

/** Commands a client may send while its credentials are checked (it should send none). */
const MAX_COMMANDS_BEFORE_TUNE = 100;
/** Outgoing writes queued in one turn after which they are written at once. */
const MAX_WRITES_PER_FLUSH = 256;

/**
 * What the server says of itself in connection.start: the broker's properties and the
 * capabilities of this listener — only what works (pika refuses confirms without both
 * publisher_confirms and basic.nack).
 */
function serverProperties(broker: Broker): FieldTable {
  const yes = { bool: true };
  return {
    entries: [
      ...broker.serverProperties.entries,
      {
        key: 'capabilities',
        value: {
          table: {
            entries: [
              { key: 'publisher_confirms', value: yes },
              { key: 'exchange_exchange_bindings', value: yes },
              { key: 'basic.nack', value: yes },
              { key: 'consumer_cancel_notify', value: yes },
              { key: 'connection.blocked', value: yes },
              { key: 'authentication_failure_close', value: yes },
              { key: 'per_consumer_qos', value: yes },
            ],
          },
        },
      },
      { key: 'information', value: { longStr: 'Styx, an AMQP 0-9-1 broker in TypeScript' } },
    ],
  };
}

let connectionCounter = 0;

type State = 'header' | 'start' | 'authenticating' | 'tune' | 'opening' | 'open' | 'closing' | 'closed';

/**
 * One AMQP 0-9-1 client connection on a socket: the protocol header, the handshake (start, tune,
 * open; authentication at start-ok as RabbitMQ does, the vhost at open), channel multiplexing,
 * heartbeats both ways, writes batched per event-loop turn, back-pressure and connection.blocked.
 * Faults follow AMQP's scopes: a channel error closes the channel (the core's), a connection error
 * sends connection.close with the reply code and the failing class and method, waits for close-ok
 * (bounded) and closes the socket. Nothing a client sends can crash the node.
 */
export class AmqpConnection
  extends CoreConnection<AmqpChannel, AmqpCommand>
  implements AmqpChannelHost, ClientConnection, ConnectionWire
{
  readonly id: string;
  readonly logger: Logger;
  private readonly socket: Socket;
  protected readonly broker: Broker;
  private readonly limits: AmqpConnectionLimits;
  private readonly remoteAddress: string;
  protected readonly core: ConnectionCore<AmqpChannel, AmqpCommand>;
  protected state: State = 'header';
  private readonly header = new ProtocolHeaderReader();
  private readonly parser = new FrameParser({ frameMax: FRAME_MIN_SIZE });
  private readonly assembler: CommandAssembler;
  private user = '';
  frameMax: number = FRAME_MIN_SIZE;
  private readonly outgoing = new TurnBatch<Uint8Array>(MAX_WRITES_PER_FLUSH, (f) => this.writeBatch(f));
  private timer: NodeJS.Timeout | undefined;
  /** Watches a frame begun and not finished (limits.frameTimeoutMs). */
  private frameTimer: NodeJS.Timeout | undefined;
  /** Frames read so far: the frame timer tells a new partial frame from the one it watched. */
  private framesRead = 0;
  private readonly connectedAt = Date.now();
  private readonly ends: { peerPort: number; host: string; port: number };
  private clientProperties: FieldTable | undefined;
  /** The socket is TLS (amqps): RabbitMQ's `ssl` fact. */
  private readonly tls: boolean;

  constructor(socket: Socket, broker: Broker, limits: AmqpConnectionLimits, logger: Logger, tls: boolean) {
    super();
    connectionCounter += 1;
    this.id = `${broker.nodeName}:${broker.runId}.amqp${connectionCounter}`;
    this.socket = socket;
    this.broker = broker;
    this.limits = limits;
    this.tls = tls;
    this.remoteAddress = socket.remoteAddress ?? 'unknown';
    this.ends = {
      peerPort: socket.remotePort ?? 0,
      host: socket.localAddress ?? '',
      port: socket.localPort ?? 0,
    };
    this.logger = logger.child({ conn: this.id, peer: this.remoteAddress });
    this.assembler = new CommandAssembler({ maxBodySize: broker.maxMessageSize });
    this.core = new ConnectionCore({
      broker,
      logger: this.logger,
      wire: this,
      channelMax: limits.channelMax,
      maxHeldCommands: MAX_COMMANDS_BEFORE_TUNE,
    });
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('close', () => this.onSocketClosed());
    socket.on('error', (err: Error) => this.logger.debug({ err: err.message }, 'socket error'));
    socket.on('drain', () => {
      if (this.core.pausedForDrain) this.core.drained();
    });
    this.timer = setTimeout(() => this.handshakeTimedOut(), limits.handshakeTimeoutMs);
    this.timer.unref();
    this.logger.debug('connection opened');
  }

  // ---------------------------------------------------------------------------- ClientConnection

  closeGracefully(reason: string): Promise<void> {
    return this.core.closeGracefully(reason);
  }

  close(code: number, reason: string): void {
    this.closeWithError(new ConnectionError(code, reason));
  }

  info(): ConnectionFacts {
    return this.coreFacts({
      id: this.id,
      user: this.user,
      protocol: 'AMQP 0-9-1',
      ends: { peerHost: this.remoteAddress, ...this.ends },
      ssl: this.tls,
      connectedAt: this.connectedAt,
      frameMax: this.frameMax,
      channelMax: this.core.channelMax,
      clientProperties: this.clientProperties,
      recvOct: this.socket.bytesRead,
      sendOct: this.socket.bytesWritten,
    });
  }

  // ---------------------------------------------------------------------------- ConnectionWire

  get isOpen(): boolean {
    return this.state === 'open';
  }

  get isClosed(): boolean {
    return this.state === 'closed';
  }

  sendHeartbeat(): void {
    this.write(HEARTBEAT_FRAME);
  }

  sendBlocked(reason: string): void {
    this.write(encodeMethodFrame(0, { name: 'connection.blocked', args: { reason: clip(reason) } }));
  }

  sendUnblocked(): void {
    this.write(encodeMethodFrame(0, { name: 'connection.unblocked', args: {} }));
  }

  pauseReading(): void {
    this.socket.pause();
  }

  resumeReading(): void {
    if (this.state !== 'closed') this.socket.resume();
  }

  heartbeatsMissed(): void {
    // RabbitMQ drops the socket: a peer that sends nothing would not read a close either.
    this.shutdown();
  }

  forceClose(text: string): void {
    this.closeWithError(new ConnectionError(Code.CONNECTION_FORCED, text));
  }

  // ---------------------------------------------------------------------------- inbound

  private onData(chunk: Buffer): void {
    if (this.state === 'closed') return;
    this.core.received();
    try {
      let rest = chunk;
      if (this.state === 'header') {
        const used = this.header.push(chunk);
        if (!this.header.done) return;
        this.sendStart();
        rest = chunk.subarray(used);
        if (rest.length === 0) return;
      }
      this.parser.pushTo(rest, this.onFrame);
      if (this.parser.midFrame) this.watchPartialFrame();
    } catch (err) {
      if (err instanceof ProtocolHeaderError) {
        // The spec's answer: the header of the protocol we speak, then close.
        this.logger.info({ received: err.received.toString('latin1') }, 'wrong protocol header');
        this.state = 'closed';
        this.release();
        this.socket.end(PROTOCOL_HEADER);
        return;
      }
      // Waiting for close-ok, nothing else matters (a broken stream included).
      if (this.state === 'closing') return;
      this.closeWithError(err);
      // A stream that lost its framing cannot carry the close-ok: the socket goes with the close.
      if (this.parser.failed) this.shutdown();
    }
  }

  /**
   * A frame has begun and is not complete: unless it is within limits.frameTimeoutMs, the
   * connection is closed with 501 FRAME_ERROR (a slow-loris peer). Frames read meanwhile re-arm it
   * for the frame then in progress, so a frame gets at most twice the bound.
   */
  private watchPartialFrame(): void {
    if (this.frameTimer !== undefined || this.state === 'closed') return;
    const seen = this.framesRead;
    this.frameTimer = setTimeout(() => {
      this.frameTimer = undefined;
      if (this.state === 'closed' || !this.parser.midFrame) return;
      if (this.framesRead !== seen) {
        this.watchPartialFrame();
        return;
      }
      this.logger.info({ state: this.state }, 'frame not completed in time');
      this.closeWithError(frameError(`frame not completed within ${this.limits.frameTimeoutMs} ms`));
      // Its close-ok could only come after the rest of the frame: do not wait for it.
      this.shutdown();
    }, this.limits.frameTimeoutMs);
    this.frameTimer.unref();
  }

  private readonly onFrame: FrameSink = (type, channel, buf, start, end): void => {
    this.framesRead++;
    const command = this.assembler.pushParts(type, channel, buf, start, end);
    if (command === undefined || this.state === 'closed') return;
    if (this.core.holding) {
      this.core.hold(command);
      // Frames behind a pipelined tune-ok are read at the frame_max it asks (within ours), as
      // they would be had the client waited for connection.tune; tuneOk() checks it when replayed.
      if (command.kind === 'method' && command.method.name === 'connection.tune-ok') {
        const asked = command.method.args.frameMax;
        if (asked >= FRAME_MIN_SIZE && asked <= this.limits.frameMax) this.parser.setFrameMax(asked);
      }
      return;
    }
    this.onCommand(command);
  };

  private onCommand(command: AmqpCommand): void {
    if (command.kind === 'heartbeat') return;
    if (this.state === 'closing') {
      // After our connection.close only close-ok (or the client's own close) counts.
      if (command.method.name === 'connection.close-ok') this.shutdown();
      else if (command.method.name === 'connection.close') {
        this.write(encodeMethodFrame(0, { name: 'connection.close-ok', args: {} }));
        this.shutdown();
      }
      return;
    }
    if (command.channel === 0) {
      if (command.kind === 'content') throw unexpected(command.method, 'content on channel 0');
      this.onConnectionMethod(command.method);
      return;
    }
    if (this.state !== 'open') {
      throw unexpected(command.method, `channel ${command.channel} used before connection.open-ok`);
    }
    const channel = this.core.channel(command.channel);
    if (channel === undefined) {
      if (command.method.name !== 'channel.open') {
        // RabbitMQ's answer to a method on a channel that is not open: a connection error.
        throw failing(
          Code.CHANNEL_ERROR,
          `expected 'channel.open' on channel ${command.channel}, got '${command.method.name}'`,
          command.method.name,
        );
      }
      this.core.openChannel(command.channel, () => new AmqpChannel(this, this.broker, command.channel));
      this.write(encodeMethodFrame(command.channel, { name: 'channel.open-ok', args: {} }));
      return;
    }
    if (command.kind === 'content' && !this.core.admitPublish()) return;
    channel.handle(command);
  }

  private onConnectionMethod(method: AmqpMethod): void {
    switch (this.state) {
      case 'start':
        if (method.name !== 'connection.start-ok') throw expected('connection.start-ok', method);
        this.startOk(method.args);
        return;
      case 'tune':
        if (method.name !== 'connection.tune-ok') throw expected('connection.tune-ok', method);
        this.tuneOk(method.args);
        return;
      case 'opening':
        if (method.name !== 'connection.open') throw expected('connection.open', method);
        this.open(method.args.virtualHost);
        return;
      default:
        break;
    }
    switch (method.name) {
      case 'connection.close':
        this.logger.debug({ code: method.args.replyCode }, 'client closed the connection');
        this.write(encodeMethodFrame(0, { name: 'connection.close-ok', args: {} }));
        this.shutdown();
        return;
      case 'connection.close-ok':
        this.shutdown();
        return;
      case 'connection.update-secret':
        this.updateSecret(method.args.newSecret.toString(), method.args.reason);
        return;
      default:
        throw failing(Code.COMMAND_INVALID, `${method.name} is not valid on channel 0 now`, method.name);
    }
  }

  private sendStart(): void {
    this.state = 'start';
    this.write(
      encodeMethodFrame(0, {
        name: 'connection.start',
        args: {
          versionMajor: 0,
          versionMinor: 9,
          serverProperties: serverProperties(this.broker),
          mechanisms: SASL_MECHANISMS.join(' '),
          locales: 'en_US',
        },
      }),
    );
  }

  /** start-ok: check the credentials (as RabbitMQ, before tune); commands meanwhile are held. */
  private startOk(args: { clientProperties: FieldTable; mechanism: string; response: Buffer }): void {
    const { user, password } = parseSaslResponse(args.mechanism, args.response);
    this.clientProperties = args.clientProperties;
    this.user = user;
    this.state = 'authenticating';
    this.core.holdCommands();
    this.broker.gate.checkCredentials(user, password, this.remoteAddress).then(
      () => {
        if (this.state !== 'authenticating') return;
        this.state = 'tune';
        this.write(
          encodeMethodFrame(0, {
            name: 'connection.tune',
            args: {
              channelMax: this.limits.channelMax,
              frameMax: this.limits.frameMax,
              heartbeat: this.limits.heartbeatS,
            },
          }),
        );
        this.replayHeld();
      },
      (err: unknown) => this.closeWithError(err, 'connection.start-ok'),
    );
  }

  /**
   * connection.update-secret, as RabbitMQ answers it: the new secret is checked for the same user
   * (here a password; RabbitMQ's token backends take a token), then update-secret-ok; a refused one
   * closes the connection with 530 NOT_ALLOWED. What the client sends meanwhile waits, in order.
   */
  private updateSecret(secret: string, reason: string): void {
    this.core.holdCommands();
    this.broker.gate.checkCredentials(this.user, secret, this.remoteAddress).then(
      () => {
        if (this.state !== 'open') return;
        this.logger.info({ user: this.user, reason }, 'secret updated');
        this.write(encodeMethodFrame(0, { name: 'connection.update-secret-ok', args: {} }));
        this.replayHeld();
      },
      (err: unknown) => {
        this.logger.warn({ user: this.user, err: (err as Error).message }, 'secret update refused');
        this.core.takeHeld();
        this.closeWithError(
          failing(
            Code.NOT_ALLOWED,
            'New secret was refused by one of the backends',
            'connection.update-secret',
          ),
        );
      },
    );
  }

  private replayHeld(): void {
    try {
      for (const command of this.core.takeHeld()) {
        if (this.state === 'closing' || this.state === 'closed') break;
        this.onCommand(command);
      }
    } catch (err) {
      this.closeWithError(err);
    }
  }

  /** tune-ok: the client's frame_max and channel_max within ours, its heartbeat taken as is. */
  private tuneOk(args: { channelMax: number; frameMax: number; heartbeat: number }): void {
    const { frameMax, channelMax, heartbeat } = args;
    // RabbitMQ's checks: at least the spec's minimum, at most what the server offered (0 is
    // "no limit", more than offered).
    if (frameMax < FRAME_MIN_SIZE || frameMax > this.limits.frameMax) {
      throw failing(
        Code.NOT_ALLOWED,
        frameMax < FRAME_MIN_SIZE && frameMax !== 0
          ? `frame_max=${frameMax} < ${FRAME_MIN_SIZE} min size`
          : `frame_max=${frameMax} > ${this.limits.frameMax} max size`,
        'connection.tune-ok',
      );
    }
    if (channelMax > this.limits.channelMax) {
      throw failing(
        Code.NOT_ALLOWED,
        `channel_max=${channelMax} > ${this.limits.channelMax} max size`,
        'connection.tune-ok',
      );
    }
    this.frameMax = frameMax;
    this.parser.setFrameMax(frameMax);
    if (channelMax !== 0) this.core.channelMax = channelMax;
    this.core.startHeartbeats(heartbeat * 1000);
    this.state = 'opening';
  }

  /** connection.open: the vhost (530 NOT_ALLOWED if missing or not permitted). */
  private open(vhost: string): void {
    const session = this.broker.gate.openSession(this.user, vhost, this.id);
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.sessionValue = session;
    this.state = 'open';
    this.broker.gate.opened(this);
    this.write(encodeMethodFrame(0, { name: 'connection.open-ok', args: {} }));
    this.logger.info({ user: session.user, vhost: session.vhost }, 'AMQP connection opened');
  }

  private handshakeTimedOut(): void {
    this.timer = undefined;
    if (this.state === 'open' || this.state === 'closed') return;
    this.logger.info({ state: this.state }, 'handshake timeout');
    if (this.state === 'header' || this.state === 'closing') this.shutdown();
    else this.closeWithError(new ConnectionError(Code.CONNECTION_FORCED, 'handshake timeout'));
  }

  // ---------------------------------------------------------------------------- outbound

  /** Queue encoded frames; what is queued in one turn goes out in one batched socket write. */
  write(frames: Uint8Array): void {
    if (this.state !== 'closed') this.outgoing.push(frames);
  }

  private readonly writeBatch = (frames: Uint8Array[]): void => {
    if (this.socket.destroyed || !this.socket.writable) return;
    this.socket.cork();
    writeCoalesced(this.socket, frames);
    this.socket.uncork();
    this.core.sent();
    if (this.socket.writableLength > this.limits.socketHighWater) this.core.pauseForDrain();
  };

  // ---------------------------------------------------------------------------- channels

  channelClosed(channel: AmqpChannel): void {
    this.core.channelClosed(channel.number);
    this.assembler.dropChannel(channel.number);
  }

  // ---------------------------------------------------------------------------- closing

  /**
   * Close the connection because of `err` (a ConnectionError, or anything unexpected → 541):
   * connection.close with the code, text and failing method, then wait (bounded) for close-ok.
   */
  closeWithError(err: unknown, failingMethod?: string): void {
    if (this.state === 'closed' || this.state === 'closing') return;
    let code: number = Code.INTERNAL_ERROR;
    let text: string;
    let ids = methodIds(failingMethod ?? '');
    if (err instanceof ConnectionError) {
      code = err.code;
      text = err.message;
      if (err instanceof AmqpCodecError && err.classId !== 0)
        ids = { classId: err.classId, methodId: err.methodId };
    } else {
      text = `internal error: ${(err as Error)?.message ?? String(err)}`;
      this.logger.error({ err }, 'internal error; closing connection');
    }
    this.logger.info({ code, text }, 'closing connection on error');
    if (this.state === 'header') {
      this.shutdown();
      return;
    }
    this.write(
      encodeMethodFrame(0, {
        name: 'connection.close',
        args: {
          replyCode: code,
          replyText: clip(replyText(code, text)),
          classId: ids.classId,
          methodId: ids.methodId,
        },
      }),
    );
    this.state = 'closing';
    // Channels stop at once: nothing more is delivered or taken while close-ok is awaited.
    this.core.release((channel) => channel.abandon());
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.shutdown(), this.limits.closeTimeoutMs);
    this.timer.unref();
  }

  // ---------------------------------------------------------------------------- CoreConnection

  protected flushWrites(): void {
    this.outgoing.flush();
  }

  protected endSocket(): void {
    this.socket.end();
  }

  protected destroySocket(): void {
    this.socket.destroy();
  }

  protected stopTimers(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    clearTimeout(this.frameTimer);
    this.frameTimer = undefined;
  }
}

/** A connection error naming the method that caused it (connection.close's class-id and method-id). */
function failing(code: number, text: string, method: string): AmqpCodecError {
  const { classId, methodId } = methodIds(method);
  return new AmqpCodecError(code, text, classId, methodId);
}

function expected(name: string, got: AmqpMethod): AmqpCodecError {
  return failing(Code.COMMAND_INVALID, `expected '${name}', got '${got.name}'`, got.name);
}

function unexpected(got: AmqpMethod, why: string): AmqpCodecError {
  return failing(Code.UNEXPECTED_FRAME, `${got.name}: ${why}`, got.name);
}
