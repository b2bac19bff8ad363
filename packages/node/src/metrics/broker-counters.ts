/**
 * The node's protocol-level totals: what its clients' channels published, had routed, confirmed,
 * were delivered and acked, and how many connections, channels and queues came and went. They are
 * RabbitMQ's `rabbitmq_global_messages_*` counters and its connection churn figures, counted where
 * RabbitMQ counts them — on the node the client is connected to, by the channel — so a cluster's
 * dashboards sum them across nodes without counting a message twice.
 *
 * Plain fields the channel code increments on its hot path (no allocation): a counter is a number,
 * the message size histogram one count per bucket. Everything starts at zero with the process (a restart is a
 * counter reset for Prometheus).
 */
import type { HistogramSnapshot } from './exposition-writer.ts';

/**
 * Upper bounds of the message size buckets, bytes: the bounds RabbitMQ's Overview dashboard reads
 * (`le="100.0"` … `le="1e+08"`), so its message size panels work on Styx's figures unchanged.
 */
export const MESSAGE_SIZE_BOUNDS: readonly number[] = [100, 1000, 10_000, 100_000, 1e6, 1e7, 5e7, 1e8];

export class BrokerCounters {
  /** Messages published by clients of this node (basic.publish taken, routed or not). */
  received = 0;
  /** Of `received`, those published on a channel in confirm mode. */
  receivedConfirm = 0;
  /** Messages routed to at least one queue. */
  routed = 0;
  /** Unroutable messages published without `mandatory`: dropped. */
  unroutableDropped = 0;
  /** Unroutable messages published with `mandatory`: returned to the publisher. */
  unroutableReturned = 0;
  /** Publishes confirmed (acked) to a publisher in confirm mode. */
  confirmed = 0;
  /** Deliveries to consumers that do not ack (no-ack). */
  deliveredConsumeAutoAck = 0;
  /** Deliveries to consumers that ack. */
  deliveredConsumeManualAck = 0;
  /** basic.get answered with a message, no-ack. */
  deliveredGetAutoAck = 0;
  /** basic.get answered with a message, to be acked. */
  deliveredGetManualAck = 0;
  /** basic.get answered empty. */
  getEmpty = 0;
  /** Deliveries (consume or get) of messages delivered before. */
  redelivered = 0;
  /** Messages acked by clients (each message of a `multiple` ack counts). */
  acknowledged = 0;

  connectionsOpened = 0;
  connectionsClosed = 0;
  channelsOpened = 0;
  channelsClosed = 0;
  /** queue.declare calls that succeeded (new or existing queue). */
  queuesDeclared = 0;
  /** Queues created by this node (declare of a new queue). */
  queuesCreated = 0;
  /** Queues deleted through this node (queue.delete, auto-delete, exclusive owner gone). */
  queuesDeleted = 0;

  /** Body sizes of the messages received: counts per `MESSAGE_SIZE_BOUNDS` bucket, then +Inf. */
  readonly #sizeCounts: number[] = new Array<number>(MESSAGE_SIZE_BOUNDS.length + 1).fill(0);
  #sizeSum = 0;

  /** Every message delivered (consume and get, either ack mode). */
  get delivered(): number {
    return (
      this.deliveredConsumeAutoAck +
      this.deliveredConsumeManualAck +
      this.deliveredGetAutoAck +
      this.deliveredGetManualAck
    );
  }

  /** Count a message received from a publisher, of `bytes` body bytes. */
  countReceived(bytes: number, confirm: boolean): void {
    this.received++;
    if (confirm) this.receivedConfirm++;
    this.#sizeSum += bytes;
    let i = 0;
    const bounds = MESSAGE_SIZE_BOUNDS;
    while (i < bounds.length && bytes > (bounds[i] as number)) i++;
    (this.#sizeCounts[i] as number)++;
  }

  /** The message size histogram as it is now (a copy). */
  messageSizes(): HistogramSnapshot {
    return {
      bounds: MESSAGE_SIZE_BOUNDS,
      counts: [...this.#sizeCounts],
      sum: this.#sizeSum,
      count: this.received,
    };
  }
}
