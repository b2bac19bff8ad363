/**
 * The broker's own view of client connections and channels, whatever protocol they speak. The
 * broker owns these interfaces and each transport (transport/ws/, later AMQP 0-9-1) implements
 * them: the broker and the management API never depend on a transport's classes, so no transport
 * is special and none is imported by the broker. Besides what the broker needs to run (owner ids,
 * metrics, alarms, graceful closes) it is what an operator sees of a connection (`info`: RabbitMQ's
 * facts of a connection, its channels and their consumers) and how an operator ends one (`close`).
 */
import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { Session } from './session.ts';

/** A consumer as `GET /api/consumers` reports it (RabbitMQ's fields, without the channel's). */
export interface ConsumerFacts {
  readonly consumerTag: string;
  readonly queue: { readonly vhost: string; readonly name: string };
  /** Deliveries need an ack (the consumer is not no-ack). */
  readonly ackRequired: boolean;
  /** The channel's prefetch when the consumer started (0: unlimited). */
  readonly prefetchCount: number;
  readonly exclusive: boolean;
  /** basic.consume's arguments, as JSON. */
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** A channel as `GET /api/channels` reports it. */
export interface ChannelFacts {
  readonly number: number;
  readonly state: 'running' | 'closing';
  /** basic.qos' prefetch count (0: unlimited). */
  readonly prefetchCount: number;
  /** The channel is in confirm mode. */
  readonly confirm: boolean;
  readonly messagesUnacknowledged: number;
  /** Publishes taken in confirm mode and not yet confirmed. */
  readonly messagesUnconfirmed: number;
  readonly consumers: readonly ConsumerFacts[];
}

/** A connection as `GET /api/connections` reports it; `node` is filled in by the broker. */
export interface ConnectionFacts {
  /** RabbitMQ's name: "peer_host:peer_port -> host:port", unique while the connection is open. */
  readonly name: string;
  /** The broker's id of the connection (owner of its exclusive queues; the SDK's connectionName). */
  readonly id: string;
  readonly user: string;
  readonly vhost: string;
  /** e.g. 'Styx WebSocket 1'. */
  readonly protocol: string;
  readonly peerHost: string;
  readonly peerPort: number;
  readonly host: string;
  readonly port: number;
  /** Whether the connection is over TLS (RabbitMQ's `ssl`). */
  readonly ssl: boolean;
  readonly state: 'running' | 'blocked' | 'closing';
  /** ms since the epoch. */
  readonly connectedAt: number;
  /** Negotiated heartbeat interval, ms (0: none). */
  readonly heartbeatMs: number;
  readonly frameMax: number;
  readonly channelMax: number;
  readonly clientProperties: Readonly<Record<string, unknown>>;
  /** Bytes received and sent on the socket so far. */
  readonly recvOct: number;
  readonly sendOct: number;
  readonly channels: readonly ChannelFacts[];
}

/**
 * A client channel as the broker sees it: the owner its queues deliver to (owner id
 * `${connectionId}/${channelNumber}`), whatever protocol its connection speaks.
 */
export interface ClientChannel extends OwnerSink<QueueHandle> {
  /**
   * A cluster node came back: register every consumer of this channel again (a no-op for a queue
   * that kept them; the way back for one whose leader gave them up while it counted this node down).
   */
  reassertConsumers(): void;
  /** What an operator sees of this channel (`GET /api/channels`). */
  facts(): ChannelFacts;
}

/** A client connection as the broker holds it (see the module comment). */
export interface ClientConnection {
  /** `${nodeName}:${runId}.${n}`: unique across the cluster and across restarts. */
  readonly id: string;
  /** Who is connected (the authenticated user and vhost). */
  readonly session: Session;
  /** Channels open on this connection (metrics). */
  readonly channelCount: number;
  /** Of the open channels, those that have published (metrics: `rabbitmq_global_publishers`). */
  readonly publisherCount: number;
  /** Consumers registered on this connection's channels (metrics: `rabbitmq_global_consumers`). */
  readonly consumerCount: number;
  /** The open channel with this number, if any (its queues deliver to it as their owner). */
  channelFor(number: number): ClientChannel | undefined;
  /** The open channels. */
  openChannels(): Iterable<ClientChannel>;
  /**
   * A resource alarm (memory or disk, on this node or another member) is in effect, or the last
   * one cleared: throttle publishers, telling them `reason`.
   */
  setMemoryBlocked(blocked: boolean, reason?: string): void;
  /**
   * Close with 320 CONNECTION_FORCED once every publish taken is confirmed or nacked, taking no
   * new publish meanwhile (maintenance mode, node shutdown). Resolves once closed.
   */
  closeGracefully(reason: string): Promise<void>;
  /** The connection's facts now (cheap: no I/O). */
  info(): ConnectionFacts;
  /**
   * End the connection with an AMQP connection error (320 CONNECTION_FORCED for an operator's
   * close): the client receives `code` and `reason` in its close, then the socket closes.
   */
  close(code: number, reason: string): void;
}
