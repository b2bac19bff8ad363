/**
 * Runs one redrive on the node that owns its record (redrive-jobs.ts starts, resumes and takes
 * them over). Two passes over the dead-letter queue, both through the browse of its leader
 * (broker/queue-browse.ts), which reads messages without taking them:
 *
 * 1. The count: the selected messages (the filter, up to `maxMessages`), and the queue's applied
 *    index as the `bound`: a message enqueued later (its id is its enqueue's log index, so higher)
 *    is not part of this redrive — so one that dies again into the same queue is not moved round
 *    and round. A dry run stops here, having routed each message as it would be now: counts per
 *    destination and per failure reason, and a sample.
 * Both passes page by the browse's `position` (message-browse.ts), a place in the delivery order
 * that no removal moves: the returned messages (a DLQ whose consumers requeued some) are neither
 * skipped nor repeated when the run removes the message its cursor stood on.
 *
 * 2. The move, in batches (as many messages as the rate allows in about a second, at most
 *    `MAX_BATCH`), each batch:
 *    a. publish each message (properties and body unchanged, its `x-death` kept) to its destination,
 *       paced by the rate; it counts as moved only when every queue the destination routes it to
 *       committed it (the enqueue's confirm). No route, a missing exchange, a queue refusing it:
 *       it stays in the dead-letter queue and is counted failed with the reason. Each copy carries
 *       a hand-off id (source `redrive:<id>`, the message's DLQ id) so a target keeps one copy
 *       whatever the retries (the queue machine's dedupe answers `duplicate`, a confirm). A target
 *       queue with no reachable leader for now (or closing) fails nothing: after a pause only the
 *       copies not yet confirmed are sent again, for as long as some copy gets confirmed; after
 *       `stallMs` without any, the batch's open messages are counted failed (per target queue)
 *       and the run ends `failed`;
 *    b. commit the progress to the metadata group: the counts, the cursor (the last id dealt with,
 *       and its position) and the moved ids as `inflight`;
 *    c. remove the moved ids from the dead-letter queue through its log (the queue's `remove`
 *       command: only ready messages, so one a consumer holds meanwhile stays).
 *    A node that fails before (b) left copies in their targets that are not counted and still in
 *    the dead-letter queue: whoever resumes publishes them again (at-least-once: a duplicate, never
 *    a loss). After (b) they count as moved, and a resume removes the `inflight` ids again first
 *    (a no-op for those already removed), so `moved` is exactly what left the queue through this
 *    redrive. A message published to several queues of which one refused it stays, and the others
 *    keep their copy (a duplicate if it is moved again later).
 *
 * Cancel and a deleted dead-letter queue are checked before each batch and before every attempt
 * of a retry (so within one back-off, at most `MAX_RETRY_MS`, plus the attempt in progress): the
 * redrive ends `cancelled` (what the batch in progress got confirmed everywhere is counted and
 * removed first), or `failed` with 'source queue deleted'. Other transient trouble (no leader for
 * the queue or the metadata, a link down) is retried with back-off while the redrive runs; a node
 * that stops its runner (shutdown) leaves the record running, to be resumed. Limits: a message whose body is larger than one browse page
 * (`MAX_BROWSE_BODY_BYTES`) is not moved (failed, with the reason).
 */
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import { ReplyCode } from '@styx/client/wire';
import type { HandOffId } from '@styx/dlx';
import {
  AdmissionQueueFullError,
  BarrierTimeoutError,
  GroupOverloadedError,
  LogClosedError,
  LogNotOpenError,
  NotLeaderError,
  PeerUnreachableError,
} from '@styx/raft';
import { QueueUnavailableError } from '../broker/cluster-queue.ts';
import type { QueueBrowseResult } from '../broker/queue-browse.ts';
import { MAX_BROWSE_BODY_BYTES } from '../broker/queue-browse.ts';
import { ClusterError } from '../cluster/errors.ts';
import { QueueLinkLostError, QueueLinkTimeoutError } from '../cluster/queue-link.ts';
import { ChannelError, Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { RedriveCommand, RedriveRecord, RedriveState } from '../metadata/redrive-types.ts';
import type { MetadataReply, QueueRecord } from '../metadata/types.ts';
import { QueueActorStateError } from '../queue/errors.ts';
import type { BrowsedMessage, BrowsePosition, BrowseRequest } from '../queue/message-browse.ts';
import { MAX_BROWSE_LIMIT } from '../queue/message-browse.ts';
import type { MessageFilter } from '../queue/message-filter.ts';
import { parseFilterJson } from '../queue/message-filter.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { StoredMessage } from '../queue/types.ts';
import type { PacerClock } from './rate-pacer.ts';
import { RatePacer } from './rate-pacer.ts';
import { RedriveTally } from './redrive-tally.ts';
import type { RedriveDestination } from './redrive-target.ts';
import { destinationOf } from './redrive-target.ts';

/** Messages per batch at most (one metadata commit and one removal each). */
export const MAX_BATCH = 256;
/** A batch holds about this much time's worth of messages at the redrive's rate, ms. */
const BATCH_MS = 1000;
/** Back-off between attempts at something that failed for now, ms (doubling up to the max). */
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5000;
/** How long a batch's targets may confirm nothing before the run ends `failed`, ms. */
export const DEFAULT_STALL_MS = 5 * 60_000;
/** How long a dry run keeps trying to read its queue, ms. */
const DRY_RUN_DEADLINE_MS = 30_000;
/** The final error of a redrive whose dead-letter queue was deleted under it. */
export const SOURCE_DELETED = 'source queue deleted';

/** What a runner needs from its node. */
export interface RedriveRunPort {
  readonly selfId: string;
  readonly logger: Logger;
  readonly clock: PacerClock;
  /** The record as this node's metadata replica has it now. */
  record(id: string): RedriveRecord | undefined;
  /** Propose a redrive command to the metadata group: its reply, applied here when it resolves. */
  propose(command: RedriveCommand): Promise<MetadataReply>;
  /** The queue's metadata record, if it exists. */
  queue(vhost: string, name: string): QueueRecord | undefined;
  /** A page of the queue's messages, read on its leader. */
  browse(queue: QueueRecord, request: BrowseRequest): Promise<QueueBrowseResult>;
  /** The queue as a handle (for `remove`), used as `user`: throws when the user may not read it. */
  handle(queue: QueueRecord, user: string): QueueHandle;
  /** The queues a publish to `exchange` with `routingKey` reaches now; undefined: no such exchange. */
  route(
    vhost: string,
    exchange: string,
    routingKey: string,
    headers: FieldTable | undefined,
  ): readonly QueueHandle[] | undefined;
  /** Why `user` may not publish to `exchange` in `vhost`, or undefined when it may. */
  writeRefusal(user: string, vhost: string, exchange: string): string | undefined;
  /** The message's per-message TTL from its `expiration`, ms, if it has a valid one. */
  ttl(properties: BasicProperties): number | undefined;
  /** How long a batch's targets may confirm nothing before the run ends `failed`, ms. */
  readonly stallMs?: number;
}

/** The record is no longer this node's to write (another node took it over, or it ended). */
class RedriveLostError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'RedriveLostError';
  }
}

/** The runner was stopped (the node is shutting down): the record stays running. */
class RedriveStoppedError extends Error {
  constructor() {
    super('stopped');
    this.name = 'RedriveStoppedError';
  }
}

/** A cancel was asked: the run ends `cancelled`. */
class RedriveCancelledError extends Error {
  constructor() {
    super('cancelled');
    this.name = 'RedriveCancelledError';
  }
}

/** The dead-letter queue (this incarnation of it) was deleted: the run ends `failed`. */
class SourceDeletedError extends Error {
  constructor() {
    super(SOURCE_DELETED);
    this.name = 'SourceDeletedError';
  }
}

/** One message's fate: moved to a destination, or left with a reason. */
type Outcome = { readonly moved: RedriveDestination } | { readonly failure: string };

/** A message of the batch in progress: which target queues confirmed its copy so far. */
interface Delivery {
  readonly browsed: BrowsedMessage;
  readonly confirmed: Set<string>;
  paced: boolean;
  outcome: Outcome | undefined;
  /** The last transient trouble: the queue and what it answered. */
  trouble: { readonly queue: string; readonly error: string } | undefined;
}

/** How a batch's delivery ended: every message settled, or stopped with some still open. */
type BatchEnd =
  | { readonly kind: 'settled' }
  | { readonly kind: 'cancelled' }
  | { readonly kind: 'stalled'; readonly error: string };

export class RedriveRunner {
  readonly id: string;
  readonly #port: RedriveRunPort;
  readonly #logger: Logger;
  readonly #stallMs: number;
  #stopped = false;
  /** Moved ids whose removal from the dead-letter queue has not been confirmed yet. */
  #unremoved: readonly number[] = [];

  constructor(port: RedriveRunPort, id: string) {
    this.#port = port;
    this.id = id;
    this.#logger = port.logger.child({ redrive: id });
    this.#stallMs = port.stallMs ?? DEFAULT_STALL_MS;
  }

  /** Stop at the next step without ending the record (it is resumed later, here or elsewhere). */
  stop(): void {
    this.#stopped = true;
  }

  /**
   * A dry run of `record` (not in the metadata group: dry runs are not part of the audit): what
   * would move where now, counted through the same browse as a real run. Throws what the browse
   * throws once it gave up (the queue deleted, no leader for long).
   */
  async plan(record: RedriveRecord): Promise<RedriveTally> {
    const tally = new RedriveTally();
    const dlq = this.#dlq(record);
    const deadline = this.#port.clock.now() + DRY_RUN_DEADLINE_MS;
    await this.#count(record, dlq, parseFilterJson(record.filter), tally, () => {
      if (this.#stopped) throw new RedriveStoppedError();
      this.#dlq(record);
      // Someone waits for the answer: give up rather than keep them waiting.
      if (this.#port.clock.now() > deadline)
        throw new Error(`no leader of queue '${record.queue}' answered for ${DRY_RUN_DEADLINE_MS / 1000} s`);
    });
    return tally;
  }

  /** Run the redrive until it ends, is stopped, or is no longer this node's. */
  async run(): Promise<void> {
    const record = this.#port.record(this.id);
    if (record === undefined || record.state !== 'running' || record.owner !== this.#port.selfId) return;
    // A dry run of a previous build (they were records then) counts again from the start.
    const tally = record.dryRun ? new RedriveTally() : RedriveTally.from(record.progress);
    const guard = (): void => this.#check(record);
    try {
      const filter = parseFilterJson(record.filter);
      const dlq = this.#dlq(record);
      const handle = this.#port.handle(dlq, record.user);
      await this.#remove(handle, record.progress.inflight, this.#removalGuard(record));
      if (tally.total === null || record.dryRun) {
        await this.#count(record, dlq, filter, tally, guard);
        if (record.dryRun) {
          await this.#commit(tally, [], 'done');
          return;
        }
        await this.#commit(tally, [], 'running');
      }
      await this.#move(record, dlq, handle, filter, tally);
    } catch (error) {
      if (error instanceof RedriveStoppedError) return;
      if (error instanceof RedriveLostError) {
        this.#logger.info({ reason: error.message }, 'redrive no longer run here');
        return;
      }
      await this.#end(record, tally, error);
    }
  }

  /** End the record after `error`: `cancelled`, or `failed` with why. */
  async #end(record: RedriveRecord, tally: RedriveTally, error: unknown): Promise<void> {
    let state: RedriveState = 'failed';
    let reason: string | undefined;
    if (error instanceof RedriveCancelledError) state = 'cancelled';
    else if (error instanceof SourceDeletedError || this.#dlqGone(record)) reason = SOURCE_DELETED;
    else reason = error instanceof Error ? error.message : String(error);
    if (state === 'failed') this.#logger.warn({ err: error }, 'redrive failed');
    try {
      // Moved ids whose removal is unconfirmed stay listed: they may still be in the queue.
      await this.#commit(tally, reason === SOURCE_DELETED ? [] : this.#unremoved, state, reason);
    } catch (commitError) {
      if (!(commitError instanceof RedriveStoppedError || commitError instanceof RedriveLostError))
        throw commitError;
    }
  }

  /** The dead-letter queue of this incarnation, or `SourceDeletedError`. */
  #dlq(record: RedriveRecord): QueueRecord {
    const queue = this.#port.queue(record.vhost, record.queue);
    if (queue === undefined || queue.groupId !== record.groupId) throw new SourceDeletedError();
    return queue;
  }

  #dlqGone(record: RedriveRecord): boolean {
    return this.#port.queue(record.vhost, record.queue)?.groupId !== record.groupId;
  }

  /** Throws unless the run may go on: still this node's, not cancelled, its queue still there. */
  #check(record: RedriveRecord): void {
    if (this.#owned().cancelRequested) throw new RedriveCancelledError();
    this.#dlq(record);
  }

  /**
   * What stops the removal of moved messages: not a cancel (they were counted moved, and their
   * copies are in the targets: left in the queue they would be moved twice), only losing the record
   * or the queue.
   */
  #removalGuard(record: RedriveRecord): () => void {
    return () => {
      this.#owned();
      this.#dlq(record);
    };
  }

  /** Remove moved `ids` from the dead-letter queue (ids it no longer holds as ready are left). */
  async #remove(handle: QueueHandle, ids: readonly number[], guard: () => void): Promise<void> {
    if (ids.length === 0) return;
    this.#unremoved = ids;
    await this.#retry('remove moved messages', () => handle.remove(ids), guard);
    this.#unremoved = [];
  }

  // ------------------------------------------------------------------------------ the count

  async #count(
    record: RedriveRecord,
    dlq: QueueRecord,
    filter: MessageFilter,
    tally: RedriveTally,
    guard: () => void,
  ): Promise<void> {
    const cap = record.maxMessages ?? Number.POSITIVE_INFINITY;
    let total = 0;
    let bound: number | undefined;
    let after: number | undefined;
    let position: BrowsePosition | undefined;
    for (;;) {
      const request = { after, position, offset: 0, limit: MAX_BROWSE_LIMIT, bodyBytes: 0, filter };
      const page = await this.#retry('browse the queue', () => this.#port.browse(dlq, request), guard);
      bound ??= page.appliedIndex;
      for (const message of page.messages) {
        if (message.id > bound || total >= cap) continue;
        total++;
        if (record.dryRun) this.#plan(record, message, tally);
      }
      after = page.next;
      position = page.nextPosition;
      // By id the tail is near once past the bound; a position may still be in the returned list.
      const pastBound =
        after !== undefined && after > bound && (position === undefined || position.list === 'ready');
      if (after === undefined || pastBound || total >= cap) break;
    }
    tally.total = total;
    tally.bound = bound;
  }

  /** Where a dry run's message would go now. */
  #plan(record: RedriveRecord, browsed: BrowsedMessage, tally: RedriveTally): void {
    const properties = browsed.message?.properties;
    if (properties === undefined) {
      tally.addFailure(BODY_MISSING);
      return;
    }
    const destination = destinationOf(record.target, properties);
    if (typeof destination === 'string') {
      tally.addFailure(destination);
      tally.addSample({ id: browsed.id, exchange: '', routingKey: '', queues: [], failure: destination });
      return;
    }
    const routed = this.#routeOf(record, destination, properties);
    const queues = typeof routed === 'string' ? [] : routed.map((q) => q.name);
    const failure = typeof routed === 'string' ? routed : null;
    if (failure === null) tally.addTarget(destination.exchange, destination.routingKey);
    else tally.addFailure(failure);
    tally.addSample({ id: browsed.id, ...destination, queues, failure });
  }

  /** The queues `destination` reaches now, or why the message cannot go there. */
  #routeOf(
    record: RedriveRecord,
    destination: RedriveDestination,
    properties: BasicProperties,
  ): readonly QueueHandle[] | string {
    const { exchange, routingKey } = destination;
    const refusal = this.#port.writeRefusal(record.user, record.vhost, exchange);
    if (refusal !== undefined) return refusal;
    const queues = this.#port.route(record.vhost, exchange, routingKey, properties.headers ?? undefined);
    if (queues === undefined) return `no exchange '${exchange}' in vhost '${record.vhost}'`;
    if (queues.length === 0)
      return exchange === ''
        ? `unroutable: no queue '${routingKey}' in vhost '${record.vhost}' (deleted since?)`
        : `unroutable: exchange '${exchange}' routes key '${routingKey}' to no queue`;
    return queues;
  }

  // ------------------------------------------------------------------------------ the move

  async #move(
    record: RedriveRecord,
    dlq: QueueRecord,
    handle: QueueHandle,
    filter: MessageFilter,
    tally: RedriveTally,
  ): Promise<void> {
    const pacer = new RatePacer(record.rate, this.#port.clock);
    const batchSize = pacer.perWindow(BATCH_MS, MAX_BATCH);
    const bound = tally.bound ?? 0;
    const cap = record.maxMessages ?? Number.POSITIVE_INFINITY;
    const guard = (): void => this.#check(record);
    for (;;) {
      guard();
      const budget = Math.min(batchSize, cap - tally.moved - tally.failed);
      // Past the bound in the main FIFO (id order) nothing selected is left; a position in the
      // returned FIFO may still have the main FIFO ahead. Records of older builds have no position.
      const position = tally.position ?? undefined;
      const pastBound =
        tally.cursor !== null &&
        tally.cursor > bound &&
        (position === undefined || position.list === 'ready');
      if (budget <= 0 || pastBound) return this.#commit(tally, [], 'done');
      const request = {
        after: tally.cursor ?? undefined,
        position,
        offset: 0,
        limit: budget,
        bodyBytes: MAX_BROWSE_BODY_BYTES,
        filter,
      };
      const page = await this.#retry('browse the queue', () => this.#port.browse(dlq, request), guard);
      const batch = page.messages.filter((m) => m.id <= bound);
      const deliveries: Delivery[] = batch.map((browsed) => ({
        browsed,
        confirmed: new Set<string>(),
        paced: false,
        outcome: undefined,
        trouble: undefined,
      }));
      const end = await this.#deliver(record, deliveries, pacer, guard);
      if (this.#stopped) throw new RedriveStoppedError();
      // Count what settled. A stalled batch's open messages stay, counted failed with their target's
      // trouble; a cancelled run ends after this batch, so its open ones are simply not counted.
      const moved: number[] = [];
      for (const delivery of deliveries) {
        const { outcome } = delivery;
        if (outcome === undefined) {
          if (end.kind === 'stalled') tally.addFailure(stallReason(delivery, this.#stallMs));
        } else if ('moved' in outcome) {
          tally.moved++;
          tally.addTarget(outcome.moved.exchange, outcome.moved.routingKey);
          moved.push(delivery.browsed.id);
        } else {
          tally.addFailure(outcome.failure);
        }
      }
      const last = page.messages.at(-1);
      tally.cursor = last?.id ?? page.next ?? tally.cursor;
      tally.position = (last === undefined ? page.nextPosition : last.position) ?? null;
      const atTail = page.next === undefined || batch.length < page.messages.length;
      await this.#commit(tally, moved, 'running');
      await this.#remove(handle, moved, this.#removalGuard(record));
      if (end.kind === 'cancelled') throw new RedriveCancelledError();
      if (end.kind === 'stalled') return this.#commit(tally, [], 'failed', end.error);
      if (atTail) return this.#commit(tally, [], 'done');
    }
  }

  /**
   * Publish the batch, paced, until every message settled (moved or failed for good), a cancel or
   * the queue's deletion stops it, or its targets confirmed nothing for `stallMs`. A copy a target
   * could not take for now is sent again after a back-off, to the queues that have not confirmed
   * that message yet only (each carries its hand-off id, so a copy whose confirm was lost is
   * answered `duplicate`, not enqueued twice).
   */
  async #deliver(
    record: RedriveRecord,
    deliveries: readonly Delivery[],
    pacer: RatePacer,
    guard: () => void,
  ): Promise<BatchEnd> {
    let lastProgress = this.#port.clock.now();
    let pause = FIRST_RETRY_MS;
    for (;;) {
      const open = deliveries.filter((d) => d.outcome === undefined);
      if (open.length === 0) return { kind: 'settled' };
      let progressed = false;
      // Slots are taken in order, so the first publishes keep the queue's order.
      await Promise.all(
        open.map(async (delivery) => {
          if (!delivery.paced) {
            await pacer.take();
            delivery.paced = true;
          }
          const before = delivery.confirmed.size;
          await this.#redriveOne(record, delivery);
          if (delivery.outcome !== undefined || delivery.confirmed.size > before) progressed = true;
        }),
      );
      if (this.#stopped) throw new RedriveStoppedError();
      if (deliveries.every((d) => d.outcome !== undefined)) return { kind: 'settled' };
      const now = this.#port.clock.now();
      if (progressed) {
        lastProgress = now;
        pause = FIRST_RETRY_MS;
      } else if (now - lastProgress >= this.#stallMs) {
        const trouble = open.find((d) => d.trouble !== undefined)?.trouble;
        return {
          kind: 'stalled',
          error:
            `no progress for ${Math.round(this.#stallMs / 1000)} s: ` +
            (trouble === undefined ? 'targets did not answer' : `queue '${trouble.queue}': ${trouble.error}`),
        };
      }
      this.#logger.debug('redrive: a target did not answer, sending the unconfirmed copies again');
      try {
        guard();
      } catch (error) {
        if (error instanceof RedriveCancelledError) return { kind: 'cancelled' };
        throw error;
      }
      await this.#port.clock.sleep(pause);
      pause = Math.min(pause * 2, MAX_RETRY_MS);
      try {
        guard();
      } catch (error) {
        if (error instanceof RedriveCancelledError) return { kind: 'cancelled' };
        throw error;
      }
    }
  }

  /**
   * Send one message's copies to the queues of its destination that have not confirmed it yet;
   * settles it moved once every one did, failed when one refuses it for good or it cannot go.
   */
  async #redriveOne(record: RedriveRecord, delivery: Delivery): Promise<void> {
    const { browsed } = delivery;
    const message = browsed.message;
    if (message === undefined) {
      delivery.outcome = { failure: BODY_MISSING };
      return;
    }
    if (message.body.byteLength < browsed.size) {
      delivery.outcome = { failure: `larger than ${MAX_BROWSE_BODY_BYTES} bytes: not moved by a redrive` };
      return;
    }
    const destination = destinationOf(record.target, message.properties);
    if (typeof destination === 'string') {
      delivery.outcome = { failure: destination };
      return;
    }
    const routed = this.#routeOf(record, destination, message.properties);
    if (typeof routed === 'string') {
      delivery.outcome = { failure: routed };
      return;
    }
    const queues = routed.filter((queue) => !delivery.confirmed.has(queue.name));
    const copy: StoredMessage = {
      exchange: destination.exchange,
      routingKey: destination.routingKey,
      properties: message.properties,
      body: message.body,
      bcc: undefined,
    };
    const ttl = this.#port.ttl(message.properties);
    // The target's dedupe keeps one copy per (source, id): horizon 0 promises no order (the
    // returned FIFO is not in id order), so no id is ever taken for a duplicate it is not.
    const handOff: HandOffId = { source: `redrive:${this.id}`, messageId: browsed.id, horizon: 0 };
    const answers = await Promise.allSettled(queues.map((queue) => queue.enqueue(copy, ttl, handOff)));
    for (let i = 0; i < answers.length; i++) {
      const answer = answers[i] as PromiseSettledResult<Awaited<ReturnType<QueueHandle['enqueue']>>>;
      const name = (queues[i] as QueueHandle).name;
      if (answer.status === 'fulfilled') {
        const reply = answer.value;
        if (reply.type === 'ok' || reply.type === 'duplicate') delivery.confirmed.add(name);
        else if (reply.type === 'rejected')
          delivery.outcome = { failure: `refused by queue '${name}': ${reply.reason}` };
        else delivery.trouble = { queue: name, error: `answered ${reply.type}` };
      } else if (isTransient(answer.reason)) {
        // For now (no leader, closing): sent again after a pause, to this queue only.
        delivery.trouble = { queue: name, error: errorText(answer.reason) };
      } else {
        delivery.outcome = { failure: `not confirmed by queue '${name}': ${errorText(answer.reason)}` };
      }
    }
    if (delivery.outcome === undefined && routed.every((queue) => delivery.confirmed.has(queue.name)))
      delivery.outcome = { moved: destination };
  }

  // ------------------------------------------------------------------------------ the record

  /** The record, while it is still this node's to run. */
  #owned(): RedriveRecord {
    if (this.#stopped) throw new RedriveStoppedError();
    const record = this.#port.record(this.id);
    if (record === undefined) throw new RedriveLostError('the record is gone');
    if (record.state !== 'running') throw new RedriveLostError(`it ended (${record.state})`);
    if (record.owner !== this.#port.selfId) throw new RedriveLostError(`node '${record.owner}' runs it now`);
    return record;
  }

  /**
   * Commit the progress (and the state) to the metadata group, trying again while the group has
   * no reachable leader. Refused (not the owner, ended): `RedriveLostError`.
   */
  async #commit(
    tally: RedriveTally,
    inflight: readonly number[],
    state: RedriveState,
    error?: string,
  ): Promise<void> {
    const command: RedriveCommand = {
      type: 'updateRedrive',
      id: this.id,
      owner: this.#port.selfId,
      state,
      progress: tally.progress(inflight),
      ...(error !== undefined ? { error } : {}),
    };
    const reply = await this.#retry('record the progress', () => this.#port.propose(command));
    if (reply.type === 'error') {
      if (reply.code === ReplyCode.NOT_FOUND || reply.code === ReplyCode.PRECONDITION_FAILED)
        throw new RedriveLostError(reply.text);
      throw new Error(`the metadata group refused the progress: ${reply.text}`);
    }
    if (state !== 'running')
      this.#logger.info({ state, moved: tally.moved, failed: tally.failed, error }, 'redrive ended');
  }

  /**
   * `attempt` until it resolves, backing off after each failure. `guard` runs before each attempt
   * and stops the retries by throwing (by default: the record is no longer this node's to run).
   */
  async #retry<T>(
    what: string,
    attempt: () => Promise<T>,
    guard: () => void = () => this.#owned(),
  ): Promise<T> {
    let delay = FIRST_RETRY_MS;
    for (;;) {
      guard();
      try {
        return await attempt();
      } catch (error) {
        if (!isTransient(error)) throw error;
        this.#logger.debug({ err: error }, `redrive: could not ${what} yet, trying again`);
      }
      await this.#port.clock.sleep(delay);
      delay = Math.min(delay * 2, MAX_RETRY_MS);
    }
  }
}

const BODY_MISSING = 'its body is missing on the queue leader (being repaired): not moved';

function errorText(error: unknown): string {
  return String((error as Error | undefined)?.message ?? error);
}

/** Why an open message of a stalled batch stays: its target's last trouble. */
function stallReason(delivery: Delivery, stallMs: number): string {
  const { trouble } = delivery;
  const seconds = Math.round(stallMs / 1000);
  return trouble === undefined
    ? `not confirmed within ${seconds} s`
    : `queue '${trouble.queue}' unavailable for ${seconds} s: ${trouble.error}`;
}

/**
 * Errors worth another attempt: no leader reachable for the queue or the metadata, a link lost or
 * slow, a replica closing or overloaded, a local proposal undecided in time (an AMQP internal
 * error). Anything else (a request out of range, a permission refused, a queue deleted) fails the
 * redrive with its message.
 */
function isTransient(error: unknown): boolean {
  return (
    error instanceof ClusterError ||
    error instanceof NotLeaderError ||
    error instanceof GroupOverloadedError ||
    error instanceof AdmissionQueueFullError ||
    error instanceof BarrierTimeoutError ||
    error instanceof PeerUnreachableError ||
    error instanceof LogClosedError ||
    error instanceof LogNotOpenError ||
    error instanceof QueueUnavailableError ||
    error instanceof QueueLinkLostError ||
    error instanceof QueueLinkTimeoutError ||
    error instanceof QueueActorStateError ||
    ((error instanceof ChannelError || error instanceof ConnectionError) &&
      error.code === Code.INTERNAL_ERROR)
  );
}
