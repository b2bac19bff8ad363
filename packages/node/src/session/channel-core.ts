/**
 * The channel core: AMQP 0-9-1's channel semantics, once for every protocol.
 *
 * Layering (see the README's layout): a transport (transport/ws/, transport/amqp091/) decodes its
 * frames into protocol-neutral method structs (channel-methods.ts) and hands them to a
 * `ChannelCore`; the core runs them against the broker and answers through a `ChannelOutput` the
 * transport implements (channel-output.ts), which encodes and frames. What lives here: the order
 * methods are handled in (the backlog behind a synchronous method), publisher confirms, consumers
 * and credit, unacked tracking and redelivery, and errors with AMQP codes. What does not: the
 * handshake, channel multiplexing, heartbeats, batching and back-pressure (the transport's) and
 * topology, routing and queues (the broker's). The broker sees a core as a `ClientChannel`.
 */
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import type { Broker, Session } from '../broker/broker.ts';
import type { ChannelFacts, ClientChannel } from '../broker/client-connection.ts';
import { extractSenderRouting } from '../broker/sender-routing.ts';
import {
  accessRefused,
  ChannelError,
  Code,
  ConnectionError,
  notFound,
  preconditionFailed,
} from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import { argumentsJson } from '../management/views.ts';
import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { StoredMessage } from '../queue/types.ts';
import { REDELIVER_UNFLAGGED, REORDER_DELIVERIES } from '../test-support/test-breaks.ts';
import type { BindMethod, ChannelMethod, ChannelReply, PublishMethod } from './channel-methods.ts';
import type { ChannelOutput } from './channel-output.ts';
import { ConfirmTracker } from './confirm-tracker.ts';
import { checkMessageSize } from './message-size.ts';
import { SettledMemory } from './settled-memory.ts';

/** What a channel core is given by the connection that opens it. */
export interface ChannelCoreOptions<Prepared> {
  readonly broker: Broker;
  /** Who acts on this channel (the connection's authenticated user and vhost). */
  readonly session: Session;
  /** The connection's id: the channel's owner id is `${connectionId}/${number}`. */
  readonly connectionId: string;
  readonly number: number;
  readonly logger: Logger;
  readonly output: ChannelOutput<Prepared>;
}

/** What a channel's connection gives its core: who acts, the connection's id, its logger. */
export interface ChannelCoreHost {
  readonly session: Session;
  readonly id: string;
  readonly logger: Logger;
}

/**
 * Settled messages a channel remembers at least per queue, to ignore stale copies of their
 * deliveries (`settledIds`): a few seconds of a busy consumer's acks, about 40 B each (the memory
 * keeps up to twice as many: ~320 KiB at most; see settled-memory.ts).
 */
const SETTLED_REMEMBERED = 4096;

/** Pause before registering a consumer again after a failed attempt, doubling up to the max, ms. */
const REASSERT_FIRST_DELAY_MS = 500;
const REASSERT_MAX_DELAY_MS = 10_000;

interface Consumer<Prepared> {
  readonly tag: string;
  readonly queue: QueueHandle;
  readonly noAck: boolean;
  readonly prefetch: number;
  readonly exclusive: boolean;
  /** basic.consume's arguments, as the consumer's facts show them. */
  readonly arguments: { readonly [key: string]: unknown };
  /**
   * Deliveries (as the output prepared them) that arrived before basic.consume-ok went out. AMQP
   * requires consume-ok first, but the queue may deliver during the very apply that attached the
   * consumer.
   */
  pending: Prepared[] | undefined;
}

interface Unacked {
  readonly queue: QueueHandle;
  readonly id: number;
  /** The queue's delivery count of this delivery (0 the first time; 0 for a basic.get). */
  readonly deliveryCount: number;
}

const EMPTY_PROPERTIES: BasicProperties = {};

const CLOSE_OK: ChannelReply = { method: 'channel.close-ok' };

/**
 * One AMQP channel on a connection: per-channel ordering, publisher confirms, consumers and their
 * unacked deliveries. It is also the `OwnerSink` its queues deliver to: unacked messages belong to
 * the channel (`owner` = `${connectionId}/${channelNumber}`), not to a consumer, so an ack after
 * basic.cancel is still valid.
 *
 * Ordering: methods are handled strictly in arrival order. Asynchronous methods (publish, ack, nack,
 * reject) are handled synchronously — their queue commands are proposed in order, so a get after a
 * publish on the same channel sees the message. A synchronous method (declare, bind, consume, get,
 * …) holds back the methods after it until its reply is sent.
 */
/** What a batch of acks/nacks proposes: settle (ack), discard (nack without requeue), return. */
type OutcomeKind = 'settle' | 'discard' | 'return';

export class ChannelCore<Prepared = unknown> implements OwnerSink<QueueHandle>, ClientChannel {
  readonly number: number;
  readonly owner: string;
  private readonly output: ChannelOutput<Prepared>;
  private readonly broker: Broker;
  private readonly session: Session;
  private readonly logger: Logger;
  private state: 'open' | 'closing' | 'closed' = 'open';
  private backlog: ChannelMethod[] = [];
  private busy = false;
  private confirms: ConfirmTracker | undefined;
  private confirmFlushScheduled = false;
  private prefetch = 0;
  /** basic.qos global=true's prefetch count (0: none). */
  private globalPrefetch = 0;
  /** The queue this channel declared last: what an empty queue name stands for (queueName). */
  private lastDeclaredQueue = '';
  private nextDeliveryTag = 1;
  /** `reorder-deliveries` (test-breaks.ts) only: deliveries so far, and one held back. */
  private reorderCount = 0;
  private heldBack: Prepared | undefined = undefined;
  private readonly consumers = new Map<string, Consumer<Prepared>>();
  /** Delivery tag → message; insertion order is tag order, which `multiple` acks rely on. */
  private readonly unacked = new Map<number, Unacked>();
  /**
   * The latest delivery tag of each message this channel holds unacked, by queue incarnation
   * (`groupId`) and message id: a delivery sent again (a new leader re-sends what is outstanding,
   * a link resends what it may have lost) is ignored while the channel holds the message.
   */
  private readonly heldIds = new Map<string, Map<number, number>>();
  /**
   * The delivery count of each message this channel acked, nacked or recovered lately (at least the
   * latest `SETTLED_REMEMBERED` per queue incarnation, the oldest forgotten first): a send of it with no
   * higher count that arrives afterwards is a stale copy — a deposed leader's send slowed on the
   * link, or a link's resend of the very delivery that was settled — and is ignored. Without this
   * the client got the message a second time after acking it, unflagged (chaos seed 101). A higher
   * count is the queue delivering it anew (the settle never applied, or a requeue): it goes through.
   */
  private readonly settledIds = new Map<string, SettledMemory>();
  /**
   * Acks (or nacks of one kind) of this turn not yet proposed, per queue: one `settle` (`discard`,
   * `return`) command per queue per turn instead of one per message. Proposed at the end of the turn
   * (a microtask) and before anything else this channel proposes, so its queues see its commands in
   * the order the client sent them.
   */
  private outcomes: Map<QueueHandle, number[]> | undefined = undefined;
  private outcomeKind: OutcomeKind = 'settle';
  /** Queues that may hold this channel's consumers or unacked messages (told on close). */
  private readonly queuesUsed = new Set<QueueHandle>();
  /** Exchanges this channel may publish to, valid while the permission epoch is unchanged. */
  private writable = new Set<string>();
  private writableEpoch = -1;
  /** Published at least once (a publisher, for `rabbitmq_global_publishers`). */
  hasPublished = false;

  /** The core of channel `number` of the connection `host`, answering through `output`. */
  static of<Prepared>(
    host: ChannelCoreHost,
    broker: Broker,
    number: number,
    output: ChannelOutput<Prepared>,
  ): ChannelCore<Prepared> {
    return new ChannelCore({
      broker,
      session: host.session,
      connectionId: host.id,
      number,
      logger: host.logger,
      output,
    });
  }

  constructor(options: ChannelCoreOptions<Prepared>) {
    this.output = options.output;
    this.broker = options.broker;
    this.session = options.session;
    this.logger = options.logger;
    this.number = options.number;
    this.owner = `${options.connectionId}/${options.number}`;
  }

  /** Consumers registered on this channel. */
  get consumerCount(): number {
    return this.consumers.size;
  }

  get isOpen(): boolean {
    return this.state === 'open';
  }

  /** Publishes taken in confirm mode and not yet confirmed (acked or nacked) to the client. */
  get unconfirmedPublishes(): number {
    return this.state === 'open' ? (this.confirms?.outstanding ?? 0) : 0;
  }

  /** What an operator sees of this channel (`GET /api/channels`, broker/client-connection.ts). */
  facts(): ChannelFacts {
    return {
      number: this.number,
      state: this.state === 'open' ? 'running' : 'closing',
      prefetchCount: this.prefetch,
      confirm: this.confirms !== undefined,
      messagesUnacknowledged: this.unacked.size,
      messagesUnconfirmed: this.unconfirmedPublishes,
      consumers: [...this.consumers.values()].map((c) => ({
        consumerTag: c.tag,
        queue: { vhost: c.queue.vhost, name: c.queue.name },
        ackRequired: !c.noAck,
        prefetchCount: c.prefetch,
        exclusive: c.exclusive,
        // Shown as given (x-priority and the like change nothing in delivery yet).
        arguments: c.arguments,
      })),
    };
  }

  /**
   * A queue name as a method gives it: the empty name stands for the queue this channel declared
   * last (AMQP 0-9-1's shortcut, as RabbitMQ keeps it); 404 NOT_FOUND when it declared none.
   */
  private queueName(name: string): string {
    if (name !== '') return name;
    if (this.lastDeclaredQueue === '') throw new ChannelError(Code.NOT_FOUND, 'no previously declared queue');
    return this.lastDeclaredQueue;
  }

  /** queue.bind / unbind's routing key: with the queue and key both empty, the last declared queue's name. */
  private bindingKey(m: BindMethod): string {
    return m.destination === '' && m.routingKey === '' ? this.queueName('') : m.routingKey;
  }

  /** Handle one method from the client, in order. Connection-level faults go to `output.connectionError`. */
  handle(method: ChannelMethod): void {
    if (this.state === 'closed') return;
    if (this.state === 'closing') {
      // After the server sent channel.close only close / close-ok matter (AMQP 0-9-1 §4.2.5).
      if (method.method === 'channel.close-ok') this.finishClose();
      else if (method.method === 'channel.close') this.output.reply(CLOSE_OK);
      return;
    }
    if (this.busy) {
      this.backlog.push(method);
      return;
    }
    this.run(method);
  }

  private run(method: ChannelMethod): void {
    let pending: Promise<void> | undefined;
    try {
      pending = this.dispatch(method);
    } catch (err) {
      this.fail(err, method);
      return;
    }
    if (pending === undefined) return;
    this.busy = true;
    pending.then(
      () => this.resume(),
      (err: unknown) => {
        this.busy = false;
        this.fail(err, method);
      },
    );
  }

  private resume(): void {
    this.busy = false;
    while (!this.busy && this.state === 'open' && this.backlog.length > 0) {
      const next = this.backlog.shift() as ChannelMethod;
      this.run(next);
    }
  }

  /** `method` failed with `err`: close the channel (or the connection) naming it. */
  private fail(err: unknown, method: ChannelMethod): void {
    const failing = method.method === 'invalid' ? method.name : method.method;
    if (err instanceof ChannelError) {
      this.closeWithError(err.code, err.message, failing);
    } else if (err instanceof ConnectionError) {
      // Escalate: the whole connection closes (e.g. 503 COMMAND_INVALID, 530 NOT_ALLOWED).
      this.output.connectionError(err, failing);
    } else {
      this.logger.error({ err, channel: this.number }, 'internal error on channel');
      this.closeWithError(
        Code.INTERNAL_ERROR,
        `internal error: ${(err as Error)?.message ?? String(err)}`,
        failing,
      );
    }
  }

  /** Returns a promise when the method is synchronous (later methods wait for it). */
  private dispatch(m: ChannelMethod): Promise<void> | undefined {
    const b = this.broker;
    const s = this.session;
    if (
      this.outcomes !== undefined &&
      m.method !== 'basic.ack' &&
      m.method !== 'basic.nack' &&
      m.method !== 'basic.reject'
    )
      this.flushOutcomes();
    switch (m.method) {
      case 'basic.publish':
        this.publish(m);
        return undefined;
      case 'basic.ack':
        this.ack(m.deliveryTag, m.multiple);
        return undefined;
      case 'basic.nack':
        this.nack(m.deliveryTag, m.multiple, m.requeue);
        return undefined;
      case 'basic.reject':
        this.nack(m.deliveryTag, false, m.requeue);
        return undefined;
      case 'channel.close':
        return this.closeByClient();
      case 'channel.open':
        throw new ConnectionError(Code.CHANNEL_ERROR, `channel ${this.number} is already open`);
      case 'confirm.select':
        if (this.confirms === undefined) {
          const output = this.output;
          this.confirms = new ConfirmTracker({
            sendAck: (seq, multiple) => output.confirm(seq, multiple, true),
            sendNack: (seq, multiple) => output.confirm(seq, multiple, false),
          });
        }
        this.reply({ method: 'confirm.select-ok' });
        return undefined;
      case 'basic.qos':
        // 540 NOT_IMPLEMENTED is a connection error in AMQP 0-9-1 (RabbitMQ closes the connection for
        // prefetch_size too).
        if (m.prefetchSize)
          throw new ConnectionError(
            Code.NOT_IMPLEMENTED,
            'prefetch_size is not supported; use prefetch_count',
          );
        // Channel-wide prefetch is taken, as RabbitMQ takes it; like RabbitMQ's quorum queues,
        // Styx's replicated queues then refuse basic.consume while it limits (count > 0).
        if (m.global) this.globalPrefetch = m.prefetchCount;
        else this.prefetch = m.prefetchCount;
        this.reply({ method: 'basic.qos-ok' });
        return undefined;
      case 'channel.flow':
        // As RabbitMQ: a client may not stop the server's deliveries with flow (prefetch does that).
        if (!m.active) throw new ConnectionError(Code.NOT_IMPLEMENTED, 'active=false');
        this.reply({ method: 'channel.flow-ok', active: true });
        return undefined;
      case 'exchange.declare':
        return b.declareExchange(s, m).then(() => this.reply({ method: 'exchange.declare-ok' }));
      case 'exchange.delete':
        return b
          .deleteExchange(s, m.exchange, m.ifUnused)
          .then(() => this.reply({ method: 'exchange.delete-ok' }));
      case 'exchange.bind':
        return b
          .bind(s, 'exchange', m.destination, m.source, m.routingKey, m.arguments)
          .then(() => this.reply({ method: 'exchange.bind-ok' }));
      case 'exchange.unbind':
        return b
          .unbind(s, 'exchange', m.destination, m.source, m.routingKey, m.arguments)
          .then(() => this.reply({ method: 'exchange.unbind-ok' }));
      case 'queue.declare':
        return b.declareQueue(s, m).then((ok) => {
          b.counters.queuesDeclared++;
          this.lastDeclaredQueue = ok.queue;
          this.reply({ method: 'queue.declare-ok', ...ok });
        });
      case 'queue.delete':
        return b
          .deleteQueue(s, this.queueName(m.queue), m.ifUnused, m.ifEmpty)
          .then((messageCount) => this.reply({ method: 'queue.delete-ok', messageCount }));
      case 'queue.purge':
        return b
          .purgeQueue(s, this.queueName(m.queue))
          .then((messageCount) => this.reply({ method: 'queue.purge-ok', messageCount }));
      case 'queue.bind':
        return b
          .bind(s, 'queue', this.queueName(m.destination), m.source, this.bindingKey(m), m.arguments)
          .then(() => this.reply({ method: 'queue.bind-ok' }));
      case 'queue.unbind':
        return b
          .unbind(s, 'queue', this.queueName(m.destination), m.source, this.bindingKey(m), m.arguments)
          .then(() => this.reply({ method: 'queue.unbind-ok' }));
      case 'basic.consume':
        return this.consume(this.queueName(m.queue), m.consumerTag, m.noAck, m.exclusive, m.arguments);
      case 'basic.cancel':
        return this.cancel(m.consumerTag);
      case 'basic.get':
        return this.get(this.queueName(m.queue), m.noAck);
      case 'basic.recover':
        return this.recover();
      case 'channel.close-ok':
      case 'invalid':
        throw new ConnectionError(
          Code.COMMAND_INVALID,
          `method ${m.name} is not valid from a client on a channel`,
        );
    }
  }

  private reply(reply: ChannelReply): void {
    if (this.state === 'open') this.output.reply(reply);
  }

  // ------------------------------------------------------------------------------------ publish

  private publish(p: PublishMethod): void {
    // First, as RabbitMQ's channel does: the body's size, against the node's max_message_size.
    checkMessageSize(p.bodySize ?? p.body.byteLength, this.broker.maxMessageSize);
    const session = this.session;
    const seq = this.confirms !== undefined ? this.confirms.next() : 0;
    const counters = this.broker.counters;
    counters.countReceived(p.body.byteLength, seq !== 0);
    this.hasPublished = true;
    const exchange = this.broker.exchange(session.vhost, p.exchange);
    if (exchange === undefined) throw notFound(`no exchange '${p.exchange}' in vhost '${session.vhost}'`);
    if (exchange.internal)
      throw accessRefused(`cannot publish to internal exchange '${p.exchange}' in vhost '${session.vhost}'`);
    if (p.immediate) throw new ConnectionError(Code.NOT_IMPLEMENTED, 'immediate=true is not supported');
    this.checkWritable(p.exchange);

    const props = p.properties ?? EMPTY_PROPERTIES;
    let ttl: number | undefined;
    if (props.expiration != null) {
      ttl = this.broker.parseExpiration(props.expiration);
    }
    if (props.userId != null && props.userId !== session.user) {
      throw preconditionFailed(
        `user_id property set to '${props.userId}' but authenticated user was '${session.user}'`,
      );
    }
    const sender = extractSenderRouting(props);
    const keys = sender.keys === undefined ? [p.routingKey] : [p.routingKey, ...sender.keys];
    // Routed to a queue another node serves (`unserved`): it does not get the message, so no
    // confirm says so.
    const { targets, unserved } = this.broker.route(
      session.vhost,
      p.exchange,
      keys,
      props.headers ?? undefined,
    );

    if (targets.length === 0 && unserved) {
      if (seq !== 0) this.settleConfirm(seq, 'nack');
      return;
    }
    if (targets.length === 0) {
      if (p.mandatory) counters.unroutableReturned++;
      else counters.unroutableDropped++;
      if (p.mandatory) {
        this.output.returned({
          replyCode: Code.NO_ROUTE,
          replyText: 'NO_ROUTE',
          exchange: p.exchange,
          routingKey: p.routingKey,
          properties: sender.properties,
          body: p.body,
        });
      }
      if (seq !== 0) this.settleConfirm(seq, 'ack');
      return;
    }

    counters.routed++;
    const message: StoredMessage = {
      exchange: p.exchange,
      routingKey: p.routingKey,
      properties: sender.properties,
      body: p.body,
      bcc: sender.bcc,
    };
    if (seq === 0) {
      for (const queue of targets)
        queue.enqueue(message, ttl).catch((err: unknown) => this.enqueueFailed(queue, err));
      return;
    }
    if (targets.length === 1 && !unserved) {
      (targets[0] as QueueHandle).enqueue(message, ttl).then(
        (r) => this.settleConfirm(seq, r.type === 'rejected' ? 'nack' : 'ack'),
        (err: unknown) => {
          this.enqueueFailed(targets[0] as QueueHandle, err);
          this.settleConfirm(seq, 'nack');
        },
      );
      return;
    }
    let remaining = targets.length;
    let refused = unserved;
    for (const queue of targets) {
      queue.enqueue(message, ttl).then(
        (r) => {
          if (r.type === 'rejected') refused = true;
          remaining -= 1;
          if (remaining === 0) this.settleConfirm(seq, refused ? 'nack' : 'ack');
        },
        (err: unknown) => {
          this.enqueueFailed(queue, err);
          refused = true;
          remaining -= 1;
          if (remaining === 0) this.settleConfirm(seq, 'nack');
        },
      );
    }
  }

  private enqueueFailed(queue: QueueHandle, err: unknown): void {
    this.logger.warn({ queue: queue.name, err }, 'enqueue failed');
  }

  private checkWritable(exchange: string): void {
    const epoch = this.broker.permissionEpoch;
    if (epoch !== this.writableEpoch) {
      this.writable = new Set();
      this.writableEpoch = epoch;
    }
    if (this.writable.has(exchange)) return;
    this.broker.checkPermission(this.session, 'write', 'exchange', exchange);
    this.writable.add(exchange);
  }

  private settleConfirm(seq: number, outcome: 'ack' | 'nack'): void {
    const confirms = this.confirms;
    if (confirms === undefined || this.state !== 'open') return;
    if (outcome === 'ack') this.broker.counters.confirmed++;
    confirms.settle(seq, outcome);
    if (!this.confirmFlushScheduled) {
      this.confirmFlushScheduled = true;
      // Settle everything that commits in this turn first, then send as few confirm frames as possible.
      queueMicrotask(() => {
        this.confirmFlushScheduled = false;
        if (this.state === 'open') confirms.flush();
      });
    }
  }

  // ------------------------------------------------------------------------------------ consume

  private async consume(
    queueName: string,
    requestedTag: string,
    noAck: boolean,
    exclusive: boolean,
    args: FieldTable | undefined,
  ): Promise<void> {
    const queue = this.broker.queueForUse(this.session, queueName, 'read');
    if (this.globalPrefetch > 0) {
      // RabbitMQ's answer for a quorum queue, word for word (clients such as Celery know it).
      throw new ConnectionError(
        Code.NOT_IMPLEMENTED,
        `queue '${queue.name}' in vhost '${queue.vhost}' does not support global qos`,
      );
    }
    const tag = requestedTag === '' ? this.broker.generateName('amq.ctag-') : requestedTag;
    if (this.consumers.has(tag)) {
      throw new ConnectionError(Code.NOT_ALLOWED, `attempt to reuse consumer tag '${tag}'`);
    }
    const consumer: Consumer<Prepared> = {
      tag,
      queue,
      noAck,
      prefetch: this.prefetch,
      exclusive,
      arguments: args === undefined ? {} : argumentsJson(args),
      pending: [],
    };
    this.consumers.set(tag, consumer);
    this.queuesUsed.add(queue);
    let reply: Awaited<ReturnType<QueueHandle['consume']>>;
    try {
      reply = await queue.consume(this.owner, tag, this.prefetch, noAck, exclusive);
    } catch (err) {
      this.consumers.delete(tag);
      throw err;
    }
    if (reply.type === 'locked') {
      this.consumers.delete(tag);
      throw new ChannelError(Code.ACCESS_REFUSED, reply.text);
    }
    this.reply({ method: 'basic.consume-ok', consumerTag: tag });
    const early = consumer.pending;
    consumer.pending = undefined;
    if (early !== undefined) for (const d of early) this.output.sendDelivery(d);
  }

  private async cancel(tag: string): Promise<void> {
    const consumer = this.consumers.get(tag);
    if (consumer !== undefined) {
      this.consumers.delete(tag);
      await consumer.queue.cancel(this.owner, tag);
      this.broker.consumerCancelled(consumer.queue);
    }
    this.reply({ method: 'basic.cancel-ok', consumerTag: tag });
  }

  /** OwnerSink: a queue delivers one message to one of this channel's consumers. */
  deliver(
    queue: QueueHandle,
    tag: string,
    id: number,
    redelivered: boolean,
    deliveryCount: number,
    message: StoredMessage,
  ): void {
    const consumer = this.consumers.get(tag);
    if (this.state !== 'open' || consumer === undefined) {
      // The consumer is gone; the queue learns through ownerDown / cancel, which return the message.
      return;
    }
    if (!consumer.noAck && this.holds(queue, id, deliveryCount)) return;
    const counters = this.broker.counters;
    if (consumer.noAck) counters.deliveredConsumeAutoAck++;
    else counters.deliveredConsumeManualAck++;
    if (redelivered) counters.redelivered++;
    const deliveryTag = this.nextDeliveryTag++;
    if (!consumer.noAck) this.hold(deliveryTag, { queue, id, deliveryCount });
    // The message's own properties, or a copy with per-delivery ones (x-delivery-count): the
    // output may encode the former once per message (WebSocket's fast path does).
    const properties = this.broker.deliveryProperties(queue, message, deliveryCount);
    const prepared = this.output.prepareDelivery(
      tag,
      deliveryTag,
      // Deliberately broken (test-breaks.ts `redeliver-unflagged`): a redelivery sent unflagged.
      redelivered && !REDELIVER_UNFLAGGED,
      message,
      properties,
    );
    if (consumer.pending !== undefined) consumer.pending.push(prepared);
    else if (REORDER_DELIVERIES) this.sendReordered(prepared);
    else this.output.sendDelivery(prepared);
  }

  /**
   * Deliberately broken (test-breaks.ts `reorder-deliveries`): one delivery in 50 is held back and
   * sent after the next one (or after 100 ms, if none comes), out of queue order and not marked
   * redelivered.
   */
  private sendReordered(delivery: Prepared): void {
    const held = this.heldBack;
    if (held !== undefined) {
      this.heldBack = undefined;
      this.output.sendDelivery(delivery);
      this.output.sendDelivery(held);
      return;
    }
    if (++this.reorderCount % 50 !== 0) {
      this.output.sendDelivery(delivery);
      return;
    }
    this.heldBack = delivery;
    setTimeout(() => {
      if (this.heldBack !== delivery) return;
      this.heldBack = undefined;
      if (this.state === 'open') this.output.sendDelivery(delivery);
    }, 100).unref();
  }

  /**
   * A cluster node came back: if it had counted this node down, the queues it leads dropped this
   * channel's consumers (and returned their unacked messages). Register each consumer again — a
   * no-op for a queue that kept it; one now taken exclusively by another is cancelled.
   */
  reassertConsumers(): void {
    if (this.state !== 'open') return;
    for (const consumer of this.consumers.values()) {
      if (consumer.pending !== undefined) continue; // its basic.consume is still under way
      this.reassert(consumer, REASSERT_FIRST_DELAY_MS);
    }
  }

  /** Register `consumer` again; while its queue has no leader reachable, try again later. */
  private reassert(consumer: Consumer<Prepared>, delay: number): void {
    const { queue, tag } = consumer;
    queue.consume(this.owner, tag, consumer.prefetch, consumer.noAck, consumer.exclusive).then(
      (reply) => {
        if (reply.type === 'locked') this.consumerCancelled(queue, tag);
      },
      (err: unknown) => {
        if (this.state !== 'open' || this.consumers.get(tag) !== consumer || !this.broker.isCurrent(queue))
          return;
        this.logger.info({ err, queue: queue.name, delay }, 'consumer not registered again yet: retrying');
        setTimeout(() => {
          if (this.state === 'open' && this.consumers.get(tag) === consumer) {
            this.reassert(consumer, Math.min(delay * 2, REASSERT_MAX_DELAY_MS));
          }
        }, delay).unref();
      },
    );
  }

  /** OwnerSink: the queue removed one of this channel's consumers (queue deleted). */
  consumerCancelled(_queue: QueueHandle, tag: string): void {
    if (!this.consumers.delete(tag) || this.state !== 'open') return;
    this.output.cancelled(tag);
  }

  // ------------------------------------------------------------------------------------ get

  private async get(queueName: string, noAck: boolean): Promise<void> {
    const queue = this.broker.queueForUse(this.session, queueName, 'read');
    this.queuesUsed.add(queue);
    const got = await queue.get(this.owner, noAck);
    const counters = this.broker.counters;
    if (got === undefined) {
      counters.getEmpty++;
      this.reply({ method: 'basic.get-empty' });
      return;
    }
    if (noAck) counters.deliveredGetAutoAck++;
    else counters.deliveredGetManualAck++;
    if (got.redelivered) counters.redelivered++;
    const deliveryTag = this.nextDeliveryTag++;
    if (!noAck) this.hold(deliveryTag, { queue, id: got.id, deliveryCount: got.deliveryCount });
    this.reply({
      method: 'basic.get-ok',
      deliveryTag,
      redelivered: got.redelivered,
      exchange: got.message.exchange,
      routingKey: got.message.routingKey,
      messageCount: got.messageCount,
      properties: this.broker.deliveryProperties(queue, got.message, got.deliveryCount),
      body: got.message.body,
    });
  }

  // ------------------------------------------------------------------------------------ ack / nack

  /**
   * Whether this channel holds message `id` of `queue` unacked from a delivery at least as recent
   * as one with `deliveryCount`: then a delivery of it is a repeat of one the client has (the queue
   * cannot deliver a message it has checked out to this channel again before it came back, and it
   * raises the count every time one comes back). A higher count is a new delivery: the queue gave
   * this channel up meanwhile (its node was counted down), took the message back and delivered it
   * again; the client must get it, and the tag it held stays valid.
   */
  private holds(queue: QueueHandle, id: number, deliveryCount: number): boolean {
    const settled = this.settledIds.get(queue.groupId)?.get(id);
    if (settled !== undefined && settled >= deliveryCount) return true;
    const tag = this.heldIds.get(queue.groupId)?.get(id);
    if (tag === undefined) return false;
    const held = this.unacked.get(tag);
    return held !== undefined && held.deliveryCount >= deliveryCount;
  }

  private hold(deliveryTag: number, u: Unacked): void {
    this.unacked.set(deliveryTag, u);
    let ids = this.heldIds.get(u.queue.groupId);
    if (ids === undefined) {
      ids = new Map();
      this.heldIds.set(u.queue.groupId, ids);
    }
    ids.set(u.id, deliveryTag);
  }

  /** `deliveryTag` is acked, nacked or recovered: the channel no longer holds it. */
  private unhold(deliveryTag: number, u: Unacked): void {
    this.unacked.delete(deliveryTag);
    let settled = this.settledIds.get(u.queue.groupId);
    if (settled === undefined) {
      settled = new SettledMemory(2 * SETTLED_REMEMBERED);
      this.settledIds.set(u.queue.groupId, settled);
    }
    settled.remember(u.id, u.deliveryCount);
    const ids = this.heldIds.get(u.queue.groupId);
    if (ids === undefined || ids.get(u.id) !== deliveryTag) return;
    ids.delete(u.id);
    if (ids.size === 0) this.heldIds.delete(u.queue.groupId);
  }

  /** Collect the unacked entries a (multiple) ack/nack covers, grouped by queue. */
  private take(deliveryTag: number, multiple: boolean): Map<QueueHandle, number[]> {
    const byQueue = new Map<QueueHandle, number[]>();
    const add = (u: Unacked): void => {
      const ids = byQueue.get(u.queue);
      if (ids === undefined) byQueue.set(u.queue, [u.id]);
      else ids.push(u.id);
    };
    if (multiple) {
      // deliveryTag 0 with multiple means "everything outstanding" (amqplib's ackAll/nackAll).
      const upTo = deliveryTag === 0 ? Number.POSITIVE_INFINITY : deliveryTag;
      for (const [tag, u] of this.unacked) {
        if (tag > upTo) break;
        this.unhold(tag, u);
        add(u);
      }
      if (byQueue.size === 0 && deliveryTag !== 0 && deliveryTag >= this.nextDeliveryTag) {
        throw preconditionFailed(`unknown delivery tag ${deliveryTag}`);
      }
      return byQueue;
    }
    add(this.takeOne(deliveryTag));
    return byQueue;
  }

  /** The unacked entry of one delivery tag, no longer held (406 for a tag it does not hold). */
  private takeOne(deliveryTag: number): Unacked {
    const u = this.unacked.get(deliveryTag);
    if (u === undefined) throw preconditionFailed(`unknown delivery tag ${deliveryTag}`);
    this.unhold(deliveryTag, u);
    return u;
  }

  private ack(deliveryTag: number, multiple: boolean): void {
    if (!multiple) {
      // The common case (one ack per message) without a Map, a closure and an array per ack.
      const u = this.takeOne(deliveryTag);
      this.broker.counters.acknowledged++;
      this.addOutcome('settle', u.queue, u.id);
      return;
    }
    const byQueue = this.take(deliveryTag, multiple);
    for (const ids of byQueue.values()) this.broker.counters.acknowledged += ids.length;
    this.addOutcomes('settle', byQueue);
  }

  private nack(deliveryTag: number, multiple: boolean, requeue: boolean): void {
    const kind = requeue ? 'return' : 'discard';
    if (!multiple) {
      const u = this.takeOne(deliveryTag);
      this.addOutcome(kind, u.queue, u.id);
      return;
    }
    this.addOutcomes(kind, this.take(deliveryTag, multiple));
  }

  /**
   * This turn's outcomes of `kind`, to add to; a different kind queued first is proposed now
   * (order kept).
   */
  private outcomesOf(kind: OutcomeKind): Map<QueueHandle, number[]> {
    if (this.outcomes !== undefined && this.outcomeKind !== kind) this.flushOutcomes();
    let outcomes = this.outcomes;
    if (outcomes === undefined) {
      outcomes = new Map();
      this.outcomes = outcomes;
      this.outcomeKind = kind;
      queueMicrotask(this.flushOutcomes);
    }
    return outcomes;
  }

  /** Queue one message's ack/nack for the end of the turn. */
  private addOutcome(kind: OutcomeKind, queue: QueueHandle, id: number): void {
    const outcomes = this.outcomesOf(kind);
    const queued = outcomes.get(queue);
    if (queued === undefined) outcomes.set(queue, [id]);
    else queued.push(id);
  }

  /** Queue this turn's acks/nacks. */
  private addOutcomes(kind: OutcomeKind, byQueue: Map<QueueHandle, number[]>): void {
    const outcomes = this.outcomesOf(kind);
    for (const [queue, ids] of byQueue) {
      const queued = outcomes.get(queue);
      if (queued === undefined) outcomes.set(queue, ids);
      else for (const id of ids) queued.push(id);
    }
  }

  private readonly flushOutcomes = (): void => {
    const outcomes = this.outcomes;
    if (outcomes === undefined) return;
    this.outcomes = undefined;
    const kind = this.outcomeKind;
    for (const [queue, ids] of outcomes) {
      const done =
        kind === 'settle'
          ? queue.settle(this.owner, ids)
          : kind === 'discard'
            ? queue.discard(this.owner, ids)
            : queue.returnMessages(this.owner, ids);
      done.catch((err: unknown) => this.outcomeFailed(kind, queue, err));
    }
  };

  /**
   * An ack or nack the queue never took (its leader unreachable past the forwarding deadline): the
   * messages would stay checked out to this channel, so the channel closes with the error and the
   * queue returns them once it hears the owner is gone.
   */
  private outcomeFailed(kind: OutcomeKind, queue: QueueHandle, err: unknown): void {
    if (this.state !== 'open') return;
    // The queue was deleted meanwhile: its messages are gone, the ack is moot.
    if (!this.broker.isCurrent(queue)) {
      this.logger.debug({ err, queue: queue.name }, `${kind} for a deleted queue ignored`);
      return;
    }
    this.logger.warn({ err, queue: queue.name }, `${kind} failed: closing the channel`);
    const code = err instanceof ChannelError ? err.code : Code.INTERNAL_ERROR;
    const text = err instanceof Error ? err.message : String(err);
    this.closeWithError(
      code,
      `${kind === 'settle' ? 'ack' : 'nack'} not taken by queue '${queue.name}': ${text}`,
      kind === 'settle' ? 'basic.ack' : 'basic.nack',
    );
  }

  /** basic.recover: every unacked message of this channel goes back to its queue, redelivered. */
  private async recover(): Promise<void> {
    const byQueue = this.take(0, true);
    await Promise.all([...byQueue].map(([queue, ids]) => queue.returnMessages(this.owner, ids)));
    this.reply({ method: 'basic.recover-ok' });
  }

  // ------------------------------------------------------------------------------------ close

  /** Close on a channel error: tell the client, release everything, wait for close-ok. */
  closeWithError(code: number, text: string, failingMethod: string): void {
    if (this.state !== 'open') return;
    this.logger.info({ channel: this.number, code, text }, 'closing channel on error');
    this.output.close(code, text, failingMethod);
    this.state = 'closing';
    void this.release();
  }

  /**
   * close-ok goes out once the channel's queues have taken back its unacked messages, so a client
   * that closes a channel and then looks at a queue sees them ready again (not still checked out).
   */
  private closeByClient(): Promise<void> {
    this.state = 'closing';
    return this.release().then(() => {
      this.output.reply(CLOSE_OK);
      this.finishClose();
    });
  }

  private finishClose(): void {
    this.state = 'closed';
    this.output.closed();
  }

  /** The connection is gone: release without sending anything. */
  abandon(): void {
    if (this.state === 'closed') return;
    void this.release();
    this.state = 'closed';
  }

  /**
   * Hand every consumer and unacked message back to its queue (unacked → ready, redelivered).
   * Resolves once every queue has applied that (failures are logged, never thrown).
   */
  private release(): Promise<void> {
    this.flushOutcomes(); // acks already taken go before the ownerDown that returns the rest
    this.backlog = [];
    const consumers = [...this.consumers.values()];
    this.consumers.clear();
    this.unacked.clear();
    this.heldIds.clear();
    this.settledIds.clear();
    const released: Promise<void>[] = [];
    for (const queue of this.queuesUsed) {
      released.push(
        queue.ownerDown(this.owner).then(
          () => {
            if (consumers.some((c) => c.queue === queue)) this.broker.consumerCancelled(queue);
          },
          (err: unknown) => this.logger.debug({ err, queue: queue.name }, 'ownerDown failed'),
        ),
      );
    }
    this.queuesUsed.clear();
    return Promise.all(released).then(() => undefined);
  }
}
