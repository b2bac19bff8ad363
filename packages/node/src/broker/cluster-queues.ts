/**
 * The queues of a clustered node: which replicas run here, the `ClusterQueue` handles the channels
 * use, the queue link's server side (commands for the replicas this node leads, deliveries for its
 * channels), and the leader's upkeep of each group's Raft membership.
 *
 * - **Replicas.** A queue's record lists its replicas (`members`, the preferred leader first). The
 *   first member creates the group as its only voter; the others open as joiners, and the leader
 *   adds them (a learner first, promoted once caught up: `nextMembershipChange`). A replica whose
 *   node is no longer listed is destroyed once the group has removed it and every remaining
 *   member holds that removal (`#removalSettled`); a leader removing itself first hands its
 *   leadership to an up-to-date voter that answers.
 * - **Owners.** A consumer belongs to a channel (`owner`); its node and that node's run are in the
 *   owner id. A leader delivers to a channel on another node over the link. While that node is
 *   suspected (missed pings, lost connection) its owners are suspended: no new deliveries, what
 *   they hold stays theirs. When that node answers that it has no such channel, restarted (a new
 *   incarnation), was forgotten, or stayed suspected past the queue's consumer-disconnected
 *   timeout, the owner's consumers go and its unacked messages come back (`ownerDown`), to be
 *   redelivered with their delivery count raised (owner-suspicion.ts).
 */
import { randomBytes } from 'node:crypto';
import type { RaftGroupLog } from '@styx/raft';
import { NotLeaderError } from '@styx/raft';
import type { FeatureFlagGate } from '../cluster/feature-flags.ts';
import {
  BATCHED_REMOTE_SENDS_FLAG,
  BINARY_QUEUE_ANSWERS_FLAG,
  CONSUMER_SUSPICION_FLAG,
  ORDERED_PUBLISHES_FLAG,
} from '../cluster/feature-flags.ts';
import { nextMembershipChange } from '../cluster/membership-reconciler.ts';
import type { BatchedOutcome } from '../cluster/queue-batch-codec.ts';
import { encodeBatchAnswer, readBatch } from '../cluster/queue-batch-codec.ts';
import type { FrameBody, QueueLinkHandler } from '../cluster/queue-link.ts';
import {
  answerError,
  QueueLinkError,
  QueueLinkFrameError,
  QueueLinkRemoteError,
  UNKNOWN_MESSAGE_CODE,
} from '../cluster/queue-link.ts';
import type { GroupStatus, ReplicaStatus } from '../cluster/queue-rpc-codec.ts';
import {
  DeliveryEncoder,
  DeliveryReader,
  decodeCancelled,
  decodeGroupStatus,
  decodeText,
  encodeBinaryAnswer,
  encodeCancelled,
  encodeCommandAnswer,
  encodeCounts,
  encodeJsonBody,
  QueueLinkCode,
  QueueOp,
} from '../cluster/queue-rpc-codec.ts';
import { RemoteSendBatches } from '../cluster/remote-send-batches.ts';
import type { Logger } from '../logging/logger.ts';
import { consumerDisconnectedTimeoutMs } from '../metadata/effective-config.ts';
import type { MetadataMachine, QueueRecord } from '../metadata/metadata-machine.ts';
import { showsDeliveryCount } from '../queue/delivery-count-header.ts';
import type { GotApplyResult, OwnerSink, QueueActor } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { QueueApplyResult, QueueCommand, QueueReply, StoredMessage } from '../queue/types.ts';
import { decodeForwarded } from '../storage/queue-command-codec.ts';
import type { QueueNodePort } from './cluster-queue.ts';
import { ClusterQueue, queueMembers } from './cluster-queue.ts';
import { handOverTarget } from './handover-target.ts';
import type { PeerStatus } from './owner-suspicion.ts';
import { ownerRun, ownerVerdict } from './owner-suspicion.ts';
import { RemoteOwnerSink } from './remote-owner-sink.ts';
import type { ReplicaStart } from './replica-start.ts';
import { replicaStart } from './replica-start.ts';
import { isReplicatedQueue, notReplicatedError } from './replicated-queue.ts';

/** A batched send's outcome when it went through (shared: outcomes are read, never changed). */
const BATCHED_DONE: BatchedOutcome = Object.freeze({ ok: true });
/** How long a send to another node's channel (alone, or its turn's batch) waits for its answer, ms. */
const REMOTE_SEND_TIMEOUT_MS = 5_000;
/** How often leaders check their groups' membership against the records, ms. */
const MEMBERSHIP_CHECK_MS = 1_000;
/**
 * A founded group's creator with no leader this long after opening campaigns again (then after
 * twice as long, ...): its first vote requests may have reached replicas that were not open yet.
 */
const RECAMPAIGN_FIRST_MS = 250;
/** Replicas a reconcile pass opens at once (their log store syncs are shared). */
const REPLICA_STARTS_AT_ONCE = 64;
/** A learner this close to the leader's applied index is promoted (a busy queue never stands still). */
const CAUGHT_UP_SLACK = 64;
/**
 * Pause before telling a node that is up, again, to register its consumers again, ms: doubling up
 * to the max, for as long as the node is up and a member (a suspected node is told when it is
 * back; a node removed from the cluster is not told at all).
 */
const REASSERT_NOTICE_FIRST_DELAY_MS = 500;
const REASSERT_NOTICE_MAX_DELAY_MS = 10_000;
/**
 * How long a command or counts request reaching a replica that knows no leader (an election is on)
 * waits for one, ms. Answered the moment the election ends: run here if this replica won, else
 * NOT_LEADER naming the winner, so the caller goes straight there instead of polling on its
 * back-off (up to 0.5 s between tries; a node holding no replica of the queue has no other way to
 * learn the new leader). It covers an election on a peer's death (0.1-0.5 s and a commit); a longer
 * one is answered NOT_LEADER with no hint after it, as before. Well inside CALL_TIMEOUT_MS.
 */
export const LEADERLESS_HOLD_MS = 1_000;

/** A channel as the cluster sees it: deliveries and cancellations name the queue's handle. */
export type ChannelSink = OwnerSink<QueueHandle>;

/** What the queue link needs of the cluster. */
export interface QueueClusterPort {
  readonly nodeId: string;
  readonly queueLink: {
    /** `body` in parts (one body, the parts in a row), or writing itself into the frame (a batch). */
    call(
      peer: string,
      op: number,
      group: string,
      body: Uint8Array | readonly Uint8Array[] | FrameBody,
      timeoutMs: number,
    ): Promise<Uint8Array>;
    handle(handler: QueueLinkHandler): void;
  };
  isDown(nodeId: string): boolean;
  /** What the failure detector knows of a member now (suspected, for how long, its incarnation). */
  peerStatus(nodeId: string): PeerStatus;
  /** A member is suspected. */
  onNodeDown(listener: (nodeId: string) => void): () => void;
  /** A member answers again (or, restarted, as a new incarnation). */
  onNodeUp(listener: (nodeId: string) => void): () => void;
  /**
   * The cluster's feature flags; while `consumer_suspicion` is not enabled (a rolling upgrade from
   * a build without it) a suspected node's owners are given up at once. Absent: enabled.
   */
  readonly featureFlags?: FeatureFlagGate;
}

/** What `ClusterQueues` needs of its broker. */
export interface ClusterQueuesHost {
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  /** The replica of this queue incarnation running here. */
  replica(groupId: string): QueueActor | undefined;
  /** Every replica running here. */
  replicas(): Iterable<QueueActor>;
  /** The open channel with this owner id on this node. */
  localChannel(owner: string): ChannelSink | undefined;
  /** Every open channel here registers its consumers again (see `QueueOp.reassert`). */
  reassertConsumers(): void;
  /** Start this node's replica of `record` (a no-op when it runs). */
  startReplica(record: QueueRecord, start: ReplicaStart): Promise<void>;
  /** Stop and destroy this node's replica of `record` (it is no longer one of its members). */
  dropReplica(record: QueueRecord): Promise<void>;
}

/** A remote owner's sink: what the replicas call, the link sender behind it, and the owner's node and run. */
interface RemoteOwner {
  readonly sink: OwnerSink;
  readonly link: RemoteOwnerSink;
  /** The node name in the owner id. */
  readonly nodeName: string;
  /** The run id in the owner id (`ownerRun`). */
  readonly run: string | undefined;
}

/** The node name in a connection id `${nodeName}:${run}.${n}` or an owner id `${connection}/${channel}`. */
export function ownerNodeName(owner: string): string {
  const slash = owner.lastIndexOf('/');
  const connection = slash < 0 ? owner : owner.slice(0, slash);
  const colon = connection.lastIndexOf(':');
  return colon < 0 ? connection : connection.slice(0, colon);
}

/** A transfer's answer when its target does not hold the leader's whole log yet (not asked). */
const TRANSFER_TARGET_BEHIND = Uint8Array.of(0);

export class ClusterQueues {
  readonly selfId: string;
  readonly #host: ClusterQueuesHost;
  readonly #cluster: QueueClusterPort;
  readonly #log: Logger;
  readonly #port: QueueNodePort;
  /**
   * Handles by group id. Bound: at most one per queue in this node's copy of the metadata, whether
   * or not a replica runs here — a queue's handle is released when its deletion applies here
   * (`queueDeleted`), or, for a deletion this node learnt of by a metadata snapshot, at the next
   * reconcile. (Without that, every reply or auto-delete queue a channel here ever used kept one.)
   */
  readonly #handles = new Map<string, ClusterQueue>();
  /** The Raft groups of durable replicas running here, by group id. */
  readonly #groups = new Map<string, RaftGroupLog<QueueCommand, QueueApplyResult>>();
  /** Local channels wrapped so their deliveries name the handle, not the replica. */
  readonly #channelSinks = new WeakMap<ChannelSink, OwnerSink>();
  /** Remote owners' sinks, by owner id: what the replicas call, and the link sender behind it. */
  readonly #remoteSinks = new Map<string, RemoteOwner>();
  /** The remote sinks' sends of a turn per node, in one call (feature flag `batched_remote_sends`). */
  readonly #sendBatches: RemoteSendBatches;
  /** Reads each delivery from another node's leader in place (its fields reused per delivery). */
  readonly #deliveryReader = new DeliveryReader();
  /** Groups with a membership change in flight. */
  readonly #changing = new Set<string>();
  /**
   * Replicas removed from their group whose leader reported every remaining member holding the
   * removal: group id → this replica's applied index then (`#removalSettled`).
   */
  readonly #settledRemovals = new Map<string, number>();
  /** Removed replicas whose leader is being asked whether their data may go. */
  readonly #checkingRemovals = new Set<string>();
  /** Removed replicas kept for a lagging member (logged once each). */
  readonly #keptRemovals = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #reconciling: Promise<void> | undefined;
  #reconcileAgain = false;
  #stopped = false;
  readonly #unsubscribe: () => void;
  readonly #unsubscribeUp: () => void;
  /**
   * Nodes whose consumers this node's leaders gave up while suspecting them. Such a node may
   * never suspect this one (a one-sided view, or a give-up that committed after it had
   * re-registered), so it would not register its consumers again by itself: it is told to once it
   * answers again.
   */
  readonly #owesReassert = new Set<string>();
  /**
   * Owners (`group owner`) whose give-up was logged: a give-up is decided again every second until
   * its `ownerDown` commits (never, while the queue has no quorum), logged once a minute at most.
   */
  readonly #loggedGiveUps = new Set<string>();
  #ownerChecks = 0;

  constructor(host: ClusterQueuesHost, cluster: QueueClusterPort) {
    this.#host = host;
    this.#cluster = cluster;
    this.selfId = cluster.nodeId;
    this.#log = host.logger.child({ component: 'cluster-queues' });
    this.#port = {
      selfId: cluster.nodeId,
      publishSource: `p.${randomBytes(9).toString('base64url')}`,
      replica: (groupId) => host.replica(groupId),
      call: (peer, op, group, body, timeoutMs) => cluster.queueLink.call(peer, op, group, body, timeoutMs),
      orderedPublishes: () => cluster.featureFlags?.isEnabled(ORDERED_PUBLISHES_FLAG) ?? true,
      binaryAnswers: () => cluster.featureFlags?.isEnabled(BINARY_QUEUE_ANSWERS_FLAG) ?? true,
    };
    this.#sendBatches = new RemoteSendBatches((node, op, group, body) =>
      cluster.queueLink.call(node, op, group, body, REMOTE_SEND_TIMEOUT_MS),
    );
    cluster.queueLink.handle(this.#onRequest);
    this.#unsubscribe = cluster.onNodeDown((nodeId) => this.#nodeDown(nodeId));
    this.#unsubscribeUp = cluster.onNodeUp((nodeId) => this.#nodeUp(nodeId));
    this.#timer = setInterval(() => this.#checkMemberships(), MEMBERSHIP_CHECK_MS);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#unsubscribe();
    this.#unsubscribeUp();
  }

  // ------------------------------------------------------------------------------ handles

  /** The handle of `record`'s incarnation (made on first use, kept in step with the record). */
  handle(record: QueueRecord): ClusterQueue {
    let handle = this.#handles.get(record.groupId);
    if (handle === undefined) {
      handle = new ClusterQueue(record, showsDeliveryCount(record.arguments), this.#port);
      this.#handles.set(record.groupId, handle);
    } else if (handle.record !== record) {
      handle.record = record;
    }
    return handle;
  }

  /** The replicas of `record`, the preferred leader first. */
  membersOf(record: QueueRecord): readonly string[] {
    return queueMembers(record, this.selfId);
  }

  /** A Raft group of a durable replica started here (for membership upkeep and status). */
  registerGroup(groupId: string, group: RaftGroupLog<QueueCommand, QueueApplyResult>): void {
    this.#groups.set(groupId, group);
  }

  group(groupId: string): RaftGroupLog<QueueCommand, QueueApplyResult> | undefined {
    return this.#groups.get(groupId);
  }

  forgetGroup(groupId: string): void {
    this.#groups.delete(groupId);
    this.#handles.delete(groupId);
  }

  /** The queue incarnation `groupId` was deleted (applied here): its handle goes. */
  queueDeleted(groupId: string): void {
    this.#handles.delete(groupId);
  }

  /** Handles held (for tests and diagnostics). */
  get handleCount(): number {
    return this.#handles.size;
  }

  // ------------------------------------------------------------------------------ owners

  /** Where a replica's deliveries to `owner` go: the local channel, or its node over the link. */
  resolveOwner(owner: string): OwnerSink | undefined {
    // Every delivery asks: an owner with a sink here is another node's (an owner id names its
    // node), so only whether that node is still a member, and the same run, is looked up again.
    const known = this.#remoteSinks.get(owner);
    if (known !== undefined) {
      const node = this.#host.metadata.clusterNode(known.nodeName);
      if (node === undefined || node.id === this.selfId) return undefined;
      if (this.#restartedRun(known.run, node.id)) return undefined;
      return known.sink;
    }
    const channel = this.#host.localChannel(owner);
    if (channel !== undefined) return this.#localSink(channel);
    const name = ownerNodeName(owner);
    const node = this.#host.metadata.clusterNode(name);
    if (node === undefined || node.id === this.selfId) return undefined; // a channel of ours, closed
    // Its node restarted: the channel died with the old process. (A suspected node's channel is
    // still its own: deliveries to it are held and sent again until it answers or is given up.)
    if (this.#restarted(owner, node.id)) return undefined;
    const remote = { ...this.#remoteSink(owner, node.id), nodeName: name, run: ownerRun(owner) };
    this.#remoteSinks.set(owner, remote);
    return remote.sink;
  }

  /** Whether `owner`'s node answers as another incarnation than the one that opened the channel. */
  #restarted(owner: string, nodeId: string): boolean {
    return this.#restartedRun(ownerRun(owner), nodeId);
  }

  /** Whether node `nodeId` answers as another incarnation than `run` (an owner's run id). */
  #restartedRun(run: string | undefined, nodeId: string): boolean {
    const incarnation = this.#cluster.peerStatus(nodeId).incarnation;
    return incarnation !== undefined && run !== undefined && run !== incarnation;
  }

  #localSink(channel: ChannelSink): OwnerSink {
    let sink = this.#channelSinks.get(channel);
    if (sink === undefined) {
      sink = {
        deliver: (actor, tag, id, redelivered, deliveryCount, message) =>
          channel.deliver(this.#handleOfReplica(actor), tag, id, redelivered, deliveryCount, message),
        consumerCancelled: (actor, tag) => channel.consumerCancelled(this.#handleOfReplica(actor), tag),
      };
      this.#channelSinks.set(channel, sink);
    }
    return sink;
  }

  #handleOfReplica(actor: QueueActor): QueueHandle {
    const record = this.#host.metadata.queue(actor.vhost, actor.name);
    if (record === undefined || record.groupId !== actor.groupId)
      return this.#handles.get(actor.groupId) ?? actor;
    return this.handle(record);
  }

  #remoteSink(owner: string, nodeId: string): { sink: OwnerSink; link: RemoteOwnerSink } {
    const link = new RemoteOwnerSink({
      send: (op, group, body) =>
        this.#batchedSends()
          ? this.#sendBatches.send(nodeId, op, group, body)
          : this.#cluster.queueLink.call(nodeId, op, group, body, REMOTE_SEND_TIMEOUT_MS),
      post: (op, group, body, listener, token) => {
        if (this.#batchedSends()) {
          this.#sendBatches.post(nodeId, op, group, body, listener, token);
          return;
        }
        this.#cluster.queueLink.call(nodeId, op, group, body, REMOTE_SEND_TIMEOUT_MS).then(
          () => listener.sent(token),
          (error: unknown) => listener.failed(token, error),
        );
      },
      classify: (error) => {
        if (!(error instanceof QueueLinkRemoteError)) return 'lost';
        if (error.code === QueueLinkCode.ownerGone) return 'owner-gone';
        this.#log.warn({ err: error, owner }, 'delivery to another node refused');
        return 'refused';
      },
      nodeDown: () => this.#cluster.isDown(nodeId),
      ownerGone: () =>
        this.#host.metadata.clusterNode(nodeId) === undefined || this.#restarted(owner, nodeId),
      lost: (actor) => {
        this.#remoteSinks.delete(owner);
        this.#giveUp(actor, owner, nodeId);
      },
      warn: (fields, message) => this.#log.warn({ ...fields, owner, node: nodeId }, message),
    });
    const deliveries = new DeliveryEncoder(owner);
    const sink: OwnerSink = {
      deliver: (actor, tag, id, redelivered, deliveryCount, message) =>
        link.send(actor, QueueOp.deliver, deliveries.encode(tag, id, redelivered, deliveryCount, message)),
      consumerCancelled: (actor, tag) => link.send(actor, QueueOp.cancelled, encodeCancelled(owner, tag)),
    };
    return { sink, link };
  }

  /** Whether every member answers `QueueOp.batch` (feature flag `batched_remote_sends`). */
  #batchedSends(): boolean {
    return this.#cluster.featureFlags?.isEnabled(BATCHED_REMOTE_SENDS_FLAG) ?? true;
  }

  /**
   * Each queue led here decides, for every owner on another node (only `onlyNode`'s when given),
   * whether its consumers take messages, are suspended, or are given up (owner-suspicion.ts): on
   * every failure-detector event and every second (timeouts), through each queue's log.
   */
  #checkOwners(onlyNode?: string): void {
    if (this.#stopped) return;
    for (const actor of this.#host.replicas()) if (actor.isLeader) this.#checkOwnersOf(actor, onlyNode);
  }

  #checkOwnersOf(actor: QueueActor, onlyNode?: string): void {
    let timeoutMs: number | undefined;
    for (const owner of actor.ownerIds()) {
      const node = this.#host.metadata.clusterNode(ownerNodeName(owner));
      // A channel of this node: the broker gives it up itself when it closes.
      if (node?.id === this.selfId || (onlyNode !== undefined && node?.id !== onlyNode)) continue;
      const status = node === undefined ? undefined : this.#cluster.peerStatus(node.id);
      const suspected = status?.suspected ?? false;
      if (suspected) timeoutMs ??= this.#suspicion() ? this.#disconnectedTimeout(actor) : 0;
      const view = {
        forgotten: node === undefined,
        restarted: node !== undefined && this.#restarted(owner, node.id),
        suspected,
        unreachableMs: status?.unreachableMs ?? 0,
      };
      switch (ownerVerdict(view, timeoutMs ?? Number.POSITIVE_INFINITY)) {
        case 'deliver':
          actor.setOwnerSuspended(owner, false);
          break;
        case 'suspend':
          actor.setOwnerSuspended(owner, true);
          break;
        case 'give-up':
          if (!this.#loggedGiveUps.has(`${actor.groupId} ${owner}`)) {
            this.#loggedGiveUps.add(`${actor.groupId} ${owner}`);
            this.#log.info(
              { queue: actor.name, vhost: actor.vhost, owner, ...view, timeoutMs },
              'consumers of a node known gone are given up: their unacked messages return to the queue',
            );
          }
          // A node that timed out may come back with its channels: it registers them again then.
          this.#giveUp(actor, owner, view.forgotten || view.restarted ? undefined : node?.id);
          break;
      }
    }
  }

  /**
   * Whether owners may be suspended: every member's build knows the queue entries it takes. Until
   * then a suspected node's owners are given up at once (a timeout of 0), as before suspicion.
   */
  #suspicion(): boolean {
    return this.#cluster.featureFlags?.isEnabled(CONSUMER_SUSPICION_FLAG) ?? true;
  }

  /** The queue's consumer-disconnected timeout: its argument, else its policy's, else 60 s. */
  #disconnectedTimeout(actor: QueueActor): number {
    const metadata = this.#host.metadata;
    const record = metadata.queue(actor.vhost, actor.name);
    if (record === undefined) return consumerDisconnectedTimeoutMs({ arguments: { entries: [] } }, undefined);
    return consumerDisconnectedTimeoutMs(record, metadata.policyFor(record.vhost, 'queue', record.name));
  }

  /** A node is suspected: the queues led here stop delivering to its owners. */
  #nodeDown(nodeId: string): void {
    this.#checkOwners(nodeId);
  }

  /**
   * `actor` (leading) gives up `owner`: its consumers go, its unacked return. When `nodeId` is
   * given, that node (still a member, same process) is told to register its consumers again once
   * it answers.
   */
  #giveUp(actor: QueueActor, owner: string, nodeId: string | undefined): void {
    if (nodeId !== undefined) this.#owesReassert.add(nodeId);
    // Deliveries to it that wait to be sent again are dropped: the queue takes those messages back.
    this.#remoteSinks.get(owner)?.link.forget(actor);
    actor.ownerLost(owner);
  }

  /**
   * A node answers again: the dead-letter hand-offs of the queues led here that wait out a back-off
   * (their target's leader was there, or could not be reached through it) are tried now. Without
   * it, a hand-off that failed through a fault waits up to the back-off's cap (5 s) after the heal,
   * which made the DLQs' consumers the last clients back after most slow heals in chaos runs.
   */
  #wakeDeadLetters(): void {
    if (this.#stopped) return;
    for (const actor of this.#host.replicas())
      if (actor.isLeader && actor.hasPendingDeadLetters()) actor.wakeDeadLetters();
  }

  /**
   * A node answers again: the queues led here resume its owners and retry their waiting
   * dead-letter hand-offs; if this node gave up any of its consumers, it is told to register them
   * again.
   */
  #nodeUp(nodeId: string, delay = 0): void {
    if (delay === 0) {
      this.#checkOwners(nodeId);
      this.#wakeDeadLetters();
    }
    if (this.#stopped || (delay === 0 && !this.#owesReassert.delete(nodeId))) return;
    this.#cluster.queueLink.call(nodeId, QueueOp.reassert, '', EMPTY, 5_000).catch((error: unknown) => {
      if (this.#stopped || this.#host.metadata.clusterNode(nodeId) === undefined) return; // removed
      if (this.#cluster.isDown(nodeId)) {
        // Down again: told when it next comes back.
        this.#owesReassert.add(nodeId);
        return;
      }
      const next = Math.min(
        Math.max(delay * 2, REASSERT_NOTICE_FIRST_DELAY_MS),
        REASSERT_NOTICE_MAX_DELAY_MS,
      );
      if (next === REASSERT_NOTICE_MAX_DELAY_MS && delay < next)
        this.#log.warn(
          { err: error, node: nodeId },
          'cannot tell a node to register its consumers again: still trying',
        );
      setTimeout(() => this.#nodeUp(nodeId, next), next).unref();
    });
  }

  /**
   * This replica leads now: owners of suspected nodes are suspended (those of nodes known gone given
   * up) from this node's view, which may differ from the last leader's.
   */
  leaderTookOver(actor: QueueActor): void {
    this.#driveMembership(actor.groupId);
    this.#checkOwnersOf(actor);
  }

  // ------------------------------------------------------------------------------ the link's server side

  readonly #onRequest: QueueLinkHandler = (op, group, body, _from, headroom = 0) => {
    switch (op) {
      case QueueOp.command:
      case QueueOp.commandBinary: {
        // Decoded here, synchronously: a body that does not decode closes the stream it came on.
        // An enqueue is proposed in the bytes it came in (the frame's header makes room for the
        // entry's).
        let command: QueueCommand;
        try {
          command = decodeForwarded(body, headroom);
        } catch (error) {
          throw new QueueLinkFrameError(`queue command does not decode: ${(error as Error).message}`);
        }
        const answer = op === QueueOp.command ? encodeCommandAnswer : encodeBinaryAnswer;
        const leading = this.#leadingOrElected(group);
        if (leading instanceof Promise)
          return leading.then((actor) => this.#runForwarded(actor, command, answer));
        return this.#runForwarded(leading, command, answer);
      }
      case QueueOp.counts: {
        const leading = this.#leadingOrElected(group);
        if (leading instanceof Promise) return leading.then((actor) => encodeCounts(actor.counts()));
        return encodeCounts(leading.counts());
      }
      case QueueOp.deliver:
      case QueueOp.cancelled:
      case QueueOp.reassert:
        this.#runSend(op, group, body);
        return EMPTY;
      case QueueOp.batch: {
        // Each send as if it came alone, in order; a body that does not decode closes the stream.
        const sends = readBatch(body);
        const outcomes: BatchedOutcome[] = new Array(sends.count);
        for (let i = 0; i < sends.count; i++)
          outcomes[i] = this.#runBatchedSend(sends.op(i), sends.group(i), body, sends.start(i), sends.end(i));
        return encodeBatchAnswer(outcomes);
      }
      case QueueOp.status:
        return encodeJsonBody(this.#localStatus(this.#leading(group).groupId));
      case QueueOp.transfer: {
        const to = decodeText(body, 'transfer target');
        this.#leading(group);
        return this.#transferLocally(group, to) ? EMPTY : TRANSFER_TARGET_BEHIND;
      }
      default:
        throw new QueueLinkFrameError(`unknown queue op ${op}`);
    }
  };

  /** A leader's send to a channel here (synchronous: its answer is empty); throws its refusal. */
  #runSend(op: number, group: string, bytes: Uint8Array, start = 0, end = bytes.byteLength): void {
    switch (op) {
      case QueueOp.deliver: {
        const delivery = this.#deliveryReader.read(bytes, start, end);
        const channel = this.#host.localChannel(delivery.owner);
        if (channel === undefined) throw new QueueLinkError(QueueLinkCode.ownerGone, delivery.owner);
        const handle = this.#handleOfGroup(group);
        channel.deliver(
          handle,
          delivery.tag,
          delivery.id,
          delivery.redelivered,
          delivery.deliveryCount,
          delivery.message,
        );
        return;
      }
      case QueueOp.cancelled: {
        const { owner, tag } = decodeCancelled(bytes.subarray(start, end));
        const channel = this.#host.localChannel(owner);
        if (channel !== undefined) channel.consumerCancelled(this.#handleOfGroup(group), tag);
        return;
      }
      case QueueOp.reassert:
        this.#host.reassertConsumers();
        return;
      default:
        // A later version's send in a batch: refused alone, as its call of its own would be.
        throw new QueueLinkError(UNKNOWN_MESSAGE_CODE, `op ${op} is not a send this node takes in a batch`);
    }
  }

  /** One send of a batch: done, or refused as its call of its own would have been answered. */
  #runBatchedSend(op: number, group: string, bytes: Uint8Array, start: number, end: number): BatchedOutcome {
    try {
      this.#runSend(op, group, bytes, start, end);
      return BATCHED_DONE;
    } catch (error) {
      if (error instanceof QueueLinkFrameError) throw error;
      return { ok: false, ...answerError(error, this.#log) };
    }
  }

  // ------------------------------------------------------------------------------ operator reads and verbs

  /** The status of a group led here. */
  #localStatus(groupId: string): GroupStatus {
    const group = this.#groups.get(groupId);
    const actor = this.#host.replica(groupId);
    // Only a replicated queue has a group; `status` refuses the others before asking.
    if (group === undefined) throw new QueueLinkError(QueueLinkCode.unknownGroup, `no group ${groupId} here`);
    const conf = group.membership;
    const progress = group.progress();
    const replicas: ReplicaStatus[] = [];
    for (const node of [...conf.voters, ...conf.learners]) {
      const pr = progress.get(node);
      replicas.push({
        node,
        role: node === this.selfId ? 'leader' : conf.learners.includes(node) ? 'learner' : 'follower',
        match: pr?.match ?? 0,
        active: pr?.active ?? false,
      });
    }
    return {
      leader: actor?.leaderId ?? this.selfId,
      term: group.term,
      commitIndex: group.commitIndex,
      replicas,
    };
  }

  /** The group's status as its leader reports it (`quorum_status`). */
  async status(record: QueueRecord): Promise<GroupStatus> {
    if (!isReplicatedQueue(record)) throw notReplicatedError(record);
    const actor = this.#host.replica(record.groupId);
    if (actor?.isLeader) return this.#localStatus(record.groupId);
    const handle = this.handle(record);
    const candidates = [handle.leader, ...this.membersOf(record)].filter(
      (id): id is string => id !== undefined && id !== this.selfId,
    );
    let lastError: unknown = new Error('no replica reachable');
    for (const peer of new Set(candidates)) {
      try {
        return decodeGroupStatus(
          await this.#cluster.queueLink.call(peer, QueueOp.status, record.groupId, EMPTY, 5_000),
        );
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  }

  /**
   * Ask the group's leader to hand its leadership to `to` (one of its voters). Resolves false when
   * the leader did not ask because `to` does not hold its whole log yet (see
   * `RaftGroupLog.caughtUp`): ask again once it has caught up. A leader of an earlier version
   * always asks (its answer is empty).
   */
  async transferLeadership(record: QueueRecord, to: string): Promise<boolean> {
    const actor = this.#host.replica(record.groupId);
    if (actor?.isLeader) return this.#transferLocally(record.groupId, to);
    const leader = this.handle(record).leader;
    if (leader === undefined || leader === this.selfId)
      throw new Error(`queue '${record.name}' has no known leader`);
    const answer = await this.#cluster.queueLink.call(
      leader,
      QueueOp.transfer,
      record.groupId,
      new TextEncoder().encode(to),
      5_000,
    );
    return answer.byteLength === 0;
  }

  /** Ask the group led here to move to `to` if `to` holds its whole log; whether it was asked. */
  #transferLocally(groupId: string, to: string): boolean {
    const group = this.#groups.get(groupId);
    if (group === undefined) return true; // not a Raft group of this node's: nothing to move
    if (!group.caughtUp(to)) return false;
    group.transferLeadership(to);
    return true;
  }

  /** A forwarded command run on the leader here, its answer (or NOT_LEADER) for the caller. */
  #runForwarded(
    actor: QueueActor,
    command: QueueCommand,
    answer: (reply: QueueReply, message: StoredMessage | undefined) => Uint8Array,
  ): Promise<Uint8Array> {
    return actor.run(command).then(
      (result) => answer(result.reply, (result as GotApplyResult).message),
      (error: unknown) => {
        if (error instanceof NotLeaderError)
          throw new QueueLinkError(QueueLinkCode.notLeader, error.leader ?? '');
        throw error;
      },
    );
  }

  /**
   * The replica of `group` if it leads here; else, while its replica here knows no leader, the
   * same once the election ends (`LEADERLESS_HOLD_MS`), if this replica won it; else the answer that
   * sends the caller elsewhere. Synchronous when it need not wait: handlers start each request in
   * arrival order, and requests held here are let go in the order they came.
   */
  #leadingOrElected(group: string): QueueActor | Promise<QueueActor> {
    const actor = this.#host.replica(group);
    if (actor === undefined || actor.isLeader || actor.leaderId !== undefined)
      return leadingOrRefused(actor, group);
    // Looked up again after the wait: the replica may have been replaced meanwhile.
    return actor.whenLeaderKnown(LEADERLESS_HOLD_MS).then(() => this.#leading(group));
  }

  /** The replica of `group` if it leads here; else the answer that sends the caller elsewhere. */
  #leading(group: string): QueueActor {
    return leadingOrRefused(this.#host.replica(group), group);
  }

  #handleOfGroup(group: string): ClusterQueue {
    const known = this.#handles.get(group);
    if (known !== undefined) return known;
    for (const record of this.#host.metadata.queues())
      if (record.groupId === group) return this.handle(record);
    throw new QueueLinkError(QueueLinkCode.unknownGroup, `no queue with group ${group}`);
  }

  // ------------------------------------------------------------------------------ replicas

  /**
   * Bring the replicas running here in line with the records: start those this node is listed for,
   * drop those it no longer is (once the group let it go). Runs one pass at a time; a call during a
   * pass makes another pass follow.
   */
  reconcileReplicas(): Promise<void> {
    if (this.#reconciling !== undefined) {
      this.#reconcileAgain = true;
      return this.#reconciling;
    }
    const pass = async (): Promise<void> => {
      do {
        this.#reconcileAgain = false;
        await this.#reconcileOnce();
      } while (this.#reconcileAgain && !this.#stopped);
    };
    this.#reconciling = pass().finally(() => {
      this.#reconciling = undefined;
    });
    return this.#reconciling;
  }

  async #reconcileOnce(): Promise<void> {
    const records = this.#host.metadata.queues();
    // Handles of queues deleted without this node applying their deletion (a metadata snapshot
    // replaced it all) go; checked before any await, while `records` is the metadata's.
    const known = new Set<string>();
    for (const record of records) known.add(record.groupId);
    for (const groupId of this.#handles.keys()) if (!known.has(groupId)) this.#handles.delete(groupId);
    const listed = new Set<string>();
    const toStart: QueueRecord[] = [];
    for (const record of records) {
      const members = this.membersOf(record);
      const handle = this.#handles.get(record.groupId);
      if (handle !== undefined && handle.record !== record) handle.record = record;
      if (!members.includes(this.selfId)) continue;
      listed.add(record.groupId);
      this.#settledRemovals.delete(record.groupId); // added back: a later removal is checked anew
      if (this.#host.replica(record.groupId) === undefined) toStart.push(record);
    }
    // Started side by side, a bounded number at a time: each open waits on syncs of the node's log
    // store, and replicas opening together share them (one batch, one sync per host turn), where
    // one after another cost a sync or two each (a burst of declares elsewhere queued up here).
    await eachConcurrently(toStart, REPLICA_STARTS_AT_ONCE, async (record) => {
      if (this.#stopped || this.#host.replica(record.groupId) !== undefined) return;
      try {
        await this.#host.startReplica(record, replicaStart(record, this.membersOf(record), this.selfId));
      } catch (error) {
        this.#log.warn({ err: error, queue: record.name, vhost: record.vhost }, 'replica did not start');
      }
    });
    for (const actor of [...this.#host.replicas()]) {
      if (listed.has(actor.groupId)) continue;
      const record = this.#host.metadata.queue(actor.vhost, actor.name);
      if (record === undefined || record.groupId !== actor.groupId) continue; // deleted: stopped elsewhere
      const group = this.#groups.get(actor.groupId);
      const removed =
        group === undefined ||
        group.role === 'removed' ||
        (!group.membership.voters.includes(this.selfId) && !group.membership.learners.includes(this.selfId));
      if (!removed) continue;
      if (group !== undefined && !this.#removalSettled(record, group)) continue;
      this.#settledRemovals.delete(actor.groupId);
      try {
        await this.#host.dropReplica(record);
      } catch (error) {
        this.#log.warn({ err: error, queue: record.name }, 'replica not dropped');
      }
    }
  }

  /**
   * Whether this node's replica, removed from its group (it applied the change), may destroy its
   * data now. Only once the group's leader — one whose configuration no longer lists this node —
   * reports every remaining member holding everything this replica applied, the removal with it.
   *
   * The removal commits on the old configuration's quorum, which may be this node and the leader
   * alone while another member is down and behind (chaos seed 214: n1). That member still counts
   * this node a voter. Were the data gone and this node added back, its replica would start empty
   * under the same Raft id (Raft assumes an id never comes back without its state), grant the
   * lagging member's vote requests, and make it leader without the entries only the old quorum
   * had: committed messages gone. Kept until then, a replica added back carries on with its log.
   * The leader is asked in the background (each second's membership check comes back here).
   */
  #removalSettled(record: QueueRecord, group: RaftGroupLog<QueueCommand, QueueApplyResult>): boolean {
    const groupId = record.groupId;
    const applied = group.appliedIndex;
    // Settled at this applied index: nothing applied since (an add back would have been).
    if (this.#settledRemovals.get(groupId) === applied) return true;
    if (this.#checkingRemovals.has(groupId)) return false;
    this.#checkingRemovals.add(groupId);
    this.status(record).then(
      (status) => {
        this.#checkingRemovals.delete(groupId);
        if (this.#stopped) return;
        const stillListed = status.replicas.some((r) => r.node === this.selfId);
        const behind = status.replicas.filter((r) => r.match < applied).map((r) => r.node);
        if (!stillListed && behind.length === 0) {
          this.#settledRemovals.set(groupId, applied);
          this.#keptRemovals.delete(groupId);
          void this.reconcileReplicas();
        } else if (!this.#keptRemovals.has(groupId)) {
          this.#keptRemovals.add(groupId);
          this.#log.info(
            { queue: record.name, vhost: record.vhost, applied, behind, stillListed },
            'replica removed from its group: its data stays until every remaining member has the removal',
          );
        }
      },
      () => {
        this.#checkingRemovals.delete(groupId); // no leader answered: asked again next second
      },
    );
    return false;
  }

  // ------------------------------------------------------------------------------ membership upkeep

  /** Every second: each group led here moves one step toward its record's members. */
  #checkMemberships(): void {
    if (this.#stopped) return;
    this.#pruneRemoteSinks();
    if (++this.#ownerChecks % 60 === 0) this.#loggedGiveUps.clear();
    this.#checkOwners();
    let stray = false;
    for (const [groupId, group] of this.#groups) {
      if (group.role === 'leader') this.#driveMembership(groupId);
      else if (group.role === 'removed') stray = true;
    }
    if (stray) void this.reconcileReplicas();
  }

  /** Forget the sinks of remote owners no queue led here still has (closed channels). */
  #pruneRemoteSinks(): void {
    if (this.#remoteSinks.size === 0) return;
    const live = new Set<string>();
    for (const actor of this.#host.replicas())
      if (actor.isLeader) for (const owner of actor.ownerIds()) live.add(owner);
    for (const owner of this.#remoteSinks.keys()) if (!live.has(owner)) this.#remoteSinks.delete(owner);
  }

  /** A record's members changed (or its group got a leader here): move toward them now. */
  pokeMembership(groupId: string): void {
    this.#driveMembership(groupId);
  }

  #driveMembership(groupId: string): void {
    const group = this.#groups.get(groupId);
    if (group === undefined || group.role !== 'leader' || this.#changing.has(groupId) || this.#stopped)
      return;
    const actor = this.#host.replica(groupId);
    if (actor === undefined) return;
    const record = this.#host.metadata.queue(actor.vhost, actor.name);
    if (record === undefined || record.groupId !== groupId) return;
    const wanted = this.membersOf(record);
    const conf = group.membership;
    if (conf.votersOutgoing.length > 0) return; // a joint configuration is being left
    const change = nextMembershipChange({
      members: wanted.map((id) => ({ id })),
      conf,
      progress: group.progress(),
      appliedIndex: Math.max(0, group.appliedIndex - CAUGHT_UP_SLACK),
      maxVoters: Math.max(wanted.length, 1),
    });
    // Nothing to change. (Leaders move back only by a rebalance, never here: a flapping node must
    // not drag them back and forth.)
    if (change === undefined) return;
    if (change.type === 'remove' && change.nodeId === this.selfId) {
      // The leader leaves its own group: hand the leadership over first, the next leader removes us.
      // To the wanted voter that answers and is furthest along (handover-target.ts). None
      // answering: keep leading, and try again at the next check.
      const next = handOverTarget({
        self: this.selfId,
        voters: conf.voters,
        progress: group.progress(),
        eligible: (id) => wanted.includes(id),
      });
      if (next !== undefined) group.transferLeadership(next);
      return;
    }
    this.#changing.add(groupId);
    this.#log.info({ queue: record.name, vhost: record.vhost, change }, 'queue membership change');
    group.changeMembership([change]).then(
      () => {
        this.#changing.delete(groupId);
        this.#driveMembership(groupId); // the next step at once (a fresh queue gets its replicas fast)
      },
      (error: unknown) => {
        this.#changing.delete(groupId);
        this.#log.debug({ err: error, queue: record.name }, 'queue membership change failed (retried)');
      },
    );
  }

  /**
   * Resolves once `groupId`'s voters are its record's members (and, for a founded group, which has
   * them from the start, once it has a leader), or after `timeoutMs`.
   */
  async awaitMembers(record: QueueRecord, timeoutMs: number): Promise<boolean> {
    const wanted = this.membersOf(record);
    const start = Date.now();
    const deadline = start + timeoutMs;
    const founding = record.founders?.[0] === this.selfId;
    let recampaignMs = RECAMPAIGN_FIRST_MS;
    let lastCampaign = start;
    for (;;) {
      const group = this.#groups.get(record.groupId);
      if (group === undefined) return false;
      const voters = group.membership.voters;
      const led = record.founders === undefined || group.leader !== undefined;
      if (led && voters.length === wanted.length && wanted.every((id) => voters.includes(id))) return true;
      if (Date.now() > deadline || this.#stopped) return false;
      if (founding && !led && Date.now() - lastCampaign >= recampaignMs) {
        // The first vote requests went out when this replica opened, maybe before the others'
        // replicas were open (their node applies the declare a little later): those were dropped.
        group.campaignIfLeaderless();
        lastCampaign = Date.now();
        recampaignMs *= 2;
      }
      this.#driveMembership(record.groupId);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

const EMPTY = new Uint8Array(0);

/** Runs `task` on every item, at most `limit` at a time; resolves when all have settled. */
async function eachConcurrently<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await task(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/** `actor` if it leads its group; else the link error that sends the caller elsewhere. */
function leadingOrRefused(actor: QueueActor | undefined, group: string): QueueActor {
  if (actor === undefined)
    throw new QueueLinkError(QueueLinkCode.unknownGroup, `no replica of ${group} here`);
  if (!actor.isLeader) throw new QueueLinkError(QueueLinkCode.notLeader, actor.leaderId ?? '');
  return actor;
}
