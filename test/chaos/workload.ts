// The workload, through the SDK as an application would use it: every client process (a publisher
// or a consumer) has its own recovering connection, starting at a different node, and records each
// operation in the history.
//
//   chaos.work.N   publishers with confirms → one consumer acking each, except that it nacks one
//                  message in 25 back to the queue (requeue=true) the first time it sees it: every
//                  run has redeliveries, not only those a fault happens to cause
//   chaos.rej      one publisher marks each message ack or reject → one consumer acks or nacks
//                  (requeue=false) it → at-least-once dead-lettering via chaos.dlx → chaos.rej.dlq
//   chaos.ttl      one publisher, no consumer, x-message-ttl → expired, at-least-once → chaos.ttl.dlq
//   chaos.*.dlq    one consumer each, acking and recording x-death
//
// Queues are declared from different nodes so that their leaders (the declaring node leads) spread.
//
// The deep-backlog workload (`--workload backlog`) has the same publishers and NO consumers while
// the faults run: every queue and its DLQ grows deep (tens of thousands), so faults meet replicas
// holding a large state (snapshots, catch-up of a restarted or new replica). The consumers start at
// the drain, which empties every queue and is checked by id like any other run.

import type { Channel, ConfirmChannel, Connection, ConsumeMessage, RecoveringConnection } from '@styx/client';
import * as amqp from '@styx/client';
import type { CheckTopology } from './checkers.ts';
import type { ChaosCluster } from './cluster.ts';
import type { DeathRecord, History, Intent, OpInput } from './history.ts';
import { messageId } from './history.ts';
import type { Random } from './random.ts';

export const DLX = 'chaos.dlx';
export const WORK_QUEUES = ['chaos.work.1', 'chaos.work.2'] as const;
export const REJECT_QUEUE = 'chaos.rej';
export const TTL_QUEUE = 'chaos.ttl';
export const REJECT_DLQ = 'chaos.rej.dlq';
export const TTL_DLQ = 'chaos.ttl.dlq';
/** Every queue of the workload (the nemesis aims leader faults at these). */
export const ALL_QUEUES = [...WORK_QUEUES, REJECT_QUEUE, TTL_QUEUE, REJECT_DLQ, TTL_DLQ];
const TTL_MS = 1_000;

export const TOPOLOGY: CheckTopology = {
  deadLetterQueues: { [REJECT_QUEUE]: REJECT_DLQ, [TTL_QUEUE]: TTL_DLQ },
  orderedQueues: [...WORK_QUEUES, REJECT_QUEUE],
};

/** The options the workload's connections use: quick to notice a dead node, patient to come back. */
const SOCKET = { heartbeat: 5, timeout: 3_000 };
const RECOVER = { minDelayMs: 100, maxDelayMs: 2_000, maxAttempts: Number.POSITIVE_INFINITY };
/**
 * One message in this many on a work queue is meant to be requeued once (Intent 'requeue'): the
 * redelivery checker then has redeliveries to check in every run, whatever the faults did.
 */
const REQUEUE_EVERY = 25;

/** A setup stuck on a node cut off from the queue's leader gives up and tries the next node. */
const SETUP_TIMEOUT_MS = 10_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The URLs a client tries, in order, and the node each names. */
export interface Route {
  readonly urls: string[];
  readonly names: string[];
}

/** A client process: one recovering connection and its history entries. */
abstract class ClientProcess {
  readonly name: string;
  protected readonly history: History;
  protected connection: RecoveringConnection | undefined;
  readonly #urls: string[];
  /** The node each URL names, for the history. */
  readonly #names: string[];
  #closing = false;

  constructor(name: string, route: Route, history: History) {
    this.name = name;
    this.#urls = route.urls;
    this.#names = route.names;
    this.history = history;
  }

  protected abstract setUp(connection: Connection, abandoned: AbortSignal): Promise<void>;
  protected abstract lost(): void;

  async open(): Promise<void> {
    this.connection = await amqp.connect(this.#urls, {
      ...SOCKET,
      recover: {
        ...RECOVER,
        setup: async (c) => {
          // A setup that timed out may still finish later, on a connection already given up:
          // the signal tells it not to install what it made.
          const abandoned = new AbortController();
          try {
            await withTimeout(this.setUp(c, abandoned.signal), SETUP_TIMEOUT_MS, `${this.name} setup`);
          } catch (error) {
            abandoned.abort();
            throw error;
          }
        },
      },
    });
    const connected = this.connection;
    this.record({ type: 'info', f: 'connection', value: `connected to ${this.#names[connected.urlIndex]}` });
    this.connection.on('disconnected', (error) => {
      this.lost();
      this.record({ type: 'info', f: 'connection', value: `lost: ${error.message}` });
    });
    this.connection.on('recovered', (_c, index) =>
      this.record({ type: 'info', f: 'connection', value: `recovered on ${this.#names[index]}` }),
    );
    this.connection.on('close', (error) => {
      if (error !== undefined)
        this.record({ type: 'info', f: 'connection', value: `gave up: ${error.message}` });
    });
  }

  async close(): Promise<void> {
    this.#closing = true;
    await this.connection?.close().catch(() => undefined);
  }

  /**
   * Keeps a channel's errors in the history (an 'error' with no listener would throw) and, when the
   * server closes the channel but the connection lives on, sets up again on that connection: the
   * SDK's recovery only starts after a lost connection.
   */
  protected watch(channel: Channel, closed: () => void): void {
    channel.on('error', (error) =>
      this.record({ type: 'info', f: 'connection', value: `channel error: ${error.message}` }),
    );
    channel.on('close', () => {
      closed();
      this.setUpAgain();
    });
  }

  /** Sets up again on the live connection in a moment, unless recovery replaces it meanwhile. */
  protected setUpAgain(): void {
    const live = this.connection?.connection;
    if (live === null || live === undefined || this.#closing) return;
    setTimeout(() => {
      if (this.connection?.connection !== live || this.#closing) return; // recovery took over
      this.setUp(live, new AbortController().signal).catch((error: unknown) =>
        this.record({ type: 'info', f: 'connection', value: `channel setup failed: ${errorText(error)}` }),
      );
    }, 500);
  }

  protected record(op: Omit<OpInput, 'process'>): void {
    this.history.append({ ...op, process: this.name });
  }
}

export class Publisher extends ClientProcess {
  readonly queue: string;
  #channel: ConfirmChannel | undefined;
  #seq = 0;
  /** How many channels this publisher has had (see Op.channel). */
  #channelNumber = 0;
  #stopped = false;
  #loop: Promise<void> | undefined;
  readonly #pending = new Map<string, Intent>();
  readonly #intent: (seq: number) => Intent;
  readonly #ratePerSecond: number;
  readonly #window: number;
  #wake: (() => void) | undefined;

  constructor(
    name: string,
    route: Route,
    history: History,
    queue: string,
    options: { intent: (seq: number) => Intent; ratePerSecond: number; window?: number },
  ) {
    super(name, route, history);
    this.queue = queue;
    this.#intent = options.intent;
    this.#ratePerSecond = options.ratePerSecond;
    this.#window = options.window ?? 50;
  }

  protected async setUp(connection: Connection, abandoned: AbortSignal): Promise<void> {
    const channel = await connection.createConfirmChannel();
    if (abandoned.aborted) return;
    this.watch(channel, () => {
      if (this.#channel === channel) this.#channel = undefined;
    });
    this.#channel = channel;
    this.#channelNumber++;
    this.#wake?.();
  }

  protected lost(): void {
    this.#channel = undefined;
  }

  start(): void {
    this.#loop = this.#run();
  }

  /** Stops publishing; waits up to `graceMs` for outstanding confirms, then records them unknown. */
  async stop(graceMs: number): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    const deadline = Date.now() + graceMs;
    while (this.#pending.size > 0 && Date.now() < deadline) await sleep(100);
    for (const [id, intent] of this.#pending) this.#outcome('unknown', id, intent, 'no confirm by the end');
    this.#pending.clear();
  }

  async #run(): Promise<void> {
    // Paced to a rate: a burst after an outage would measure the backlog, not the recovery.
    let base = Date.now();
    let sentSinceBase = 0;
    while (!this.#stopped) {
      const channel = this.#channel;
      if (channel === undefined || this.#pending.size >= this.#window) {
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
          setTimeout(resolve, 50);
        });
        continue;
      }
      const due = base + (sentSinceBase * 1000) / this.#ratePerSecond;
      const now = Date.now();
      if (due > now) {
        await sleep(due - now);
        continue;
      }
      if (now - due > 1_000) {
        base = now;
        sentSinceBase = 0;
      }
      sentSinceBase++;
      this.#publish(channel);
    }
  }

  #publish(channel: ConfirmChannel): void {
    const seq = this.#seq++;
    const id = messageId(this.name, seq);
    const intent = this.#intent(seq);
    this.record({
      type: 'invoke',
      f: 'publish',
      queue: this.queue,
      id,
      intent,
      channel: this.#channelNumber,
    });
    this.#pending.set(id, intent);
    const body = Buffer.from(JSON.stringify({ id, intent }));
    try {
      channel.sendToQueue(this.queue, body, { persistent: true, messageId: id }, (error) => {
        if (!this.#pending.delete(id)) return; // already recorded unknown at stop
        if (error === null || error === undefined) this.#outcome('ok', id, intent);
        else if (error instanceof amqp.ConfirmError && error.reason === 'nacked')
          this.#outcome('fail', id, intent, 'nacked');
        // The connection went before the confirm: the message may or may not be in the queue.
        else this.#outcome('unknown', id, intent, errorText(error));
        this.#wake?.();
      });
    } catch (error) {
      // Thrown before anything was sent (the channel had closed): certainly not published. Wait
      // for the recovery's new channel rather than failing every message until it comes.
      this.#pending.delete(id);
      if (this.#channel === channel) this.#channel = undefined;
      this.#outcome('fail', id, intent, errorText(error));
    }
  }

  /** How a publish ended: confirmed, failed (nacked or never sent), or unknown. */
  #outcome(type: 'ok' | 'fail' | 'unknown', id: string, intent: Intent, value?: string): void {
    this.record({
      type,
      f: 'publish',
      queue: this.queue,
      id,
      intent,
      ...(value === undefined ? {} : { value }),
    });
  }
}

/**
 * Consumes one queue, acking each message, nacking (requeue=false) those meant to be rejected, and
 * nacking back (requeue=true) once those meant to be requeued.
 */
export class Consumer extends ClientProcess {
  readonly queue: string;
  #channel: Channel | undefined;
  #lastDelivery = Date.now();
  readonly #prefetch: number;
  readonly #rejects: boolean;
  /**
   * Ids this consumer has nacked back: the next delivery of one is acked. Remembered here, not
   * read from the redelivered flag, so a broker that drops the flag is caught by the redelivery
   * checker instead of looping the message forever.
   */
  readonly #requeued = new Set<string>();

  constructor(name: string, route: Route, history: History, queue: string, options: { rejects: boolean }) {
    super(name, route, history);
    this.queue = queue;
    this.#rejects = options.rejects;
    this.#prefetch = 50;
  }

  /** Milliseconds since the last delivery. */
  idleMs(): number {
    return Date.now() - this.#lastDelivery;
  }

  protected async setUp(connection: Connection, abandoned: AbortSignal): Promise<void> {
    const channel = await connection.createChannel();
    await channel.prefetch(this.#prefetch);
    await channel.consume(this.queue, (message) => {
      if (message !== null) {
        this.#deliver(channel, message);
        return;
      }
      // The server cancelled the consumer (basic.cancel): recorded, then consumed again on a new
      // channel, as an application would.
      this.record({
        type: 'info',
        f: 'connection',
        value: `consumer cancelled by the server on ${this.queue}`,
      });
      if (this.#channel === channel) this.#channel = undefined;
      channel.close().catch(() => undefined);
    });
    if (abandoned.aborted) return;
    this.watch(channel, () => {
      if (this.#channel === channel) this.#channel = undefined;
    });
    this.#channel = channel;
  }

  protected lost(): void {
    this.#channel = undefined;
  }

  #deliver(channel: Channel, message: ConsumeMessage): void {
    this.#lastDelivery = Date.now();
    let id = message.properties.messageId;
    let intent: Intent | undefined;
    try {
      const body = JSON.parse(message.content.toString()) as { id?: string; intent?: Intent };
      id ??= body.id;
      intent = body.intent;
    } catch {
      // Not ours: recorded with whatever id it carries; the checker calls it unexpected.
    }
    const headers = message.properties.headers;
    this.record({
      type: 'ok',
      f: 'deliver',
      queue: this.queue,
      id: id ?? '(no id)',
      redelivered: message.fields.redelivered,
      ...(this.queue.endsWith('.dlq') ? { death: deathOf(headers) } : {}),
    });
    const settle =
      this.#rejects && intent === 'reject'
        ? 'reject'
        : intent === 'requeue' && id !== undefined && !this.#requeued.has(id)
          ? 'requeue'
          : 'ack';
    try {
      if (settle === 'ack') channel.ack(message);
      else channel.nack(message, false, settle === 'requeue');
      if (settle === 'requeue') this.#requeued.add(id as string);
      this.record({ type: 'ok', f: settle, queue: this.queue, id: id ?? '(no id)' });
    } catch (error) {
      // The channel closed under the delivery: the message goes back to the queue, redelivered.
      this.record({
        type: 'fail',
        f: settle,
        queue: this.queue,
        id: id ?? '(no id)',
        value: errorText(error),
      });
    }
  }

  get channelOpen(): boolean {
    return this.#channel !== undefined;
  }
}

/** The first x-death entry and the first-death headers of a dead-lettered message. */
export function deathOf(headers: Record<string, unknown> | undefined): DeathRecord | null {
  const deaths = headers?.['x-death'];
  if (!Array.isArray(deaths)) return null;
  const first = (deaths[0] ?? {}) as Record<string, unknown>;
  return {
    queue: first.queue,
    reason: first.reason,
    count: first.count,
    exchange: first.exchange,
    routingKeys: first['routing-keys'],
    firstQueue: headers?.['x-first-death-queue'],
    firstReason: headers?.['x-first-death-reason'],
    entries: deaths.length,
  };
}

export const WORKLOADS = ['steady', 'backlog'] as const;
export type WorkloadKind = (typeof WORKLOADS)[number];

export interface WorkloadOptions {
  /** Messages per second over all publishers. */
  readonly ratePerSecond: number;
  readonly random: Random;
  /** steady (default): consumers keep every queue shallow; backlog: consumers only at the drain. */
  readonly kind?: WorkloadKind;
}

export class Workload {
  readonly publishers: Publisher[] = [];
  readonly consumers: Consumer[] = [];
  readonly #cluster: ChaosCluster;
  readonly #history: History;
  readonly #options: WorkloadOptions;

  constructor(cluster: ChaosCluster, history: History, options: WorkloadOptions) {
    this.#cluster = cluster;
    this.#history = history;
    this.#options = options;
  }

  /** Declares the exchanges and queues, each queue from another node so leaders spread. */
  async declare(): Promise<void> {
    const size = this.#cluster.nodes.length;
    const atLeastOnce = (key: string, extra: Record<string, unknown> = {}) => ({
      'x-dead-letter-exchange': DLX,
      'x-dead-letter-routing-key': key,
      'x-dead-letter-strategy': 'at-least-once',
      'x-overflow': 'reject-publish',
      ...extra,
    });
    const queues: [string, Record<string, unknown>][] = [
      [WORK_QUEUES[0], {}],
      [WORK_QUEUES[1], {}],
      [REJECT_QUEUE, atLeastOnce('rej')],
      [TTL_QUEUE, atLeastOnce('ttl', { 'x-message-ttl': TTL_MS })],
      [REJECT_DLQ, {}],
      [TTL_DLQ, {}],
    ];
    for (const [i, [queue, args]] of queues.entries()) {
      const connection = await amqp.connect(this.#cluster.urls((i % size) + 1).urls[0] as string, SOCKET);
      try {
        const channel = await connection.createChannel();
        if (i === 0) await channel.assertExchange(DLX, 'direct', { durable: true });
        await channel.assertQueue(queue, { durable: true, arguments: args });
        if (queue === REJECT_DLQ) await channel.bindQueue(queue, DLX, 'rej');
        if (queue === TTL_DLQ) await channel.bindQueue(queue, DLX, 'ttl');
      } finally {
        await connection.close().catch(() => undefined);
      }
    }
  }

  /** Opens every client process and starts publishing. */
  async start(): Promise<void> {
    const size = this.#cluster.nodes.length;
    let next = 0;
    const urls = () => this.#cluster.urls((next++ % size) + 1);
    const history = this.#history;
    for (const queue of [...WORK_QUEUES, REJECT_QUEUE, REJECT_DLQ, TTL_DLQ])
      this.consumers.push(
        new Consumer(`c-${queue.replace('chaos.', '')}`, urls(), history, queue, {
          rejects: queue === REJECT_QUEUE,
        }),
      );
    const specs: [string, string, (seq: number) => Intent][] = [];
    for (const [q, queue] of WORK_QUEUES.entries())
      for (const who of ['a', 'b'])
        specs.push([
          `p-work${q + 1}-${who}`,
          queue,
          (seq) => (seq % REQUEUE_EVERY === REQUEUE_EVERY - 1 ? 'requeue' : 'ack'),
        ]);
    // Whether each message of the reject publisher is meant to be rejected: fixed by the seed.
    const rejects = this.#options.random.fork();
    const marks: Intent[] = [];
    specs.push([
      'p-rej',
      REJECT_QUEUE,
      (seq) => {
        while (marks.length <= seq) marks.push(rejects.chance(0.5) ? 'reject' : 'ack');
        return marks[seq] as Intent;
      },
    ]);
    specs.push(['p-ttl', TTL_QUEUE, () => 'expire']);
    const ratePerSecond = this.#options.ratePerSecond / specs.length;
    for (const [name, queue, intent] of specs)
      this.publishers.push(new Publisher(name, urls(), history, queue, { intent, ratePerSecond }));
    const backlog = this.#options.kind === 'backlog';
    await Promise.all([...(backlog ? [] : this.consumers), ...this.publishers].map((p) => p.open()));
    for (const publisher of this.publishers) publisher.start();
  }

  /** The deep-backlog workload's consumers, which start at the drain (a no-op otherwise). */
  async startConsumers(timeoutMs = 120_000): Promise<void> {
    if (this.#options.kind !== 'backlog') return;
    // Right after the last heal a queue's leader may be slow to take a consumer (a deep queue just
    // taken over): a first setup that times out is recorded and tried again, not a harness failure.
    const deadline = Date.now() + timeoutMs;
    await Promise.all(
      this.consumers.map(async (consumer) => {
        for (;;) {
          try {
            await consumer.open();
            return;
          } catch (error) {
            this.#history.append({
              type: 'info',
              process: consumer.name,
              f: 'connection',
              value: `first setup failed: ${errorText(error)}`,
            });
            if (Date.now() > deadline) throw error;
            await sleep(1_000);
          }
        }
      }),
    );
  }

  /** Messages in every queue now (ready, unacked, pending dead letters), as their leaders say. */
  async depthTotal(): Promise<number> {
    return (await this.#depths()).reduce((sum, d) => sum + Math.max(0, d.total), 0);
  }

  async stopPublishers(graceMs: number): Promise<void> {
    await Promise.all(this.publishers.map((p) => p.stop(graceMs)));
  }

  /**
   * Waits until every queue is empty (nothing ready, unacked or waiting for a dead-letter hand-off,
   * as the queue's leader reports it) and no consumer got anything for `quietMs`; records each
   * queue's final depth. Returns whether the queues drained within `timeoutMs`.
   */
  async drain(timeoutMs: number, quietMs = 3_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    let drained = false;
    while (Date.now() < deadline) {
      const quiet = this.consumers.every((c) => c.idleMs() > quietMs);
      if (quiet && (await this.#depths()).every((d) => d.total === 0)) {
        drained = true;
        break;
      }
      await sleep(500);
    }
    for (const depth of await this.#depths())
      this.#history.append({
        type: 'info',
        process: 'harness',
        f: 'depth',
        queue: depth.queue,
        value: depth,
      });
    return drained;
  }

  async close(): Promise<void> {
    await Promise.all([...this.consumers, ...this.publishers].map((p) => p.close()));
  }

  /**
   * The last word on what is still queued: a fresh connection consumes every queue (acking) until
   * it has been quiet for `quietMs`, recording each delivery as process 'drain'. Whatever the
   * workload's consumers did not get (a consumer the broker forgot, say) is then counted as still
   * there at the end rather than lost. Returns how many messages it found.
   */
  async sweep(quietMs = 3_000, timeoutMs = 60_000): Promise<number> {
    const connection = await amqp.connect(this.#cluster.urls(1).urls, SOCKET);
    connection.on('error', () => undefined);
    let found = 0;
    let last = Date.now();
    try {
      const channel = await connection.createChannel();
      channel.on('error', () => undefined);
      await channel.prefetch(200);
      for (const queue of ALL_QUEUES)
        await channel.consume(queue, (message) => {
          if (message === null) return;
          found++;
          last = Date.now();
          const id = message.properties.messageId ?? '(no id)';
          this.#history.append({
            type: 'ok',
            f: 'deliver',
            process: 'drain',
            queue,
            id,
            redelivered: message.fields.redelivered,
            ...(queue.endsWith('.dlq') ? { death: deathOf(message.properties.headers) } : {}),
          });
          channel.ack(message);
          this.#history.append({ type: 'ok', f: 'ack', process: 'drain', queue, id });
        });
      const deadline = Date.now() + timeoutMs;
      while (Date.now() - last < quietMs && Date.now() < deadline) await sleep(250);
    } finally {
      await connection.close().catch(() => undefined);
    }
    return found;
  }

  async #depths(): Promise<
    { queue: string; total: number; ready: number; pendingDeadLetters: number; consumers: number }[]
  > {
    const out = [];
    for (const queue of ALL_QUEUES) {
      let view: Awaited<ReturnType<ChaosCluster['queue']>> | undefined;
      for (const node of this.#cluster.nodes) {
        view = await this.#cluster.queue(node.name, queue).catch(() => undefined);
        if (view !== undefined) break;
      }
      const ready = view?.messages_ready ?? -1;
      const pendingDeadLetters = view?.messages_dead_letter_pending ?? 0;
      // -1: no node answered; counted as not drained.
      const total = view === undefined ? -1 : (view.messages ?? 0) + pendingDeadLetters;
      out.push({ queue, total, ready, pendingDeadLetters, consumers: view?.consumers ?? -1 });
    }
    return out;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
