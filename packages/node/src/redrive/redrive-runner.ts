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
 * 2. The move, in batches (as many messages as the rate allows in about a second, at most
 *    `MAX_BATCH`), each batch:
 *    a. publish each message (properties and body unchanged, its `x-death` kept) to its destination,
 *       paced by the rate; it counts as moved only when every queue the destination routes it to
 *       committed it (the enqueue's confirm). No route, a missing exchange, a queue refusing it:
 *       it stays in the dead-letter queue and is counted failed with the reason. A target queue
 *       with no reachable leader for now (or closing, as its node stops) fails nothing: the batch
 *       is tried again after a pause;
 *    b. commit the progress to the metadata group: the counts, the cursor (the last id dealt with)
 *       and the moved ids as `inflight`;
 *    c. remove the moved ids from the dead-letter queue through its log (the queue's `remove`
 *       command: only ready messages, so one a consumer holds meanwhile stays).
 *    A node that fails before (b) left copies in their targets that are not counted and still in
 *    the dead-letter queue: whoever resumes publishes them again (at-least-once: a duplicate, never
 *    a loss). After (b) they count as moved, and a resume removes the `inflight` ids again first
 *    (a no-op for those already removed), so `moved` is exactly what left the queue through this
 *    redrive. A message published to several queues of which one refused it stays, and the others
 *    keep their copy (a duplicate if it is moved again later).
 *
 * Cancel: checked before each batch; the redrive ends `cancelled` with what it moved so far.
 * Transient trouble (no leader for the queue or the metadata, a link down) is retried with
 * back-off for as long as the redrive runs; a node that stops its runner (shutdown) leaves the
 * record running, to be resumed. Limits: a message whose body is larger than one browse page
 * (`MAX_BROWSE_BODY_BYTES`) is not moved (failed, with the reason).
 */
import type { BasicProperties, FieldTable } from '@styx/client/wire';
import { ReplyCode } from '@styx/client/wire';
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
import type { BrowsedMessage, BrowseRequest } from '../queue/message-browse.ts';
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

/** One message's fate: moved to a destination, or left with a reason. */
type Outcome = { readonly moved: RedriveDestination } | { readonly failure: string };

export class RedriveRunner {
  readonly id: string;
  readonly #port: RedriveRunPort;
  readonly #logger: Logger;
  #stopped = false;

  constructor(port: RedriveRunPort, id: string) {
    this.#port = port;
    this.id = id;
    this.#logger = port.logger.child({ redrive: id });
  }

  /** Stop at the next step without ending the record (it is resumed later, here or elsewhere). */
  stop(): void {
    this.#stopped = true;
  }

  /** Run the redrive until it ends, is stopped, or is no longer this node's. */
  async run(): Promise<void> {
    const record = this.#port.record(this.id);
    if (record === undefined || record.state !== 'running' || record.owner !== this.#port.selfId) return;
    // A dry run that was interrupted counts again from the start.
    const tally = record.dryRun ? new RedriveTally() : RedriveTally.from(record.progress);
    try {
      const filter = parseFilterJson(record.filter);
      const dlq = this.#dlq(record);
      const handle = this.#port.handle(dlq, record.user);
      const inflight = record.progress.inflight;
      if (inflight.length > 0) await this.#retry('remove moved messages', () => handle.remove(inflight));
      if (tally.total === null || record.dryRun) {
        await this.#count(record, dlq, filter, tally);
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
      const reason = error instanceof Error ? error.message : String(error);
      this.#logger.warn({ err: error }, 'redrive failed');
      try {
        await this.#commit(tally, [], 'failed', reason);
      } catch (commitError) {
        if (!(commitError instanceof RedriveStoppedError || commitError instanceof RedriveLostError))
          throw commitError;
      }
    }
  }

  /** The dead-letter queue of this incarnation, or an error that fails the redrive. */
  #dlq(record: RedriveRecord): QueueRecord {
    const queue = this.#port.queue(record.vhost, record.queue);
    if (queue === undefined || queue.groupId !== record.groupId)
      throw new Error(`queue '${record.queue}' in vhost '${record.vhost}' was deleted`);
    return queue;
  }

  // ------------------------------------------------------------------------------ the count

  async #count(
    record: RedriveRecord,
    dlq: QueueRecord,
    filter: MessageFilter,
    tally: RedriveTally,
  ): Promise<void> {
    const cap = record.maxMessages ?? Number.POSITIVE_INFINITY;
    let total = 0;
    let bound: number | undefined;
    let after: number | undefined;
    for (;;) {
      const request = { after, offset: 0, limit: MAX_BROWSE_LIMIT, bodyBytes: 0, filter };
      const page = await this.#retry('browse the queue', () => this.#port.browse(dlq, request));
      bound ??= page.appliedIndex;
      for (const message of page.messages) {
        if (message.id > bound || total >= cap) continue;
        total++;
        if (record.dryRun) this.#plan(record, message, tally);
      }
      after = page.next;
      if (after === undefined || after > bound || total >= cap) break;
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
    let pause = FIRST_RETRY_MS;
    for (;;) {
      const current = this.#owned();
      if (current.cancelRequested) return this.#commit(tally, [], 'cancelled');
      this.#dlq(record);
      const budget = Math.min(batchSize, cap - tally.moved - tally.failed);
      if (budget <= 0 || (tally.cursor !== null && tally.cursor > bound))
        return this.#commit(tally, [], 'done');
      const request = {
        after: tally.cursor ?? undefined,
        offset: 0,
        limit: budget,
        bodyBytes: MAX_BROWSE_BODY_BYTES,
        filter,
      };
      const page = await this.#retry('browse the queue', () => this.#port.browse(dlq, request));
      const batch = page.messages.filter((m) => m.id <= bound);
      let outcomes: Outcome[];
      try {
        // Slots are taken in order, so the publishes keep the queue's order.
        outcomes = await Promise.all(
          batch.map(async (message) => {
            await pacer.take();
            return this.#redriveOne(record, message);
          }),
        );
      } catch (error) {
        if (!isTransient(error)) throw error;
        // A target without a reachable leader, or closing (this node stopping): the whole batch is
        // tried again from the same cursor; copies it published already may arrive twice.
        this.#logger.debug({ err: error }, 'redrive: a target did not answer, trying the batch again');
        await this.#port.clock.sleep(pause);
        pause = Math.min(pause * 2, MAX_RETRY_MS);
        continue;
      }
      pause = FIRST_RETRY_MS;
      if (this.#stopped) throw new RedriveStoppedError();
      const moved: number[] = [];
      outcomes.forEach((outcome, i) => {
        const id = (batch[i] as BrowsedMessage).id;
        if ('moved' in outcome) {
          tally.moved++;
          tally.addTarget(outcome.moved.exchange, outcome.moved.routingKey);
          moved.push(id);
        } else {
          tally.addFailure(outcome.failure);
        }
      });
      const last = page.messages.at(-1)?.id ?? page.next;
      if (last !== undefined) tally.cursor = Math.max(tally.cursor ?? 0, last);
      const atTail = page.next === undefined || batch.length < page.messages.length;
      await this.#commit(tally, moved, 'running');
      if (moved.length > 0) await this.#retry('remove moved messages', () => handle.remove(moved));
      if (atTail) return this.#commit(tally, [], 'done');
    }
  }

  /** Publish one message to its destination; moved once every queue there committed it. */
  async #redriveOne(record: RedriveRecord, browsed: BrowsedMessage): Promise<Outcome> {
    const message = browsed.message;
    if (message === undefined) return { failure: BODY_MISSING };
    if (message.body.byteLength < browsed.size)
      return { failure: `larger than ${MAX_BROWSE_BODY_BYTES} bytes: not moved by a redrive` };
    const destination = destinationOf(record.target, message.properties);
    if (typeof destination === 'string') return { failure: destination };
    const queues = this.#routeOf(record, destination, message.properties);
    if (typeof queues === 'string') return { failure: queues };
    const copy: StoredMessage = {
      exchange: destination.exchange,
      routingKey: destination.routingKey,
      properties: message.properties,
      body: message.body,
      bcc: undefined,
    };
    const ttl = this.#port.ttl(message.properties);
    const answers = await Promise.allSettled(queues.map((queue) => queue.enqueue(copy, ttl)));
    for (let i = 0; i < answers.length; i++) {
      const answer = answers[i] as PromiseSettledResult<Awaited<ReturnType<QueueHandle['enqueue']>>>;
      const name = (queues[i] as QueueHandle).name;
      // For now (no leader, closing): the caller tries the batch again. For good: it stays.
      if (answer.status === 'rejected' && isTransient(answer.reason)) throw answer.reason;
      if (answer.status === 'rejected')
        return {
          failure: `not confirmed by queue '${name}': ${String((answer.reason as Error)?.message ?? answer.reason)}`,
        };
      if (answer.value.type === 'rejected')
        return { failure: `refused by queue '${name}': ${answer.value.reason}` };
    }
    return { moved: destination };
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

  /** `attempt` until it resolves, backing off after each failure; stops when the runner is stopped. */
  async #retry<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    let delay = FIRST_RETRY_MS;
    for (;;) {
      // Taken over or ended meanwhile: stop trying (also when the runner is stopped).
      this.#owned();
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
