/**
 * What every client connection does whatever its protocol (transport/ws/, transport/amqp091/): the
 * table of its channels and what the broker counts of them, commands a client pipelines while its
 * credentials are checked, heartbeat bookkeeping, publisher throttling under resource alarms and
 * socket back-pressure, and the graceful close that waits for the confirms of publishes already
 * taken. The transport keeps only what its wire decides: how a heartbeat, a blocked notice or a
 * close is encoded, and how its socket is paused.
 */

import type { FieldTable } from '@styx/client/wire';
import type { Broker, Session } from '../broker/broker.ts';
import type { ClientChannel, ClientConnection, ConnectionFacts } from '../broker/client-connection.ts';
import { ENQUEUE_SETTLE_BOUND_MS } from '../broker/cluster-queue.ts';
import { Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { argumentsJson } from '../management/views.ts';

/**
 * `closeGracefully`: longest wait for the confirms of publishes already taken, ms. Longer than a
 * queue handle takes to settle an enqueue (`ENQUEUE_SETTLE_BOUND_MS`, retries through a leader
 * change included), so every publish taken has its outcome by then: a close at a shorter bound left
 * publishes proposed but unanswered, which the client then sent again — a duplicate whenever the
 * first one committed after the close (a queue whose commits stalled for a while). The margin
 * covers the confirms' own turn (the flush) on a loaded node.
 */
export const GRACEFUL_CLOSE_MAX_WAIT_MS = ENQUEUE_SETTLE_BOUND_MS + 5_000;
/** `closeGracefully`: how often it looks whether they are all confirmed, ms. */
const GRACEFUL_CLOSE_POLL_MS = 10;

/** What the connection core reads of a channel core (session/channel-core.ts). */
export interface ChannelCoreState extends ClientChannel {
  readonly isOpen: boolean;
  readonly hasPublished: boolean;
  readonly consumerCount: number;
  readonly unconfirmedPublishes: number;
}

/** A transport's channel adapter, as the connection core keeps it. */
export interface ConnectionChannel {
  /** The channel's semantics (what the broker sees, and queues deliver to). */
  readonly core: ChannelCoreState;
}

/** What the core asks of the transport's connection. */
export interface ConnectionWire {
  /** The connection is open (authenticated, not closing). */
  readonly isOpen: boolean;
  /** The connection is gone (socket closed, resources released). */
  readonly isClosed: boolean;
  sendHeartbeat(): void;
  /** Tell the client its publishes are throttled (AMQP's connection.blocked). */
  sendBlocked(reason: string): void;
  sendUnblocked(): void;
  /** Stop / start reading from the socket. */
  pauseReading(): void;
  resumeReading(): void;
  /** Nothing heard from the client for two heartbeat intervals: drop the connection. */
  heartbeatsMissed(): void;
  /** Close with 320 CONNECTION_FORCED, telling the client `text`. */
  forceClose(text: string): void;
}

export interface ConnectionCoreOptions {
  readonly broker: Broker;
  readonly logger: Logger;
  readonly wire: ConnectionWire;
  /** Highest channel number a client may open. */
  readonly channelMax: number;
  /**
   * Commands a client may pipeline while its credentials are checked (they are handled, in order,
   * once the connection is open); a client that sends more is refused.
   */
  readonly maxHeldCommands: number;
  /** The refusal's text (default: 'more than N commands sent before the connection was open'). */
  readonly heldRefusal?: string;
}

/** See the module comment. `C`: the transport's channel; `Held`: a command as its decoder makes it. */
export class ConnectionCore<C extends ConnectionChannel, Held> {
  readonly #broker: Broker;
  readonly #logger: Logger;
  readonly #wire: ConnectionWire;
  readonly #maxHeld: number;
  readonly #heldRefusal: string;
  channelMax: number;
  readonly #channels = new Map<number, C>();
  #held: Held[] | undefined;
  #heartbeatMs = 0;
  #heartbeatTimer: NodeJS.Timeout | undefined;
  #lastReceived = Date.now();
  #sentSinceTick = false;
  #pausedForDrain = false;
  #pausedForMemory = false;
  /** Set once the connection publishes: only publishers are throttled under resource alarms. */
  #publisher = false;
  /** Cleared by `closeGracefully`: publishes from then on are not taken. */
  #takingPublishes = true;

  constructor(options: ConnectionCoreOptions) {
    this.#broker = options.broker;
    this.#logger = options.logger;
    this.#wire = options.wire;
    this.channelMax = options.channelMax;
    this.#maxHeld = options.maxHeldCommands;
    this.#heldRefusal =
      options.heldRefusal ??
      `more than ${options.maxHeldCommands} commands sent before the connection was open`;
  }

  // ---------------------------------------------------------------------------------- channels

  /** The channel adapter with this number, open or closing. */
  channel(number: number): C | undefined {
    return this.#channels.get(number);
  }

  /** Open channel `number` (channel.open): 530 NOT_ALLOWED above channel_max. */
  openChannel(number: number, make: () => C): C {
    if (number > this.channelMax || number === 0) {
      throw new ConnectionError(Code.NOT_ALLOWED, `channel ${number} exceeds channel_max ${this.channelMax}`);
    }
    const channel = make();
    this.#channels.set(number, channel);
    this.#broker.counters.channelsOpened++;
    return channel;
  }

  /** The channel finished closing. */
  channelClosed(number: number): void {
    if (this.#channels.delete(number)) this.#broker.counters.channelsClosed++;
  }

  get channelCount(): number {
    return this.#channels.size;
  }

  get publisherCount(): number {
    let n = 0;
    for (const channel of this.#channels.values()) if (channel.core.hasPublished) n++;
    return n;
  }

  get consumerCount(): number {
    let n = 0;
    for (const channel of this.#channels.values()) n += channel.core.consumerCount;
    return n;
  }

  /** Publishes taken on the channels and not yet confirmed to the client. */
  get unconfirmedPublishes(): number {
    let n = 0;
    for (const channel of this.#channels.values()) n += channel.core.unconfirmedPublishes;
    return n;
  }

  *openChannels(): IterableIterator<ClientChannel> {
    for (const channel of this.#channels.values()) if (channel.core.isOpen) yield channel.core;
  }

  channelFor(number: number): ClientChannel | undefined {
    const core = this.#channels.get(number)?.core;
    return core?.isOpen ? core : undefined;
  }

  // ---------------------------------------------------------------------------------- pipelining

  /** Credentials are being checked: hold what the client sends meanwhile. */
  holdCommands(): void {
    this.#held = [];
  }

  get holding(): boolean {
    return this.#held !== undefined;
  }

  /** Keep a command until the connection opens (503 COMMAND_INVALID past the bound). */
  hold(command: Held): void {
    const held = this.#held;
    if (held === undefined) throw new Error('hold() while not holding commands');
    if (held.length >= this.#maxHeld) {
      throw new ConnectionError(Code.COMMAND_INVALID, this.#heldRefusal);
    }
    held.push(command);
  }

  /** What was held, in arrival order; holding stops. */
  takeHeld(): Held[] {
    const held = this.#held ?? [];
    this.#held = undefined;
    return held;
  }

  // ---------------------------------------------------------------------------------- heartbeats

  get heartbeatMs(): number {
    return this.#heartbeatMs;
  }

  /** Something came from the client. */
  received(): void {
    this.#lastReceived = Date.now();
  }

  /** Something went to the client (no heartbeat needed this interval). */
  sent(): void {
    this.#sentSinceTick = true;
  }

  /**
   * Heartbeats at `ms` (0: none): one goes out every half interval nothing else did, and two
   * intervals without a byte from the client drop the connection (as RabbitMQ does).
   */
  startHeartbeats(ms: number): void {
    this.#heartbeatMs = ms;
    if (ms === 0) return;
    const interval = Math.max(100, ms >>> 1);
    this.#heartbeatTimer = setInterval(() => {
      if (Date.now() - this.#lastReceived > ms * 2) {
        this.#logger.info({ heartbeatMs: ms }, 'missed heartbeats; closing connection');
        this.#wire.heartbeatsMissed();
        return;
      }
      if (!this.#sentSinceTick) this.#wire.sendHeartbeat();
      this.#sentSinceTick = false;
    }, interval);
    this.#heartbeatTimer.unref();
  }

  // ---------------------------------------------------------------------------------- flow

  /** Throttled under a resource alarm (`info().state` 'blocked'). */
  get blocked(): boolean {
    return this.#pausedForMemory;
  }

  /**
   * A client's publish arrived: whether to take it (not once a graceful close began: a publish
   * sent after that decision is dropped, so the client's failing it at the close is exact). The
   * first publish makes the connection a publisher, blocked at once while an alarm is in effect.
   */
  admitPublish(): boolean {
    if (!this.#takingPublishes) return false;
    if (!this.#publisher) {
      this.#publisher = true;
      const reason = this.#broker.publishBlockReason;
      if (reason !== undefined) this.setMemoryBlocked(true, reason);
    }
    return true;
  }

  /** A resource alarm is in effect, or the last one cleared: throttle publishers, telling them why. */
  setMemoryBlocked(blocked: boolean, reason = 'memory budget exceeded'): void {
    if (!this.#wire.isOpen || !this.#publisher || blocked === this.#pausedForMemory) return;
    this.#pausedForMemory = blocked;
    if (blocked) {
      this.#wire.sendBlocked(reason);
      // After this turn, so the notice (and what is queued with it) is written first.
      setImmediate(() => {
        if (this.#pausedForMemory && !this.#wire.isClosed) this.#wire.pauseReading();
      });
    } else {
      this.#wire.sendUnblocked();
      if (!this.#pausedForDrain) this.#wire.resumeReading();
    }
  }

  /** The peer is not reading what we send: stop reading what it sends until `drained`. */
  pauseForDrain(): void {
    if (this.#pausedForDrain) return;
    this.#pausedForDrain = true;
    this.#wire.pauseReading();
  }

  get pausedForDrain(): boolean {
    return this.#pausedForDrain;
  }

  drained(): void {
    this.#pausedForDrain = false;
    if (!this.#pausedForMemory && !this.#wire.isClosed) this.#wire.resumeReading();
  }

  // ---------------------------------------------------------------------------------- closing

  /**
   * Close with 320 CONNECTION_FORCED without leaving a publisher in doubt (maintenance mode, node
   * shutdown): from now on publishes are not taken (dropped unnumbered, so the client fails them at
   * the close: none reached a queue), publishers are told with a blocked notice, and the close
   * waits until every publish taken before has been confirmed or nacked to the client. A publish
   * taken was handed to its queue(s) at once, so its outcome is awaited, never guessed: nacking it
   * at the close would have the client send again what may still commit. The wait is bounded by
   * `maxWaitMs`, longer than a queue handle takes to settle an enqueue, so it normally ends with
   * every outcome known; past it the close goes ahead (a node must stop) and says, as an error, how
   * many publishes were left in doubt. Unacked deliveries go back to their queues at the close.
   */
  async closeGracefully(text: string, maxWaitMs = GRACEFUL_CLOSE_MAX_WAIT_MS): Promise<void> {
    const wire = this.#wire;
    if (wire.isClosed) return;
    this.#takingPublishes = false;
    if (wire.isOpen && this.#publisher) wire.sendBlocked(text);
    const deadline = performance.now() + maxWaitMs;
    // (`isClosed` changes across the awaits.)
    while (!wire.isClosed && this.unconfirmedPublishes > 0 && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, GRACEFUL_CLOSE_POLL_MS));
    }
    const unconfirmed = wire.isClosed ? 0 : this.unconfirmedPublishes;
    if (unconfirmed > 0) {
      this.#logger.error(
        { unconfirmed, waitedMs: maxWaitMs },
        'closing with publishes whose outcome is still unknown: the client may send them again',
      );
    }
    wire.forceClose(text);
  }

  /**
   * The connection is gone: stop the timers, drop held commands and abandon every channel (their
   * queues take back consumers and unacked messages). `abandon` releases one channel.
   */
  release(abandon: (channel: C) => void): void {
    if (this.#heartbeatTimer !== undefined) clearInterval(this.#heartbeatTimer);
    this.#heartbeatTimer = undefined;
    this.#held = undefined;
    for (const channel of this.#channels.values()) abandon(channel);
    this.#broker.counters.channelsClosed += this.#channels.size;
    this.#channels.clear();
  }
}

/** A connection's facts that its transport decides (`CoreConnection.coreFacts` adds the rest). */
export interface WireFacts {
  readonly id: string;
  /** The user named at the handshake, until a session says who is connected. */
  readonly user: string;
  readonly protocol: string;
  readonly ends: SocketEnds;
  /** The socket is TLS (RabbitMQ's `ssl`). */
  readonly ssl: boolean;
  readonly connectedAt: number;
  readonly frameMax: number;
  readonly channelMax: number;
  readonly clientProperties: FieldTable | null | undefined;
  readonly recvOct: number;
  readonly sendOct: number;
}

/** The two ends of a client's socket. */
export interface SocketEnds {
  readonly peerHost: string;
  readonly peerPort: number;
  readonly host: string;
  readonly port: number;
}

/** A transport's channel adapter as its connection releases it. */
export interface AbandonableChannel extends ConnectionChannel {
  /** The connection is gone: release the channel without sending anything. */
  abandon(): void;
}

/** How long a socket asked to end may take to close before it is destroyed, ms. */
const SOCKET_END_GRACE_MS = 2000;

/**
 * What a transport's connection answers the broker from its connection core alone (the counts and
 * channels of `ClientConnection`, its session, resource alarms), and the end of a connection
 * (shutdown, the peer's close, the release of its channels and of its place in the broker), written
 * once for every protocol. The transport says how its socket ends and which timers it stops.
 */
export abstract class CoreConnection<C extends AbandonableChannel, Held> {
  protected abstract readonly core: ConnectionCore<C, Held>;
  protected abstract readonly broker: Broker;
  abstract readonly logger: Logger;
  /** The transport's states; 'closed' once released. */
  protected abstract state: string;
  /** Who is connected, once the handshake authenticated them. */
  protected sessionValue: Session | undefined;

  /** What an operator sees of a connection that the transport decides (the rest is the core's). */
  protected coreFacts(own: WireFacts): ConnectionFacts {
    const e = own.ends;
    return {
      name: `${e.peerHost}:${e.peerPort} -> ${e.host}:${e.port}`,
      id: own.id,
      user: this.sessionValue?.user ?? own.user,
      vhost: this.sessionValue?.vhost ?? '',
      protocol: own.protocol,
      ...e,
      ssl: own.ssl,
      state: this.state === 'open' ? (this.core.blocked ? 'blocked' : 'running') : 'closing',
      connectedAt: own.connectedAt,
      heartbeatMs: this.core.heartbeatMs,
      frameMax: own.frameMax,
      channelMax: own.channelMax,
      clientProperties: argumentsJson(own.clientProperties ?? { entries: [] }),
      recvOct: own.recvOct,
      sendOct: own.sendOct,
      channels: [...this.core.openChannels()].map((channel) => channel.facts()),
    };
  }

  /** Write what is queued for the socket now. */
  protected abstract flushWrites(): void;
  /** Close the socket once what is written has gone. */
  protected abstract endSocket(): void;
  /** Close the socket at once (it did not close in time after `endSocket`). */
  protected abstract destroySocket(): void;
  /** Stop the transport's own timers (handshake, close, frame). */
  protected abstract stopTimers(): void;

  /** Release everything and close the socket once the queued frames are written. */
  protected shutdown(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.release();
    // What is queued (a connection.close, a close-ok) goes first.
    this.flushWrites();
    this.endSocket();
    setTimeout(() => this.destroySocket(), SOCKET_END_GRACE_MS).unref();
  }

  /** The peer closed the socket (or it broke). */
  protected onSocketClosed(): void {
    if (this.state === 'closed') return;
    this.logger.debug('socket closed by peer');
    this.state = 'closed';
    this.release();
  }

  /** Stop the timers, abandon every channel, and leave the broker's connections if it was open. */
  protected release(): void {
    this.stopTimers();
    this.core.release((channel) => channel.abandon());
    if (this.sessionValue !== undefined) this.broker.gate.closed(this as unknown as ClientConnection);
  }

  get session(): Session {
    if (this.sessionValue === undefined) throw new Error('session used before the handshake completed');
    return this.sessionValue;
  }

  /** Channels open on this connection (metrics). */
  get channelCount(): number {
    return this.core.channelCount;
  }

  /** Of the open channels, those that have published (metrics: `rabbitmq_global_publishers`). */
  get publisherCount(): number {
    return this.core.publisherCount;
  }

  /** Consumers registered on this connection's channels (metrics: `rabbitmq_global_consumers`). */
  get consumerCount(): number {
    return this.core.consumerCount;
  }

  /** The open channels. */
  openChannels(): Iterable<ClientChannel> {
    return this.core.openChannels();
  }

  /** The open channel with this number, if any (queues deliver to it as its owner). */
  channelFor(number: number): ClientChannel | undefined {
    return this.core.channelFor(number);
  }

  /** A resource alarm is in effect, or the last one cleared: throttle publishers, telling them `reason`. */
  setMemoryBlocked(blocked: boolean, reason?: string): void {
    this.core.setMemoryBlocked(blocked, reason);
  }
}
