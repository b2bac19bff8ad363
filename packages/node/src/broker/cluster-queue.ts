/**
 * A queue of the cluster as this node's channels use it (`QueueHandle`), wherever its leader runs:
 * a command goes to the local replica when it leads, else over the queue link to the leader,
 * following `NOT_LEADER` hints and leader changes until it lands or `FORWARD_DEADLINE_MS` passes.
 * One attempt waits at most `CALL_TIMEOUT_MS` for its answer, whether it went over the link or to
 * the local replica: a leader here cut off from its quorum keeps what it proposed pending until the
 * partition heals, and without that bound every command to the queue (queued behind the first, to
 * keep their order) waited as long, instead of failing so the client can try another node.
 *
 * Every enqueue carries a publish id (this handle as its source: the node's run plus the handle's
 * number in it; a sequence number; and the lowest number still in flight through this handle as its
 * horizon), so one re-sent after a lost answer or a leader change is dropped as a duplicate by the
 * queue: retrying is always safe. The source is the handle, not the node: a horizon is a promise
 * about the ids in flight through the handle that sends it, so a second handle of the same queue
 * (made after the first was forgotten while its retries still wait) must not raise the watermark
 * of the first one's ids — that answered its retries `duplicate`, confirming messages never
 * enqueued. The other
 * commands are retried too when their outcome is unknown, except `get` (a repeated get could take
 * a second message): settles, returns and discards of ids the owner no longer holds are ignored by
 * the queue, and cancel, ownerDown, touch, purge and remove are idempotent.
 */
import type { HandOffId } from '@styx/dlx';
import { GroupOverloadedError, NotLeaderError } from '@styx/raft';
import { ClusterError } from '../cluster/errors.ts';
import { QueueLinkLostError, QueueLinkRemoteError, QueueLinkTimeoutError } from '../cluster/queue-link.ts';
import {
  decodeBinaryAnswer,
  decodeCommandAnswer,
  decodeCounts,
  encodeBinaryAnswer,
  encodeCommandAnswer,
  encodeCounts,
  QueueLinkCode,
  QueueOp,
} from '../cluster/queue-rpc-codec.ts';
import { ChannelError, Code } from '../errors/amqp-error.ts';
import type { QueueRecord } from '../metadata/metadata-machine.ts';
import type { DeadLetterTarget } from '../queue/dead-letter-route.ts';
import type { GotApplyResult, QueueActor } from '../queue/queue-actor.ts';
import type { QueueGetResult, QueueHandle } from '../queue/queue-handle.ts';
import type {
  QueueApplyResult,
  QueueCommand,
  QueueCounts,
  QueueReply,
  StoredMessage,
} from '../queue/types.ts';
import { queueCommandCodec } from '../storage/queue-command-codec.ts';
import { HAND_OFF_BEFORE_COMMIT } from '../test-support/test-breaks.ts';
import { CallDeadlines } from './call-deadlines.ts';

/** How long a command keeps looking for the queue's leader before it fails, ms. */
export const FORWARD_DEADLINE_MS = 15_000;
/** How long one attempt at a command (forwarded, or proposed to the local replica) waits for its answer, ms. */
export const CALL_TIMEOUT_MS = 5_000;
/**
 * The longest an enqueue through a handle takes to settle, ms: a first attempt (`CALL_TIMEOUT_MS`),
 * then attempts again until `FORWARD_DEADLINE_MS` after that, the last of them started just before
 * the deadline (`CALL_TIMEOUT_MS` more). Past it, every enqueue has been answered (ok, rejected, or
 * failed: `QueueUnavailableError`). A graceful close waits this long for its publishes' outcomes.
 */
export const ENQUEUE_SETTLE_BOUND_MS = CALL_TIMEOUT_MS + FORWARD_DEADLINE_MS + CALL_TIMEOUT_MS;
/** Pause between attempts while no leader is known, ms (doubling up to `MAX_RETRY_DELAY_MS`). */
const FIRST_RETRY_DELAY_MS = 25;
const MAX_RETRY_DELAY_MS = 500;
/** Commands sent again per round of the backlog. */
const MAX_ROUND = 1024;
/** NOT_LEADER hints followed in a row before pausing. */
const MAX_HOPS = 3;

const ZERO_COUNTS: QueueCounts = Object.freeze({
  ready: 0,
  unacked: 0,
  consumers: 0,
  deadLetterPending: 0,
}) as QueueCounts;

/** What a `ClusterQueue` needs from its node. */
export interface QueueNodePort {
  /** This node's id. */
  readonly selfId: string;
  /** The node run's part of its handles' publish sources (unique per process start). */
  readonly publishSource: string;
  /** The replica of `groupId` running on this node, if any. */
  replica(groupId: string): QueueActor | undefined;
  /** Send a queue-link request to `peer`. */
  call(peer: string, op: number, group: string, body: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
  /**
   * Whether publishes may be sent `ordered` (feature flag `ordered_publishes` enabled cluster-wide:
   * every replica decodes their entries). Absent: yes.
   */
  orderedPublishes?(): boolean;
  /**
   * Whether commands may be forwarded as `QueueOp.commandBinary` (feature flag
   * `binary_queue_answers` enabled cluster-wide: every leader answers it). Absent: yes.
   */
  binaryAnswers?(): boolean;
}

/** The queue has no leader this node can reach (a quorum of its replicas is down or cut off). */
export class QueueUnavailableError extends ChannelError {
  constructor(record: QueueRecord, cause: unknown) {
    super(
      Code.PRECONDITION_FAILED,
      `queue '${record.name}' in vhost '${record.vhost}' has no leader reachable within ` +
        `${FORWARD_DEADLINE_MS / 1000} s (replicas: ${(record.members ?? []).join(', ') || record.node}): ${String(
          (cause as Error | undefined)?.message ?? cause,
        )}`,
    );
  }
}

/**
 * The local replica did not answer a command within `CALL_TIMEOUT_MS` (a leader cut off from its
 * quorum): the outcome is unknown, as after a link timeout.
 */
export class LocalProposalTimeoutError extends ClusterError {
  constructor(groupId: string, ms: number) {
    super('PROPOSAL_TIMEOUT', `the replica of ${groupId} here did not decide a command within ${ms} ms`);
  }
}

/**
 * The replicas of a queue, the preferred leader first: its recorded members; else (declared before
 * queues were replicated) its home node; else (declared before clustering) the node that has it.
 */
export function queueMembers(record: QueueRecord, selfId: string): readonly string[] {
  return record.members ?? [record.node ?? selfId];
}

/** Numbers the handles made in this process: each handle is a dedupe source of its own. */
let handleSequence = 0;

type CommandAnswer = { reply: QueueReply; message?: StoredMessage | undefined };

/** How one attempt at a command went: its answer, or the error that makes it worth another. */
interface Attempt {
  readonly answer?: CommandAnswer;
  readonly error?: unknown;
  /** The answer named the leader to try next. */
  readonly hinted?: boolean;
}

/** A command to send, and its encoding once made. */
interface Outgoing {
  /** Replaced when an enqueue is sent again with a newer publish horizon. */
  command: QueueCommand;
  body: Uint8Array | undefined;
}

/**
 * The queue refused a publish that overtook an earlier one of this handle (`outOfOrder`): it is sent
 * again after that one. Never reaches a client.
 */
class PublishOvertookError extends Error {
  constructor() {
    super('publish arrived before an earlier one of its channel: sent again after it');
    this.name = 'PublishOvertookError';
  }
}

interface BacklogItem {
  readonly command: Outgoing;
  readonly seq: number;
  readonly resolve: (answer: CommandAnswer) => void;
  readonly reject: (error: unknown) => void;
  readonly deadline: number;
  lastError: unknown;
}

export class ClusterQueue implements QueueHandle, DeadLetterTarget {
  readonly vhost: string;
  readonly name: string;
  readonly groupId: string;
  readonly deliveryCountHeader: boolean;
  /** The queue's record; replaced when its replicas change. */
  record: QueueRecord;
  readonly #port: QueueNodePort;
  /** The source of this handle's publish ids: the node run's, and this handle's number in it. */
  readonly #publishSource: string;
  /** The leader last heard of. */
  #leaderHint: string | undefined = undefined;
  /** Publish ids in flight to this queue, ascending, and those already answered among them. */
  readonly #inFlight: number[] = [];
  #inFlightHead = 0;
  readonly #answered = new Set<number>();
  /**
   * Numbers this handle's publishes 1, 2, 3... without gaps: the queue takes a publish only once
   * every earlier one still in flight was taken (DedupeWatermarks.inOrder), which needs a gap-free
   * source.
   */
  #publishSeq = 0;
  /** Commands to send again (their outcome was unknown, or no leader answered), in order. */
  readonly #backlog: BacklogItem[] = [];
  #draining = false;
  /** Set by a command that must be sent again; new commands queue behind until the backlog drains. */
  #recovering = false;
  /** Numbers retryable commands in the order they were made (the backlog's order). */
  #commandSeq = 0;
  /** Retryable commands sent directly and not answered yet, and where they went. */
  #direct = 0;
  #directTarget: string | undefined = undefined;
  #wakeDrain: (() => void) | undefined = undefined;
  /**
   * Deadlines of the commands proposed to the local replica: each waits `CALL_TIMEOUT_MS`, so one
   * FIFO and one timer serve them all (see call-deadlines.ts), not a timer per publish.
   */
  readonly #deadlines = new CallDeadlines(CALL_TIMEOUT_MS);

  constructor(record: QueueRecord, deliveryCountHeader: boolean, port: QueueNodePort) {
    this.vhost = record.vhost;
    this.name = record.name;
    this.groupId = record.groupId;
    this.deliveryCountHeader = deliveryCountHeader;
    this.record = record;
    this.#port = port;
    this.#publishSource = `${port.publishSource}.${(++handleSequence).toString(36)}`;
  }

  /** The replicas, the preferred leader first. */
  get members(): readonly string[] {
    return queueMembers(this.record, this.#port.selfId);
  }

  /** The leader as this node knows it (its replica's view, else the last answer's). */
  get leader(): string | undefined {
    return this.#port.replica(this.groupId)?.leaderId ?? this.#leaderHint;
  }

  // ------------------------------------------------------------------------------ QueueHandle

  enqueue(message: StoredMessage, ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply> {
    if (handOff !== undefined) {
      const command: QueueCommand = { type: 'enqueue', size: message.body.byteLength, ttl, message, handOff };
      if (HAND_OFF_BEFORE_COMMIT) {
        // Deliberately broken (test-breaks.ts): one attempt, confirmed as soon as it is sent.
        this.#attempt({ command, body: undefined }).catch(toVoid);
        return Promise.resolve({ type: 'ok' });
      }
      return this.#run(command, true).then(replyOf);
    }
    const seq = ++this.#publishSeq;
    this.#inFlight.push(seq);
    const publishId: HandOffId = {
      source: this.#publishSource,
      messageId: seq,
      horizon: this.#inFlight[this.#inFlightHead] as number,
    };
    const done = (): void => this.#answeredPublish(seq);
    const result = this.#run(
      this.#port.orderedPublishes?.() === false
        ? { type: 'enqueue', size: message.body.byteLength, ttl, message, publishId }
        : { type: 'enqueue', size: message.body.byteLength, ttl, message, publishId, ordered: true },
      true,
    );
    result.then(done, done);
    return result.then(replyOf);
  }

  consume(
    owner: string,
    tag: string,
    prefetch: number,
    noAck: boolean,
    exclusive: boolean,
  ): Promise<QueueReply> {
    return this.#run({ type: 'consume', owner, tag, prefetch, noAck, exclusive }, true).then(replyOf);
  }

  cancel(owner: string, tag: string): Promise<void> {
    return this.#run({ type: 'cancel', owner, tag }, true).then(toVoid);
  }

  settle(owner: string, ids: readonly number[]): Promise<void> {
    return this.#run({ type: 'settle', owner, ids }, true).then(toVoid);
  }

  returnMessages(owner: string, ids: readonly number[]): Promise<void> {
    return this.#run({ type: 'return', owner, ids }, true).then(toVoid);
  }

  discard(owner: string, ids: readonly number[]): Promise<void> {
    return this.#run({ type: 'discard', owner, ids }, true).then(toVoid);
  }

  async get(owner: string, noAck: boolean): Promise<QueueGetResult | undefined> {
    const { reply, message } = await this.#run({ type: 'get', owner, noAck }, false);
    if (reply.type !== 'got' || message === undefined) return undefined;
    return {
      id: reply.id,
      redelivered: reply.redelivered,
      deliveryCount: reply.deliveryCount,
      messageCount: reply.messageCount,
      message,
    };
  }

  async purge(): Promise<number> {
    const { reply } = await this.#run({ type: 'purge' }, true);
    return reply.type === 'purged' ? reply.count : 0;
  }

  async remove(ids: readonly number[]): Promise<readonly number[]> {
    const { reply } = await this.#run({ type: 'remove', ids }, true);
    return reply.type === 'removed' ? reply.ids : [];
  }

  ownerDown(owner: string): Promise<void> {
    return this.#run({ type: 'ownerDown', owner }, true).then(toVoid);
  }

  touch(): Promise<void> {
    return this.#run({ type: 'touch' }, true).then(toVoid);
  }

  counts(): QueueCounts {
    return this.#port.replica(this.groupId)?.counts() ?? ZERO_COUNTS;
  }

  async fetchCounts(): Promise<QueueCounts> {
    const replica = this.#port.replica(this.groupId);
    if (replica?.isLeader) return replica.counts();
    return this.#forward(QueueOp.counts, new Uint8Array(0), true, decodeCounts);
  }

  // ------------------------------------------------------------------------------ routing

  #answeredPublish(seq: number): void {
    this.#answered.add(seq);
    const inFlight = this.#inFlight;
    while (
      this.#inFlightHead < inFlight.length &&
      this.#answered.delete(inFlight[this.#inFlightHead] as number)
    ) {
      this.#inFlightHead++;
    }
    if (this.#inFlightHead === inFlight.length) {
      inFlight.length = 0;
      this.#inFlightHead = 0;
    } else if (this.#inFlightHead > 1024) {
      inFlight.splice(0, this.#inFlightHead);
      this.#inFlightHead = 0;
    }
  }

  async #run(
    command: QueueCommand,
    retryable: boolean,
  ): Promise<{ reply: QueueReply; message?: StoredMessage | undefined }> {
    if (!retryable) {
      const replica = this.#port.replica(this.groupId);
      if (replica?.isLeader) {
        let result: QueueApplyResult;
        try {
          result = await runLocal(this.#deadlines, replica, command);
        } catch (error) {
          if (error instanceof LocalProposalTimeoutError)
            throw new ChannelError(Code.INTERNAL_ERROR, error.message);
          throw error;
        }
        return { reply: result.reply, message: (result as GotApplyResult).message };
      }
      const { op, decode } = this.#commandOp();
      return this.#forward(op, queueCommandCodec.encode(command), false, decode);
    }
    const outgoing: Outgoing = { command, body: undefined };
    const seq = ++this.#commandSeq;
    // Once a command must be sent again, the ones after it wait behind it: a publisher's messages
    // keep their order through a lost stream or a leader change.
    if (this.#recovering) return this.#sendLater(outgoing, seq, undefined);
    // Commands in flight to one place and this one to another (the leader moved, or this replica
    // took over): this one could land first. It waits until they are answered or back in the queue.
    const target = this.#port.replica(this.groupId)?.isLeader ? this.#port.selfId : this.#nextPeer(0);
    if (this.#direct > 0 && target !== this.#directTarget) {
      this.#recovering = true;
      return this.#sendLater(outgoing, seq, undefined);
    }
    this.#directTarget = target;
    this.#direct++;
    let outcome: Attempt;
    try {
      outcome = await this.#attempt(outgoing);
    } finally {
      this.#direct--;
      if (this.#direct === 0) this.#wakeDrain?.();
    }
    if (outcome.answer !== undefined) return outcome.answer;
    this.#recovering = true;
    return this.#sendLater(outgoing, seq, outcome.error);
  }

  /**
   * One attempt at a command, sent synchronously (so attempts made in a row go out in that order)
   * to the local replica if it leads, else to the peer `#nextPeer` picks. Resolves with the answer,
   * or with the error when trying again may help; rejects when it cannot.
   */
  #attempt(outgoing: Outgoing, tried = 0): Promise<Attempt> {
    this.#refreshHorizon(outgoing);
    const replica = this.#port.replica(this.groupId);
    if (replica?.isLeader) {
      return runLocal(this.#deadlines, replica, outgoing.command).then(
        (result) =>
          result.reply.type === 'outOfOrder'
            ? { error: new PublishOvertookError() }
            : { answer: { reply: result.reply, message: (result as GotApplyResult).message } },
        (error: unknown) => {
          // Another leader now, too much uncommitted (a burst of dead-letters), or no decision in
          // time (a leader cut off from its quorum): try again, elsewhere once it steps down.
          if (
            !(error instanceof NotLeaderError) &&
            !(error instanceof GroupOverloadedError) &&
            !(error instanceof LocalProposalTimeoutError)
          )
            throw error;
          return { error };
        },
      );
    }
    const peer = this.#nextPeer(tried);
    if (peer === undefined) return Promise.resolve({ error: new Error('no other replica to ask') });
    // Encoded once, when first sent over the link (the local replica takes the command as is).
    outgoing.body ??= queueCommandCodec.encode(outgoing.command);
    const { op, decode } = this.#commandOp();
    return this.#port.call(peer, op, this.groupId, outgoing.body, CALL_TIMEOUT_MS).then(
      (bytes) => {
        this.#leaderHint = peer;
        const answer = decode(bytes);
        if (answer.reply.type === 'outOfOrder') return { error: new PublishOvertookError() };
        return { answer };
      },
      (error: unknown) => {
        if (error instanceof QueueLinkRemoteError) {
          if (error.code === QueueLinkCode.notLeader) {
            const hint = error.message;
            this.#leaderHint = hint === '' || hint === peer || hint === this.#port.selfId ? undefined : hint;
            return { error, hinted: this.#leaderHint !== undefined || this.#leadsHere() };
          }
          if (retriedCode(error.code)) return { error };
          throw remoteFailure(error);
        }
        if (error instanceof QueueLinkLostError || error instanceof QueueLinkTimeoutError) {
          if (this.#leaderHint === peer) this.#leaderHint = undefined;
          return { error };
        }
        throw error;
      },
    );
  }

  /**
   * A publish sent again carries the horizon of now (the lowest of this handle's publishes still in
   * flight): the one it was first sent with may name an earlier publish that has been answered
   * since, refused for good, and the queue would wait for it forever.
   */
  #refreshHorizon(outgoing: Outgoing): void {
    const command = outgoing.command;
    if (command.type !== 'enqueue' || command.publishId === undefined) return;
    const { publishId } = command;
    const horizon = Math.min(this.#inFlight[this.#inFlightHead] ?? publishId.messageId, publishId.messageId);
    if (horizon === publishId.horizon) return;
    outgoing.command = { ...command, publishId: { ...publishId, horizon } };
    outgoing.body = undefined;
  }

  /** Queue `command` (number `seq`) among those waiting to be sent again, in number order. */
  #sendLater(command: Outgoing, seq: number, error: unknown): Promise<CommandAnswer> {
    return new Promise<CommandAnswer>((resolve, reject) => {
      const item: BacklogItem = {
        command,
        seq,
        resolve,
        reject,
        deadline: Date.now() + FORWARD_DEADLINE_MS,
        lastError: error,
      };
      // Binary search: a burst's failed first attempts (low numbers) come back after thousands of
      // later commands were queued; a scan from the end made that quadratic.
      const backlog = this.#backlog;
      let low = 0;
      let high = backlog.length;
      while (low < high) {
        const mid = (low + high) >>> 1;
        if ((backlog[mid] as BacklogItem).seq < seq) low = mid + 1;
        else high = mid;
      }
      if (low === backlog.length) backlog.push(item);
      else backlog.splice(low, 0, item);
      if (!this.#draining) void this.#drain();
    });
  }

  /**
   * Send the backlog again, in order, until it is empty: each round sends every waiting command, in
   * order, to one peer (one stream keeps their order); those that fail again go back to the front,
   * still in order, and the next round follows the hint they brought (at once) or waits a back-off.
   * A command past its deadline fails with `QueueUnavailableError`.
   */
  async #drain(): Promise<void> {
    this.#draining = true;
    let delay = FIRST_RETRY_DELAY_MS;
    // The first attempt (in `#run`) asked the first peer in turn: the rounds go on from the next.
    let tried = 1;
    let hops = 0;
    try {
      while (this.#backlog.length > 0 || this.#direct > 0) {
        // Commands sent before the trouble and not answered yet go first: wait for their outcome
        // (an answer, or a place in the backlog) before sending anything after them.
        if (this.#direct > 0) {
          await new Promise<void>((resolve) => {
            this.#wakeDrain = resolve;
          });
          this.#wakeDrain = undefined;
          continue;
        }
        const now = Date.now();
        // A bounded round: a backlog of a burst's worth (100k dead-letters into one queue) goes out
        // as the queue commits, not all at once to be refused again.
        const round = this.#backlog.splice(0, MAX_ROUND);
        const live: BacklogItem[] = [];
        for (const item of round) {
          if (item.deadline <= now) item.reject(new QueueUnavailableError(this.record, item.lastError));
          else live.push(item);
        }
        if (live.length === 0) continue;
        const outcomes = await Promise.allSettled(live.map((item) => this.#attempt(item.command, tried)));
        tried++;
        const again: BacklogItem[] = [];
        let hinted = false;
        outcomes.forEach((outcome, i) => {
          const item = live[i] as BacklogItem;
          if (outcome.status === 'rejected') item.reject(outcome.reason);
          else if (outcome.value.answer !== undefined) item.resolve(outcome.value.answer);
          else {
            item.lastError = outcome.value.error;
            hinted ||= outcome.value.hinted === true;
            again.push(item);
          }
        });
        this.#backlog.unshift(...again);
        if (again.length < live.length) {
          // Some went through: the way is open, go on at once.
          delay = FIRST_RETRY_DELAY_MS;
          hops = 0;
          continue;
        }
        if (hinted && hops < MAX_HOPS) {
          hops++;
          continue;
        }
        hops = 0;
        await sleep(delay);
        delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
      }
    } finally {
      this.#draining = false;
      this.#recovering = false;
    }
  }

  /**
   * Send `body` to the leader and decode its answer, following hints and trying the replicas in
   * turn; a local replica that becomes leader meanwhile takes the command itself.
   */
  async #forward<T>(
    op: number,
    body: Uint8Array,
    retryable: boolean,
    decode: (bytes: Uint8Array) => T,
  ): Promise<T> {
    const deadline = Date.now() + FORWARD_DEADLINE_MS;
    let delay = FIRST_RETRY_DELAY_MS;
    let tried = 0;
    /** Hints followed in a row without a pause (replicas may name each other while electing). */
    let hops = 0;
    let lastError: unknown;
    for (;;) {
      let pause = true;
      const replica = this.#port.replica(this.groupId);
      if (replica?.isLeader) {
        // Became leader while the command was being forwarded (rare: the extra coding is fine).
        try {
          if (op === QueueOp.counts) return decode(encodeCounts(replica.counts()));
          const result = await runLocal(this.#deadlines, replica, queueCommandCodec.decode(body));
          const encode = op === QueueOp.command ? encodeCommandAnswer : encodeBinaryAnswer;
          return decode(encode(result.reply, (result as GotApplyResult).message));
        } catch (error) {
          if (error instanceof LocalProposalTimeoutError && !retryable)
            throw new ChannelError(Code.INTERNAL_ERROR, error.message);
          if (!(error instanceof NotLeaderError || error instanceof LocalProposalTimeoutError) || !retryable)
            throw error;
          lastError = error;
        }
      } else {
        const peer = this.#nextPeer(tried);
        tried++;
        if (peer !== undefined) {
          try {
            const answer = await this.#port.call(peer, op, this.groupId, body, CALL_TIMEOUT_MS);
            this.#leaderHint = peer;
            return decode(answer);
          } catch (error) {
            lastError = error;
            if (error instanceof QueueLinkRemoteError) {
              if (error.code === QueueLinkCode.notLeader) {
                const hint = error.message;
                this.#leaderHint =
                  hint === '' || hint === peer || hint === this.#port.selfId ? undefined : hint;
                // Straight to the hinted leader (or this node's replica, if the hint names it), a
                // few times in a row at most.
                if ((this.#leaderHint !== undefined || this.#leadsHere()) && hops < MAX_HOPS) pause = false;
              } else if (!retriedCode(error.code)) {
                throw remoteFailure(error);
              }
            } else if (error instanceof QueueLinkLostError || error instanceof QueueLinkTimeoutError) {
              if (this.#leaderHint === peer) this.#leaderHint = undefined;
              if (!retryable) throw new ChannelError(Code.INTERNAL_ERROR, error.message);
            } else {
              throw error;
            }
          }
        }
      }
      if (!pause) {
        hops++;
        if (Date.now() < deadline) continue;
      }
      hops = 0;
      if (Date.now() + delay > deadline) throw new QueueUnavailableError(this.record, lastError);
      await sleep(delay);
      delay = Math.min(delay * 2, MAX_RETRY_DELAY_MS);
    }
  }

  /** The op commands are forwarded as, and the decoder of its answers. */
  #commandOp(): { op: number; decode: (bytes: Uint8Array) => CommandAnswer } {
    return this.#port.binaryAnswers?.() === false
      ? { op: QueueOp.command, decode: decodeCommandAnswer }
      : { op: QueueOp.commandBinary, decode: decodeBinaryAnswer };
  }

  /** Whether this node's replica of the queue leads it (a hint naming this node is then true). */
  #leadsHere(): boolean {
    return this.#port.replica(this.groupId)?.isLeader === true;
  }

  /**
   * Where to send next: the leader last named by an answer, else the one the local replica knows,
   * else the replicas in turn.
   */
  #nextPeer(tried: number): string | undefined {
    const self = this.#port.selfId;
    const hinted = this.#leaderHint;
    if (hinted !== undefined && hinted !== self) return hinted;
    const known = this.#port.replica(this.groupId)?.leaderId;
    if (known !== undefined && known !== self && tried % 2 === 0) return known;
    const members = this.members.filter((m) => m !== self);
    if (members.length === 0) return undefined;
    return members[tried % members.length];
  }
}

/**
 * Answers worth another attempt: no replica there yet, or the leader too busy to take the command
 * now (its group's uncommitted bound, or its node's queue of proposals waiting to be admitted).
 */
function retriedCode(code: string): boolean {
  return (
    code === QueueLinkCode.unknownGroup ||
    code === 'UNAVAILABLE' ||
    code === 'GROUP_OVERLOADED' ||
    code === 'ADMISSION_QUEUE_FULL'
  );
}

/** An error the leader answered with: an AMQP channel error keeps its code. */
function remoteFailure(error: QueueLinkRemoteError): Error {
  const code = Number(error.code);
  if (Number.isInteger(code) && code >= 300 && code < 600) return new ChannelError(code, error.message);
  return new ChannelError(
    Code.INTERNAL_ERROR,
    `queue leader failed the command: ${error.code} ${error.message}`,
  );
}

/**
 * `command` run on the local replica, failing with `LocalProposalTimeoutError` when it is not decided
 * within `CALL_TIMEOUT_MS` (the proposal itself stays with the replica: it may still commit, which a
 * retry's publish id makes harmless).
 */
function runLocal(
  deadlines: CallDeadlines,
  replica: QueueActor,
  command: QueueCommand,
): Promise<QueueApplyResult> {
  return new Promise<QueueApplyResult>((resolve, reject) => {
    const deadline = deadlines.start(() =>
      reject(new LocalProposalTimeoutError(replica.groupId, CALL_TIMEOUT_MS)),
    );
    replica.run(command).then(
      (result) => {
        deadlines.settle(deadline);
        resolve(result);
      },
      (error: unknown) => {
        deadlines.settle(deadline);
        reject(error);
      },
    );
  });
}

function replyOf(answer: { reply: QueueReply }): QueueReply {
  return answer.reply;
}

function toVoid(): void {}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
