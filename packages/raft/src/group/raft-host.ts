import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { LogClosedError } from '../errors.ts';
import type { Message, NodeId, RaftConfig, RaftRandom } from '../raft/types.ts';
import { MessageType } from '../raft/types.ts';
import type { CommandCodec, ReplicatedLog, ReplicatedLogFactory } from '../replicated-log.ts';
import type { LogStore } from '../storage/log-store.ts';
import { GroupAlreadyOpenError } from './errors.ts';
import type { HostedReplica, ReplicaHost } from './group-replica.ts';
import { PeerOutbox } from './peer-outbox.ts';
import type { RaftGroupLogOptions } from './raft-group-log.ts';
import { RaftGroupLog } from './raft-group-log.ts';
import type { PeerBatch, QuiesceNotice, Transport } from './transport.ts';

/** The Raft settings a host applies to every group it runs (ids and applied indexes are its own). */
export type RaftTuning = Omit<RaftConfig, 'id' | 'applied'>;

export interface RaftHostOptions {
  /** This node's id: the replica id of every group on this host. */
  readonly nodeId: NodeId;
  /** The node's one log store: every group's entries, hard state and snapshots. */
  readonly logStore: LogStore;
  /** How to reach the other nodes; none for a node whose groups all have one voter. */
  readonly transport?: Transport;
  /** Milliseconds per Raft tick (default `DEFAULT_TICK_MS`); election timeouts and heartbeats count ticks. */
  readonly tickMs?: number;
  /** Raft settings for every group (election/heartbeat ticks, flow-control bounds). */
  readonly raft?: RaftTuning;
  /**
   * Bound on the bytes this node holds in flight, in bytes (default `DEFAULT_MAX_BYTES_IN_FLIGHT`):
   * the entry data of proposals not yet applied plus the batches handed to the transport and not yet
   * sent. Past it, new proposals wait (their promises stay pending) until enough drains; Raft's own
   * per-follower and uncommitted bounds still apply inside each group.
   */
  readonly maxBytesInFlight?: number;
  /**
   * Bound on the proposals waiting for the in-flight bound, a count (default
   * `DEFAULT_MAX_WAITING_PROPOSALS`). Past it a proposal is refused at once with
   * `AdmissionQueueFullError` (nothing appended; retry later) instead of waiting: a node that cannot
   * drain (its store or peers stalled) no longer holds every command sent to it meanwhile.
   */
  readonly maxWaitingProposals?: number;
  /** Election jitter (default: Math.random). */
  readonly random?: RaftRandom;
  /** Default clock for the leader's entry timestamps (default: the wall clock). */
  readonly clock?: Clock;
}

/** Default Raft tick: 100 ms, so the default 10-tick election timeout is 1–2 s. */
export const DEFAULT_TICK_MS = 100;
/** Default per-node bound on bytes in flight: 64 MiB. */
export const DEFAULT_MAX_BYTES_IN_FLIGHT = 64 * 1024 * 1024;
/**
 * Default per-node bound on proposals waiting for the in-flight bound: 65,536 (each holds its
 * command until admitted: for a queue's enqueue, a message and its body).
 */
export const DEFAULT_MAX_WAITING_PROPOSALS = 65_536;

/** Counters for tests, benchmarks and management. */
export interface RaftHostStats {
  /** Replicas open on this host. */
  readonly groups: number;
  /** Replicas being ticked (not quiesced). */
  readonly activeGroups: number;
  /** See `RaftHostOptions.maxBytesInFlight`. */
  readonly bytesInFlight: number;
  /** Proposals waiting for the in-flight bound. */
  readonly waitingProposals: number;
  /** Batches handed to the transport since the host started (one per peer per flush). */
  readonly batchesSent: number;
  /** Raft messages handed to the transport since the host started (every type, every group). */
  readonly messagesSent: number;
  /** Of `messagesSent`, appends (AppendEntries, with or without entries). */
  readonly appendsSent: number;
  /** Entries carried by those appends. */
  readonly entriesSent: number;
  /** Append rejections received from peers (each makes a leader walk back and send entries again). */
  readonly appendRejectsReceived: number;
  /** Messages folded into another of the same batch (see `PeerOutbox`), so not counted in `messagesSent`. */
  readonly messagesFolded: number;
  /** Writes the transport made to its connections (undefined when it does not count them). */
  readonly transportWrites: number | undefined;
  /** Ticks of the host's timer since it started (a tick runs only while a group is active). */
  readonly ticks: number;
}

const mathRandom: RaftRandom = { nextInt: (bound) => Math.floor(Math.random() * bound) };

/**
 * Runs many Raft groups on one node (thousands: one per queue, plus the metadata group) over the
 * node's one `LogStore` and one `Transport`.
 *
 * - One I/O turn, all groups: a group with work is marked dirty; at the end of the turn
 *   (setImmediate) the host pumps every dirty group's Ready. Their writes join the log store's one
 *   batch (one transaction, one sync for all groups); their messages join one batch per peer, sent
 *   once at the end of the turn. When a store batch is durable, every group waiting on it finishes
 *   its Ready (releasing votes and acks, applying) and pumps its next one at once; what that sends
 *   leaves with the turn's batches, never in a batch of its own.
 * - One append per group per peer per turn: a group's appends of the several Readys its pipeline
 *   took in one turn are folded into one carrying every entry, and its heartbeats dropped while
 *   appends flow (`PeerOutbox`).
 * - One timer per host, ticking only ACTIVE groups. A leader whose members have all caught up
 *   quiesces: it stops ticking and tells its followers (a `QuiesceNotice` carrying the commit), who
 *   stop ticking too. A proposal or any message wakes a group (except a heartbeat response that
 *   leaves a quiesced leader still caught up); so does a transport's "peer down" for the groups
 *   that peer leads, which forget it and elect a new leader within a few ticks. The timer itself
 *   stops while no group is active: 10,000 quiesced groups cost no CPU.
 * - Heartbeats are coalesced per peer: every group's heartbeat of one tick leaves in that tick's
 *   one batch per peer.
 * - A per-node bound on bytes in flight (see `RaftHostOptions.maxBytesInFlight`).
 */
export class RaftHost {
  readonly nodeId: NodeId;
  readonly logStore: LogStore;
  readonly #transport: Transport | undefined;
  readonly #tickMs: number;
  readonly #tuning: RaftTuning;
  readonly #maxBytesInFlight: number;
  readonly #maxWaitingProposals: number;
  readonly #random: RaftRandom;
  readonly #clock: Clock;

  readonly #groups = new Map<string, { replica: HostedReplica; close: () => Promise<void> }>();
  readonly #active = new Set<HostedReplica>();
  #dirty = new Set<HostedReplica>();
  #turnScheduled = false;
  /** A drain of the admission queue is scheduled (see `#account`). */
  #drainScheduled = false;
  readonly #outboxes = new Map<NodeId, PeerOutbox>();
  /** The store batch the latest Ready joined, and the replicas waiting on it. */
  #waitingOn: Promise<void> | undefined;
  #waiters: HostedReplica[] = [];
  #timer: NodeJS.Timeout | undefined;
  #bytesInFlight = 0;
  /**
   * Proposals waiting for the in-flight bound, oldest first (`#admittedHead` is the next); at most
   * `#maxWaitingProposals` of them.
   */
  #admission: (() => void)[] = [];
  #admissionHead = 0;
  #closed = false;
  #batchesSent = 0;
  #messagesSent = 0;
  #appendsSent = 0;
  #entriesSent = 0;
  #appendRejectsReceived = 0;
  #messagesFolded = 0;
  #ticks = 0;

  /** The host's face to its replicas (kept off the public API). */
  readonly #services: ReplicaHost;

  constructor(options: RaftHostOptions) {
    this.nodeId = options.nodeId;
    this.logStore = options.logStore;
    this.#transport = options.transport;
    this.#tickMs = options.tickMs ?? DEFAULT_TICK_MS;
    this.#maxBytesInFlight = options.maxBytesInFlight ?? DEFAULT_MAX_BYTES_IN_FLIGHT;
    this.#maxWaitingProposals = options.maxWaitingProposals ?? DEFAULT_MAX_WAITING_PROPOSALS;
    // A group's own uncommitted bound above the node's in-flight bound (unless tuned): a burst into
    // one group then waits in the node's admission queue instead of being dropped by its core.
    this.#tuning = { maxUncommittedEntriesBytes: 2 * this.#maxBytesInFlight, ...(options.raft ?? {}) };
    this.#random = options.random ?? mathRandom;
    this.#clock = options.clock ?? systemClock;
    if (!(this.#tickMs > 0)) throw new RangeError(`tickMs must be positive, got ${this.#tickMs}`);
    if (!(this.#maxBytesInFlight > 0)) throw new RangeError('maxBytesInFlight must be positive');
    if (!(this.#maxWaitingProposals >= 1)) throw new RangeError('maxWaitingProposals must be at least 1');
    this.#services = {
      nodeId: this.nodeId,
      send: (groupId, m) => this.#send(groupId, m),
      markDirty: (replica) => this.#markDirty(replica),
      awaitDurable: (written, replica) => this.#awaitDurable(written, replica),
      wake: (replica) => this.#wake(replica),
      account: (bytes) => this.#account(bytes),
    };
    if (this.#transport !== undefined) {
      if (this.#transport.nodeId !== this.nodeId) {
        throw new RangeError(`transport of ${this.#transport.nodeId} given to host ${this.nodeId}`);
      }
      this.#transport.onReceive((batch) => this.#receive(batch));
      this.#transport.onPeerDown((peer) => this.#peerDown(peer));
    }
  }

  /**
   * A log for group `groupId` on this node (unopened). `voters` default to this node alone: a
   * one-voter group, which elects itself as soon as it opens. Every replica of a group must be
   * created with the same voters.
   */
  createLog<C, R>(
    groupId: string,
    codec: CommandCodec<C>,
    options: Omit<RaftGroupLogOptions, 'host'> = {},
  ): RaftGroupLog<C, R> {
    return new RaftGroupLog<C, R>(groupId, codec, {
      clock: this.#clock,
      ...options,
      host: this,
    });
  }

  /** A `ReplicatedLogFactory` of one-voter groups on this host (a single node's queues). */
  factory(options: Omit<RaftGroupLogOptions, 'host' | 'voters'> = {}): ReplicatedLogFactory {
    return {
      create: <C, R>(groupId: string, codec: CommandCodec<C>): ReplicatedLog<C, R> =>
        this.createLog<C, R>(groupId, codec, options),
    };
  }

  get stats(): RaftHostStats {
    return {
      groups: this.#groups.size,
      activeGroups: this.#active.size,
      bytesInFlight: this.#bytesInFlight,
      waitingProposals: this.#admission.length - this.#admissionHead,
      batchesSent: this.#batchesSent,
      messagesSent: this.#messagesSent,
      appendsSent: this.#appendsSent,
      entriesSent: this.#entriesSent,
      appendRejectsReceived: this.#appendRejectsReceived,
      messagesFolded: this.#messagesFolded,
      transportWrites: this.#transport?.writes,
      ticks: this.#ticks,
    };
  }

  /** Close every group's log (pending proposals reject with `LogClosedError`) and stop the timer. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const closing = [...this.#groups.values()].map((group) => group.close());
    await Promise.all(closing);
    // Proposals still waiting for the in-flight bound run now, and reject: their logs are closed.
    const waiting = this.#admission.slice(this.#admissionHead);
    this.#admission = [];
    this.#admissionHead = 0;
    for (const propose of waiting) propose();
    this.#stopTimer();
    await this.#transport?.close();
  }

  // ------------------------------------------------------------------------------ for RaftGroupLog

  /** @internal The services replicas call; for `RaftGroupLog` only. */
  get services(): ReplicaHost {
    return this.#services;
  }

  /** @internal Settings for new replicas. */
  get tuning(): RaftTuning {
    return this.#tuning;
  }

  /** @internal */
  get random(): RaftRandom {
    return this.#random;
  }

  /** @internal Register an opened replica; `close` is how the host closes its log. */
  register(replica: HostedReplica, close: () => Promise<void>): void {
    if (this.#closed) throw new LogClosedError(replica.groupId);
    if (this.#groups.has(replica.groupId)) throw new GroupAlreadyOpenError(replica.groupId);
    this.#groups.set(replica.groupId, { replica, close });
    this.#wake(replica);
    this.#markDirty(replica);
  }

  /** @internal Whether a replica of the group is open here. */
  hasGroup(groupId: string): boolean {
    return this.#groups.has(groupId);
  }

  /** @internal Forget a replica (closed or failed); messages for it are dropped from now on. */
  unregister(replica: HostedReplica): void {
    if (this.#groups.get(replica.groupId)?.replica === replica) this.#groups.delete(replica.groupId);
    this.#active.delete(replica);
    this.#dirty.delete(replica);
  }

  /** @internal Whether a proposal may go ahead now (the node is under its in-flight bound). */
  underInFlightBound(): boolean {
    return this.#bytesInFlight < this.#maxBytesInFlight && this.#admissionHead === this.#admission.length;
  }

  /**
   * @internal Run `propose` once the node is under its in-flight bound, in arrival order; false
   * (and `propose` dropped, for the caller to refuse) when `maxWaitingProposals` already wait.
   */
  whenUnderInFlightBound(propose: () => void): boolean {
    if (this.#admission.length - this.#admissionHead >= this.#maxWaitingProposals) return false;
    this.#admission.push(propose);
    this.#drainAdmission();
    return true;
  }

  /** @internal See `RaftHostOptions.maxWaitingProposals`. */
  get maxWaitingProposals(): number {
    return this.#maxWaitingProposals;
  }

  // ------------------------------------------------------------------------------ the turn

  #markDirty(replica: HostedReplica): void {
    this.#dirty.add(replica);
    this.#turnSoon();
  }

  readonly #turn = (): void => {
    this.#turnScheduled = false;
    this.#pumpDirty();
    this.#flush();
  };

  #pumpDirty(): void {
    while (this.#dirty.size > 0) {
      const dirty = this.#dirty;
      this.#dirty = new Set();
      for (const replica of dirty) this.#guard(replica, () => replica.pump());
    }
  }

  #awaitDurable(written: Promise<void>, replica: HostedReplica): void {
    if (written !== this.#waitingOn) {
      // The first Ready of a new store batch: one continuation per batch, not per group.
      const waiters: HostedReplica[] = [];
      this.#waitingOn = written;
      this.#waiters = waiters;
      written.then(
        () => this.#onDurable(written, waiters),
        (error: unknown) => {
          for (const each of waiters) each.fail(error instanceof Error ? error : new Error(String(error)));
        },
      );
    }
    this.#waiters.push(replica);
  }

  #onDurable(written: Promise<void>, waiters: readonly HostedReplica[]): void {
    for (const replica of waiters) {
      this.#guard(replica, () => {
        replica.finish(written);
        replica.pump();
      });
    }
    this.#pumpDirty();
    this.#turnSoon();
  }

  #guard(replica: HostedReplica, action: () => void): void {
    try {
      action();
    } catch (error) {
      // A broken invariant or a machine that cannot restore: this replica stops, the others go on.
      this.unregister(replica);
      replica.fail(error instanceof Error ? error : new Error(String(error)));
    }
  }

  // ------------------------------------------------------------------------------ messages

  #outbox(peer: NodeId): PeerOutbox {
    let outbox = this.#outboxes.get(peer);
    if (outbox === undefined) {
      outbox = new PeerOutbox(this.#tuning.maxSizePerMsg);
      this.#outboxes.set(peer, outbox);
    }
    return outbox;
  }

  #send(groupId: string, m: Message): void {
    if (this.#transport === undefined) return; // no peers to reach: a one-voter node
    this.#outbox(m.to).push(groupId, m);
  }

  /**
   * Run `#turn` at the end of this event-loop turn: pump the dirty groups, then send the batches.
   * Batches leave only there, never straight from a store batch completing or a tick: whatever else
   * this turn produces for the same peers — other groups' store batches completing,
   * acknowledgements read from the sockets, proposals — joins the same batch, one frame per peer.
   */
  #turnSoon(): void {
    if (!this.#turnScheduled) {
      this.#turnScheduled = true;
      setImmediate(this.#turn);
    }
  }

  #flush(): void {
    const transport = this.#transport;
    if (transport === undefined || this.#outboxes.size === 0) return;
    for (const [peer, outbox] of this.#outboxes) {
      if (outbox.empty) continue;
      const batch: PeerBatch = { from: this.nodeId, messages: outbox.messages, quiesce: outbox.quiesce };
      const bytes = outbox.bytes;
      this.#outboxes.delete(peer);
      this.#account(bytes);
      this.#messagesFolded += outbox.folded;
      this.#count(batch);
      transport.send(peer, batch).then(
        () => this.#account(-bytes),
        () => {
          this.#account(-bytes);
          this.#unreachable(peer, batch);
        },
      );
    }
  }

  #count(batch: PeerBatch): void {
    this.#batchesSent++;
    this.#messagesSent += batch.messages.length;
    for (const { message } of batch.messages) {
      if (message.type !== MessageType.App) continue;
      this.#appendsSent++;
      this.#entriesSent += message.entries.length;
    }
  }

  /** A batch could not reach `peer`: its leaders stop pipelining to it and probe again later. */
  #unreachable(peer: NodeId, batch: PeerBatch): void {
    const seen = new Set<string>();
    for (const { groupId, message } of batch.messages) {
      if (message.type !== MessageType.App || seen.has(groupId)) continue;
      seen.add(groupId);
      const replica = this.#groups.get(groupId)?.replica;
      if (replica === undefined) continue;
      this.#guard(replica, () => replica.core.reportUnreachable(peer));
    }
  }

  #receive(batch: PeerBatch): void {
    if (this.#closed) return;
    for (const { groupId, message } of batch.messages) {
      if (message.reject && message.type === MessageType.AppResp) this.#appendRejectsReceived++;
      const replica = this.#groups.get(groupId)?.replica;
      if (replica === undefined) continue; // not (or no longer) open here; Raft retries
      this.#guard(replica, () => {
        replica.core.step(message);
        // A caught-up leader's heartbeat responses do not wake it: that would ping-pong forever.
        if (replica.quiesced && (message.type !== MessageType.HeartbeatResp || !replica.canQuiesce())) {
          this.#wake(replica);
        }
        this.#markDirty(replica);
      });
    }
    for (const notice of batch.quiesce) {
      const replica = this.#groups.get(notice.groupId)?.replica;
      if (replica === undefined) continue;
      this.#guard(replica, () => {
        if (replica.onQuiesceNotice(notice, batch.from)) this.#quiesce(replica);
      });
    }
    this.#pumpSoon();
  }

  #pumpSoon(): void {
    if (this.#dirty.size > 0) this.#turnSoon();
  }

  /**
   * `peer` is unreachable: every group it leads here forgets it and campaigns soon (see
   * `RaftCore.forgetLeader`), quiesced ones woken first, so its groups get new leaders within a
   * few ticks instead of an election timeout.
   */
  #peerDown(peer: NodeId): void {
    if (this.#closed) return;
    for (const { replica } of this.#groups.values()) {
      if (replica.core.lead !== peer) continue;
      this.#guard(replica, () => {
        this.#wake(replica);
        replica.core.forgetLeader(peer);
        this.#markDirty(replica);
      });
    }
    this.#pumpSoon();
  }

  // ------------------------------------------------------------------------------ ticks and quiescence

  #wake(replica: HostedReplica): void {
    if (replica.quiesced) {
      replica.quiesced = false;
      this.#guard(replica, () => replica.onUnquiesce());
    }
    if (this.#closed) return;
    this.#active.add(replica);
    if (this.#timer === undefined) {
      this.#timer = setInterval(this.#tick, this.#tickMs);
      this.#timer.unref();
    }
  }

  #quiesce(replica: HostedReplica): void {
    replica.quiesced = true;
    this.#active.delete(replica);
    if (this.#active.size === 0) this.#stopTimer();
  }

  readonly #tick = (): void => {
    this.#ticks++;
    for (const replica of this.#active) {
      this.#guard(replica, () => {
        replica.core.tick();
        this.#dirty.add(replica);
      });
    }
    this.#pumpDirty();
    for (const replica of this.#active) {
      if (!replica.canQuiesce()) continue;
      this.#quiesce(replica);
      const notice: QuiesceNotice = {
        groupId: replica.groupId,
        term: replica.core.term,
        commit: replica.core.commitIndex,
      };
      for (const peer of replica.peers()) this.#outbox(peer).quiesce.push(notice);
    }
    // At once (10 times a second, not per message): a quiesce notice must leave before anything
    // the group sends after it, or a follower would read it after an append that woke the group.
    this.#flush();
  };

  #stopTimer(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  // ------------------------------------------------------------------------------ memory bound

  #account(bytes: number): void {
    this.#bytesInFlight += bytes;
    if (bytes < 0 && !this.#drainScheduled && this.#admissionHead < this.#admission.length) {
      // Bytes are released while a replica applies a Ready, before its core has counted the same
      // entries out of its uncommitted bound (that happens in `advance`, after the applies):
      // admitting waiting proposals right here would have the core drop them (GroupOverloaded),
      // en masse in a burst. A microtask runs them once the Ready is finished.
      this.#drainScheduled = true;
      queueMicrotask(this.#drainReleased);
    }
  }

  readonly #drainReleased = (): void => {
    this.#drainScheduled = false;
    this.#drainAdmission();
  };

  #drainAdmission(): void {
    const queue = this.#admission;
    while (this.#admissionHead < queue.length && this.#bytesInFlight < this.#maxBytesInFlight) {
      const propose = queue[this.#admissionHead] as () => void;
      queue[this.#admissionHead++] = noop;
      propose();
    }
    if (this.#admissionHead === queue.length) {
      queue.length = 0;
      this.#admissionHead = 0;
    } else if (this.#admissionHead > 1024 && this.#admissionHead * 2 > queue.length) {
      queue.splice(0, this.#admissionHead);
      this.#admissionHead = 0;
    }
  }
}

function noop(): void {}
