import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';

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
}

/**
 * A client connection as the broker sees it. The broker owns this interface and each transport
 * (transport/ws/, later AMQP 0-9-1) implements it: the broker never depends on a transport's
 * classes, so no transport is special and none is imported by the broker.
 */
export interface ClientConnection {
  /** `${nodeName}:${runId}.${n}`: unique across the cluster and across restarts. */
  readonly id: string;
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
  /** The node crossed its memory budget (or came back under it): throttle publishers. */
  setMemoryBlocked(blocked: boolean): void;
  /**
   * Close with 320 CONNECTION_FORCED once every publish taken is confirmed or nacked, taking no
   * new publish meanwhile (maintenance mode, node shutdown). Resolves once closed.
   */
  closeGracefully(reason: string): Promise<void>;
}
