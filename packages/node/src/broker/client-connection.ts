/**
 * What the broker and the management API need from a client connection, whatever protocol it
 * speaks: who it is (`session`), what an operator sees of it (`info`: RabbitMQ's facts of a
 * connection, its channels and their consumers) and how an operator ends it (`close`). A transport
 * (transport/ws/connection.ts) implements it; management code reads connections only through it,
 * so it never depends on a transport's classes.
 */
import type { Session } from './broker.ts';

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

/** A client connection as the broker holds it (see the module comment). */
export interface ClientConnection {
  /** Unique in the cluster: `${nodeName}:${runId}.${counter}`. */
  readonly id: string;
  readonly session: Session;
  /** The connection's facts now (cheap: no I/O). */
  info(): ConnectionFacts;
  /**
   * End the connection with an AMQP connection error (320 CONNECTION_FORCED for an operator's
   * close): the client receives `code` and `reason` in its close, then the socket closes.
   */
  close(code: number, reason: string): void;
}
