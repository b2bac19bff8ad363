import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { LogClosedError } from '../errors.ts';
import type { Message, NodeId, RaftConfig, RaftRandom } from '../raft/types.ts';
import { MessageType, RAFT_DEFAULTS, RaftRole } from '../raft/types.ts';
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
  /**
   * How many groups per tick may start campaigning after a peer that led them goes down (default
   * `DEFAULT_CAMPAIGNS_PER_TICK`): losing the leader of 9,000 groups at once, a node spreads their
   * campaigns over enough ticks that its event loop keeps up, instead of all within half an
   * election timeout (an election storm: late heartbeats, split votes, terms burnt by thousands).
   */
  readonly campaignsPerTick?: number;
  /** Election jitter (default: Math.random). */
  readonly random?: RaftRandom;
  /** Default clock for the leader's entry timestamps (default: the wall clock). */
  readonly clock?: Clock;
}

/**
 * Default bound on the groups per tick that campaign after their leader's node goes down: 200 (2,000
 * a second per node at the default tick; a campaign costs a few hundred µs of CPU across the
 * group's nodes, so this keeps a failover's elections well under a core).
 */
export const DEFAULT_CAMPAIGNS_PER_TICK = 200;
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
  /** Ticks of the host's timer that ticked a group, since it started (none while every group is quiesced). */
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
  readonly #campaignsPerTick: number;
  /**
   * Peers the transport reported down and not heard from since: their groups' leaders here quiesce
   * without them, and are woken when a batch from them arrives again.
   */
  readonly #down = new Set<NodeId>();
  /**
   * Quiesced replicas whose leader went down, waiting for their turn to tick again (`#release`):
   * those that campaign first, then the others. Until its turn a replica stays quiesced, costing
   * nothing a tick, but it has forgotten its leader, so it grants the campaigns of its peers.
   */
  #turns: { readonly replica: HostedReplica; readonly turn: Turn }[] = [];
  #turnsHead = 0;

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
    this.#campaignsPerTick = options.campaignsPerTick ?? DEFAULT_CAMPAIGNS_PER_TICK;
    if (!(this.#campaignsPerTick >= 1)) throw new RangeError('campaignsPerTick must be at least 1');
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
    if (replica.peers().length === 0) {
      this.#wake(replica);
    } else {
      // Ticking from its turn on, campaignsPerTick a tick: a node restarting with 10,000 replicas
      // would otherwise start 10,000 election timers at once, and their pre-votes would wake every
      // leader of the cluster in the same second.
      this.#queueTurn(replica, 'start');
    }
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
    if (this.#down.size > 0 && this.#down.delete(batch.from)) this.#peerUp(batch.from);
    for (const { groupId, message } of batch.messages) {
      if (message.reject && message.type === MessageType.AppResp) this.#appendRejectsReceived++;
      const replica = this.#groups.get(groupId)?.replica;
      if (replica === undefined) continue; // not (or no longer) open here; Raft retries
      this.#guard(replica, () => {
        replica.core.step(message);
        if (replica.quiesced && this.#wakes(replica, message)) {
          if (this.#answersInTurn(replica, message)) this.#queueTurn(replica, 'answer');
          else this.#wake(replica);
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

  /**
   * Whether `m` (just stepped) wakes quiesced `replica`. A caught-up leader's heartbeat responses do
   * not: that would ping-pong forever. Nor does a follower that still follows its leader wake for
   * another replica's messages (a restarted node's pre-votes, which its lease refuses): woken while
   * its leader sleeps on, it would hear no heartbeat, time out and campaign with the newcomer — the
   * storm a node's return set off, thousands of groups at once. The leader, woken by the same
   * pre-votes, heartbeats the newcomer into following it. (A leader really gone is reported down by
   * the transport, which wakes its followers: see `Transport.onPeerDown`.)
   */
  /**
   * Whether quiesced leader `replica`, woken by `m`, wakes in its turn rather than at once: a vote
   * request from a member (its lease ignored it). A node restarting with thousands of replicas
   * sends thousands of pre-votes within seconds; waking every leader at once had them all
   * heartbeating every tick on two cores, heartbeats late, leaders deposed by check-quorum and the
   * restarted node winning their elections (failover-storm's return phase at 10,000 queues). In
   * turns (campaignsPerTick a tick, as `#peerUp`'s catch-ups), the newcomer's replicas pre-vote in
   * vain a little longer and follow once their leader's heartbeat reaches them.
   */
  #answersInTurn(replica: HostedReplica, m: Message): boolean {
    return (
      replica.core.role === RaftRole.Leader && (m.type === MessageType.PreVote || m.type === MessageType.Vote)
    );
  }

  #queueTurn(replica: HostedReplica, turn: Turn): void {
    this.#turns.push({ replica, turn });
    this.#startTimer();
  }

  #wakes(replica: HostedReplica, m: Message): boolean {
    const core = replica.core;
    if (core.role === RaftRole.Leader)
      return m.type !== MessageType.HeartbeatResp || !replica.canQuiesce(this.#isDown);
    return core.role !== RaftRole.Follower || core.lead === undefined || core.lead === m.from;
  }

  #pumpSoon(): void {
    if (this.#dirty.size > 0) this.#turnSoon();
  }

  /**
   * `peer` is unreachable: every group it leads here forgets it (see `RaftCore.forgetLeader`: no
   * longer bound by its lease, it grants its peers' campaigns) and gets a new leader within a few
   * ticks instead of an election timeout. With thousands of groups this is where an election storm
   * starts (every group ticking and campaigning at once, the event loop seconds late, heartbeats and
   * check-quorum timing out, split votes), so:
   * - one surviving voter of each group campaigns first (`#goesFirst`, the same choice on every
   *   node, spreading the new leaders over the survivors); the others start a whole election
   *   timeout later, as a backup, and rarely split the vote;
   * - quiesced groups (the idle ones: most of them) stay quiesced until their turn, at most
   *   campaignsPerTick a tick, first campaigners first (`#release`): a token bucket over groups;
   * - until it is heard from again, `peer` no longer keeps the leaders here from quiescing.
   */
  #peerDown(peer: NodeId): void {
    if (this.#closed) return;
    this.#down.add(peer);
    const electionTicks = this.#tuning.electionTicks ?? RAFT_DEFAULTS.electionTicks;
    const first: HostedReplica[] = [];
    const later: HostedReplica[] = [];
    for (const { replica } of this.#groups.values()) {
      if (replica.core.lead !== peer) continue;
      const goesFirst = this.#goesFirst(replica);
      this.#guard(replica, () => {
        if (!replica.quiesced) {
          // Busy: it ticks already. The first campaigns within half an election timeout, the other
          // a whole one later.
          const delay = goesFirst
            ? 1 + this.#random.nextInt(Math.max(1, electionTicks >> 1))
            : electionTicks + (electionTicks >> 1) + this.#random.nextInt(electionTicks);
          replica.core.forgetLeader(peer, delay);
          this.#markDirty(replica);
          return;
        }
        // Its election timer runs from its turn on: a whole timeout for the others, so the first
        // campaigner of the group is normally heard before they would campaign.
        replica.core.forgetLeader(peer, electionTicks + this.#random.nextInt(electionTicks));
        (goesFirst ? first : later).push(replica);
      });
    }
    for (const replica of first) this.#turns.push({ replica, turn: 'campaign' });
    for (const replica of later) this.#turns.push({ replica, turn: 'wait' });
    if (this.#turnsHead < this.#turns.length) this.#startTimer();
    this.#pumpSoon();
  }

  /**
   * A tick's share of the replicas waiting for their turn (`#turns`): at most campaignsPerTick of
   * those still without a leader wake; a first campaigner campaigns at once. One that heard from a
   * new leader meanwhile (a message wakes a quiesced replica) needs no turn.
   */
  #release(): void {
    let budget = this.#campaignsPerTick;
    const turns = this.#turns;
    while (budget > 0 && this.#turnsHead < turns.length) {
      const { replica, turn } = turns[this.#turnsHead++] as (typeof turns)[number];
      if (this.#groups.get(replica.groupId)?.replica !== replica) continue; // closed meanwhile
      if (!this.#turnDue(replica, turn)) continue;
      budget--;
      const core = replica.core;
      this.#guard(replica, () => {
        this.#wake(replica);
        if (turn === 'campaign') core.campaign();
        this.#dirty.add(replica);
      });
    }
    if (this.#turnsHead === turns.length) {
      this.#turns = [];
      this.#turnsHead = 0;
    }
  }

  /**
   * Whether `replica`'s turn still has something to do; a turn is taken ticks after it was given,
   * and what happened meanwhile may have made it stale:
   * - 'start': something woke the replica meanwhile (a proposal, a campaign: it is active), or its
   *   leader's quiesce notice quiesced it — waking it then would undo the leader's quiescence;
   * - 'catchUp': the leader woke and caught its returning peer up meanwhile (quiesced again, or
   *   still ticking), or is no longer the leader;
   * - 'answer': the leader woke meanwhile (it answers with its next heartbeat), or no longer leads;
   * - 'campaign', 'wait': the replica heard from a new leader, or campaigns already.
   */
  #turnDue(replica: HostedReplica, turn: Turn): boolean {
    const core = replica.core;
    switch (turn) {
      case 'start':
        return !replica.quiesced && !this.#active.has(replica);
      case 'catchUp':
        return replica.quiesced && core.role === RaftRole.Leader && !replica.canQuiesce(this.#isDown);
      case 'answer':
        return replica.quiesced && core.role === RaftRole.Leader;
      default:
        return core.lead === undefined && core.role === RaftRole.Follower;
    }
  }

  /**
   * Whether this node's replica is the one of its group to campaign first when its leader is down:
   * the group's voters not known down, sorted, one picked by a hash of the group id (alone, or none
   * known: this one).
   */
  #goesFirst(replica: HostedReplica): boolean {
    const voters = replica.core
      .confState()
      .voters.filter((v) => !this.#down.has(v))
      .sort();
    if (voters.length <= 1 || !voters.includes(this.nodeId)) return true;
    return voters[fnv1a(replica.groupId) % voters.length] === this.nodeId;
  }

  /**
   * A batch came from `peer` after it was reported down: the leaders here that quiesced without it
   * caught up wake, so they catch it up (a heartbeat on their next tick, then the entries it missed):
   * campaignsPerTick a tick, as turns (a node back from a crash lags every group it is in).
   */
  #peerUp(peer: NodeId): void {
    for (const { replica } of this.#groups.values()) {
      if (!replica.quiesced) continue;
      // Only the leaders it lags: a word that was wrong (a slow peer reported down, then heard
      // from) must not wake every group of the node.
      const match = replica.core.matchOf(peer);
      if (match !== undefined && match < replica.core.lastIndex)
        this.#turns.push({ replica, turn: 'catchUp' });
    }
    if (this.#turnsHead < this.#turns.length) this.#startTimer();
  }

  readonly #isDown = (node: NodeId): boolean => this.#down.has(node);

  // ------------------------------------------------------------------------------ ticks and quiescence

  #wake(replica: HostedReplica): void {
    if (replica.quiesced) {
      replica.quiesced = false;
      this.#guard(replica, () => replica.onUnquiesce());
    }
    if (this.#closed) return;
    this.#active.add(replica);
    this.#startTimer();
  }

  #startTimer(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setInterval(this.#tick, this.#tickMs);
    this.#timer.unref();
  }

  #quiesce(replica: HostedReplica): void {
    replica.quiesced = true;
    this.#active.delete(replica);
    if (this.#active.size === 0 && this.#turnsHead === this.#turns.length) this.#stopTimer();
  }

  readonly #tick = (): void => {
    if (this.#turnsHead < this.#turns.length) this.#release();
    if (this.#active.size === 0) {
      // Every turn taken was stale (see `#turnDue`): nothing to tick. The timer goes on only for
      // the turns still to come.
      if (this.#turnsHead === this.#turns.length) this.#stopTimer();
      return;
    }
    this.#ticks++;
    for (const replica of this.#active) {
      this.#guard(replica, () => {
        replica.core.tick();
        this.#dirty.add(replica);
      });
    }
    this.#pumpDirty();
    for (const replica of this.#active) {
      if (!replica.canQuiesce(this.#isDown)) continue;
      this.#quiesce(replica);
      const notice: QuiesceNotice = {
        groupId: replica.groupId,
        term: replica.core.term,
        commit: replica.core.commitIndex,
      };
      // Not to a member reported down: it may lag (it is why the leader could quiesce without it),
      // and a notice commits up to `commit` on its receiver, which holds only for a member whose log
      // matches the leader's that far. Heard from again, it wakes the leader (`#peerUp`).
      for (const peer of replica.peers()) {
        if (!this.#down.has(peer)) this.#outbox(peer).quiesce.push(notice);
      }
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

/**
 * Why a replica waits in `#turns`: after its leader went down, to campaign at once ('campaign') or
 * to start its election timer ('wait'); opened, to start ticking ('start'); a leader, to catch up
 * a peer heard from again ('catchUp') or to answer a member's vote request with its heartbeat
 * ('answer').
 */
type Turn = 'campaign' | 'wait' | 'start' | 'catchUp' | 'answer';

function noop(): void {}

/** FNV-1a over a string's UTF-16 code units: a cheap hash that every node computes alike. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
