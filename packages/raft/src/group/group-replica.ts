import { randomBytes } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { LogFailedError, NotLeaderError } from '../errors.ts';
import { ProposalQueue } from '../proposal-queue.ts';
import type { ConfChangeV2 } from '../raft/conf-change.ts';
import { decodeConfChange } from '../raft/conf-change.ts';
import { DropReason, invariant, ProposalDroppedError } from '../raft/errors.ts';
import { RaftCore } from '../raft/raft-core.ts';
import type {
  ConfState,
  Entry,
  Message,
  NodeId,
  RaftConfig,
  RaftRandom,
  Ready,
  Snapshot,
  SoftState,
} from '../raft/types.ts';
import { EMPTY_CONF_STATE, EntryType, MessageType, message, RaftRole } from '../raft/types.ts';
import type { CommandCodec, EntryMeta, Role, RoleChange, StateMachine } from '../replicated-log.ts';
import { BarrierTimeoutError, GroupOverloadedError, MembershipChangeError } from './errors.ts';
import {
  COMMAND_HEADER_BYTES,
  commandBytes,
  commandTs,
  decodeSnapshotData,
  encodeCommandEntry,
  encodeSnapshotData,
  fillCommandHeader,
  isCommandEntry,
  type SnapshotContent,
} from './group-codec.ts';
import type { LogStoreRaftStorage } from './log-store-raft-storage.ts';
import type { QuiesceNotice } from './transport.ts';

/** What a replica needs from the host it runs on. */
export interface ReplicaHost {
  readonly nodeId: NodeId;
  /** Queue a message for its peer's batch of this turn. */
  send(groupId: string, m: Message): void;
  /** The replica may have a Ready: pump it in this turn. */
  markDirty(replica: HostedReplica): void;
  /** Call `replica.finish(written)` once `written` (the store batch holding a Ready) is durable. */
  awaitDurable(written: Promise<void>, replica: HostedReplica): void;
  /** Tick the replica again (it left quiescence). */
  wake(replica: HostedReplica): void;
  /** Bytes of proposals now held by the replica (positive) or settled (negative). */
  account(bytes: number): void;
}

/**
 * Readys of one group in flight to the store at once. The store gathers every group's writes of a
 * turn into one batch and keeps up to `DEFAULT_MAX_BATCHES_IN_FLIGHT` (3) batches in flight plus the
 * one gathering, so a group takes at most one Ready per batch: 4 lets it feed each of them (its
 * next entries, and its appends to followers, go out while its earlier ones sync). Readys that
 * only move the commit index or carry heartbeats hold a place too (they complete in order), so
 * fewer would stall a busy leader's broadcasts behind a single sync again. When all places are
 * taken, what arrives gathers in the core and goes out in one Ready once the oldest completes.
 */
export const GROUP_READIES_IN_FLIGHT = 4;

/** A Ready handed to the store and not completed yet. */
interface OutstandingReady {
  readonly rd: Ready;
  /** The store batch holding its writes; undefined when it wrote nothing. */
  readonly written: Promise<void> | undefined;
  /** Its writes (and every earlier Ready's) are durable, or it has nothing to sync. */
  durable: boolean;
  /** Committed entries of it already applied (they were durable when it was taken). */
  earlyApplied: number;
}

/** The first index `rd` rewrites in the stored log (-1 for a snapshot: all of it). */
function firstRewritten(rd: Ready): number {
  if (rd.snapshot !== undefined) return -1;
  const first = rd.entries[0];
  return first === undefined ? Number.POSITIVE_INFINITY : first.index - 1;
}

/** The face of a replica its host drives, whatever its command types. */
export interface HostedReplica {
  readonly groupId: string;
  readonly core: RaftCore;
  /** Not ticked: idle and caught up (set and cleared by the host only). */
  quiesced: boolean;
  /** Take and process the core's Readys, while it has one and the pipeline has room. */
  pump(): void;
  /**
   * The store batch `written` is durable (and so is every earlier batch): complete the Readys it
   * covers, in order — release, apply, advance.
   */
  finish(written: Promise<void>): void;
  /**
   * Whether the replica may stop ticking: a leader with nothing to do and every member caught up,
   * but those `isDown` says are unreachable (a crashed node must not keep thousands of groups
   * heartbeating; the host wakes them when it hears from that node again).
   */
  canQuiesce(isDown?: (node: NodeId) => boolean): boolean;
  /** A leader's quiesce notice; returns true if this replica quiesced. */
  onQuiesceNotice(notice: QuiesceNotice, from: NodeId): boolean;
  /** The host starts ticking the replica again after quiescence. */
  onUnquiesce(): void;
  /** Stop for good with `error` (pending proposals reject with it). */
  fail(error: Error): void;
  /** The other members of the group (voters and learners), to send quiesce notices to. */
  peers(): readonly NodeId[];
}

/** Reports from a replica to the log that owns it. */
export interface ReplicaEvents {
  /** The role as the log reports it changed. */
  onRole(change: RoleChange): void;
  /** The replica failed (storage, a broken invariant) and stopped. */
  onFailed(error: Error): void;
  /** A Ready was finished (entries may have been applied). */
  onProgress(): void;
}

export interface GroupReplicaOptions<C, R> {
  readonly groupId: string;
  readonly host: ReplicaHost;
  readonly storage: LogStoreRaftStorage;
  readonly machine: StateMachine<C, R>;
  readonly codec: CommandCodec<C>;
  readonly clock: Clock;
  readonly config: Omit<RaftConfig, 'id' | 'applied'>;
  readonly random: RaftRandom;
  readonly events: ReplicaEvents;
}

interface PendingProposal<C, R> {
  readonly raftIndex: number;
  readonly term: number;
  readonly command: C;
  readonly bytes: number;
  readonly resolve: (result: R) => void;
  readonly reject: (error: unknown) => void;
}

/** A membership change this replica proposed as leader, settled when its entry applies. */
interface PendingConfChange {
  readonly raftIndex: number;
  readonly term: number;
  readonly resolve: (confState: ConfState) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * A read barrier: the commit index a leader confirmed, served once applied; -1 while asked, -2 to
 * ask (again) once a leader is known.
 */
interface PendingBarrier {
  index: number;
  readonly resolve: () => void;
}

/**
 * One replica of a Raft group on a host: a `RaftCore` over the group's `LogStoreRaftStorage`, the
 * state machine it drives, and the proposals waiting for their entries to apply.
 *
 * The Ready cycle (`pump` → the store batch is durable → `finish`), pipelined: up to
 * `GROUP_READIES_IN_FLIGHT` Readys are in the store at once, completed strictly in order:
 * 1. `messages` go to the host's per-peer batches at once (they promise nothing about our disk);
 * 2. snapshot, entries and hard state join the store's batch of this turn (one transaction for
 *    every group of the node);
 * 3. committed entries already durable on our disk (and not being rewritten by a Ready in flight)
 *    are applied at once, so a leader's commit latency does not wait for the sync of the entries
 *    proposed meanwhile;
 * 4. once its batch and every earlier one are durable (`finish`): `persistedMessages` (votes,
 *    append acks) are released, the rest of the committed entries applied, `advance()`.
 * A Ready that needs no sync (only a commit index moved, or nothing written) completes as soon as
 * every Ready before it has.
 *
 * Exactly once per incarnation: entries are applied strictly in Raft index order, each once
 * (asserted), starting after the snapshot the machine was restored from. The machine's
 * `EntryMeta.index` is the application index (commands only; see group-codec.ts), `ts` the leader's
 * stamp clamped to never go below the previous applied one — the same on every replica.
 *
 * Proposals resolve when their entry applies here: with the machine's result if the entry at
 * their index is theirs (same term), else with `NotLeaderError` (another leader's entry took the
 * index: it was definitely not committed).
 */
export class GroupReplica<C, R> implements HostedReplica {
  readonly groupId: string;
  readonly core: RaftCore;
  quiesced = false;
  readonly #host: ReplicaHost;
  readonly #storage: LogStoreRaftStorage;
  readonly #machine: StateMachine<C, R>;
  readonly #codec: CommandCodec<C>;
  readonly #clock: Clock;
  readonly #events: ReplicaEvents;

  // The applied position: set from the stored snapshot by the constructor (#adoptSnapshot).
  /** Raft index of the last entry applied (or restored from a snapshot). */
  #appliedRaft = 0;
  /** Application index of the last command applied. */
  #appIndex = 0;
  #appliedTs = 0;
  /**
   * Time from proposing the last command this replica proposed to applying it (committed by a
   * quorum and applied here), ms; 0 until one was. Read from the proposal's own stamp, on the
   * node that proposed it, so no clock skew enters (metrics: `rabbitmq_raft_commit_latency_seconds`).
   */
  #commitLatencyMs = 0;
  #confState: ConfState = EMPTY_CONF_STATE;
  #lastProposedTs = Number.NEGATIVE_INFINITY;
  readonly #pending = new ProposalQueue<PendingProposal<C, R>>();
  /** Readys handed to the store and not completed, oldest first (at most `#depth`). */
  #outstanding: OutstandingReady[] = [];
  /** A leader serves (reports 'leader') once it has applied up to its term's first entry. */
  #termStartIndex = Number.POSITIVE_INFINITY;
  #pendingConf: PendingConfChange | undefined;
  readonly #barriers = new Map<string, PendingBarrier>();
  /**
   * What makes this replica's read-index contexts its own: the leader keeps one pending read per
   * context, so two nodes both asking 'b1' would see the second request ignored (a barrier that
   * times out), and a node restarted while its last life's 'b1' was pending would be answered with
   * that older read's index. The node id keeps nodes apart; a random draw, this replica's lives.
   */
  readonly #barrierPrefix: string;
  #nextBarrier = 0;
  #role: Role = 'follower';
  #roleTerm = -1;
  #roleLeader: string | undefined;
  #stopped = false;

  constructor(options: GroupReplicaOptions<C, R>) {
    this.groupId = options.groupId;
    this.#host = options.host;
    this.#storage = options.storage;
    this.#machine = options.machine;
    this.#codec = options.codec;
    this.#clock = options.clock;
    this.#events = options.events;
    // Drawn from the system, not `options.random`: a seeded test's election timeouts stay as they were.
    this.#barrierPrefix = `${options.host.nodeId}/${randomBytes(6).toString('base64url')}/`;
    const snapshot = options.storage.storedSnapshot();
    // A group's bootstrap snapshot has no machine state: the machine starts fresh.
    this.#adoptSnapshot(snapshot, decodeSnapshotData(snapshot.data));
    this.core = new RaftCore(
      {
        maxReadiesInFlight: GROUP_READIES_IN_FLIGHT,
        ...options.config,
        id: options.host.nodeId,
        applied: snapshot.meta.index,
      },
      options.storage,
      options.random,
    );
    if (options.machine.transferSnapshot !== undefined) {
      options.storage.sendSnapshotsAs((stored) => this.#outgoingSnapshot(stored));
    }
  }

  /** The role as reported to the log's listeners. */
  get role(): Role {
    return this.#role;
  }

  /** Raft index of the last applied entry. */
  get appliedIndex(): number {
    return this.#appliedRaft;
  }

  /** Raft index of the last entry written to this replica's log. */
  get lastWrittenIndex(): number {
    return this.#storage.lastIndex();
  }

  /** Raft index of this replica's latest snapshot (the log before it is truncated). */
  get snapshotIndex(): number {
    return this.#storage.snapshotIndex;
  }

  /** Proposal-to-apply time of the last command this replica proposed, ms (0 before any). */
  get commitLatencyMs(): number {
    return this.#commitLatencyMs;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** The current role change, as `onRole` reports it. */
  roleChange(): RoleChange {
    return { role: this.#role, term: this.#roleTerm, leader: this.#roleLeader };
  }

  /** Append a command; resolves with the machine's result once its entry is applied here. */
  propose(command: C): Promise<R> {
    if (this.#role !== 'leader') return Promise.reject(new NotLeaderError(this.groupId, this.core.lead));
    const codec = this.#codec;
    let encoded: Uint8Array;
    try {
      // With headroom the entry's header is written in front of the command: no second copy.
      encoded =
        codec.encodeWithHeadroom === undefined
          ? codec.encode(command)
          : codec.encodeWithHeadroom(command, COMMAND_HEADER_BYTES);
    } catch (error) {
      return Promise.reject(error);
    }
    const now = this.#clock.now();
    let ts = now > this.#lastProposedTs ? now : this.#lastProposedTs;
    if (this.#appliedTs > ts) ts = this.#appliedTs;
    const data =
      codec.encodeWithHeadroom === undefined
        ? encodeCommandEntry(ts, encoded)
        : fillCommandHeader(encoded, ts);
    // Wake first: a leader leaving quiescence refreshes its followers' liveness before it appends.
    if (this.quiesced) this.#host.wake(this);
    let raftIndex: number;
    try {
      raftIndex = this.core.propose(data);
    } catch (error) {
      if (error instanceof ProposalDroppedError) {
        return Promise.reject(
          error.reason === DropReason.UncommittedLimit
            ? new GroupOverloadedError(this.groupId)
            : new NotLeaderError(this.groupId, error.leader),
        );
      }
      return Promise.reject(error);
    }
    this.#lastProposedTs = ts;
    const term = this.core.term;
    const bytes = data.byteLength;
    this.#host.account(bytes);
    const result = new Promise<R>((resolve, reject) => {
      this.#pending.push({ raftIndex, term, command, bytes, resolve, reject });
    });
    this.#host.markDirty(this);
    return result;
  }

  /** The membership as of the applied index (a snapshot's, then each applied change's). */
  get membership(): ConfState {
    return this.#confState;
  }

  /**
   * Propose a membership change (leader only); resolves with the new membership once its entry
   * applies here. One change at a time: a second one while the first is unapplied is refused.
   */
  proposeConfChange(cc: ConfChangeV2): Promise<ConfState> {
    if (this.#role !== 'leader') return Promise.reject(new NotLeaderError(this.groupId, this.core.lead));
    if (this.quiesced) this.#host.wake(this);
    let raftIndex: number;
    try {
      raftIndex = this.core.proposeConfChange(cc);
    } catch (error) {
      if (error instanceof ProposalDroppedError) {
        return Promise.reject(
          error.reason === DropReason.NotLeader || error.reason === DropReason.Transferring
            ? new NotLeaderError(this.groupId, error.leader)
            : new MembershipChangeError(this.groupId, error.message),
        );
      }
      return Promise.reject(error);
    }
    const term = this.core.term;
    const result = new Promise<ConfState>((resolve, reject) => {
      this.#pendingConf = { raftIndex, term, resolve, reject };
    });
    this.#host.markDirty(this);
    return result;
  }

  /** Campaign now (see `RaftGroupLog.campaignIfLeaderless`). */
  campaign(): void {
    if (this.#stopped) return;
    if (this.quiesced) this.#host.wake(this);
    this.core.campaign();
    this.#host.markDirty(this);
  }

  /**
   * Ask for leadership to move to voter `to` (Raft's leadership transfer: the leader brings `to` up
   * to date, then tells it to campaign at once). Best effort: nothing reports the outcome but the
   * role changes that follow; on a follower the request goes to the leader.
   */
  transferLeader(to: NodeId): void {
    if (this.#stopped) return;
    if (this.quiesced) this.#host.wake(this);
    this.core.transferLeader(to);
    this.#host.markDirty(this);
  }

  /**
   * Wait until this replica has applied everything committed when the call was made, as a leader
   * confirmed it (Raft's ReadIndex: on a follower the request goes to the leader). After it, reads
   * of the local machine see every write acknowledged before the call, on any replica. Rejects
   * with `BarrierTimeoutError` when no leader confirms within `timeoutMs`.
   */
  barrier(timeoutMs: number): Promise<void> {
    if (this.#stopped) return Promise.reject(new LogFailedError(this.groupId, 'stopped'));
    const context = `${this.#barrierPrefix}${++this.#nextBarrier}`;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#barriers.delete(context);
        reject(new BarrierTimeoutError(this.groupId, timeoutMs));
      }, timeoutMs);
      timer.unref?.();
      this.#barriers.set(context, {
        index: -1,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
      this.#askBarrier(context);
    });
  }

  /** Ask the leader for the commit index of barrier `context` (again, when none was known). */
  #askBarrier(context: string): void {
    if (this.quiesced) this.#host.wake(this);
    const barrier = this.#barriers.get(context);
    if (barrier === undefined) return;
    // Without a known leader the request is dropped at once; pump() asks again once one is known.
    barrier.index = this.core.readIndex(context) ? -1 : -2;
    this.#host.markDirty(this);
  }

  /** Serve the barriers whose confirmed index is applied; re-ask those that found no leader. */
  #serveBarriers(): void {
    if (this.#barriers.size === 0) return;
    for (const [context, barrier] of this.#barriers) {
      if (barrier.index >= 0 && barrier.index <= this.#appliedRaft) {
        this.#barriers.delete(context);
        barrier.resolve();
      } else if (barrier.index === -2 && this.core.lead !== undefined) {
        this.#askBarrier(context);
      }
    }
  }

  pump(): void {
    while (!this.#stopped && this.core.hasReady()) this.#cut();
  }

  /** Take one Ready: send what may go now, queue its writes, apply what is already durable. */
  #cut(): void {
    let rd = this.core.ready();
    // A snapshot received as a transfer payload: its side data is written now, so it joins this
    // turn's store batch with the snapshot; what is stored (and restored in `finish`) is metadata.
    if (rd.snapshot !== undefined) rd = { ...rd, snapshot: this.#incomingSnapshot(rd.snapshot) };
    for (const rs of rd.readStates) {
      const barrier = this.#barriers.get(rs.context);
      if (barrier !== undefined) barrier.index = rs.index;
    }
    if (rd.softState !== undefined) this.#onSoftState(rd.softState);
    const host = this.#host;
    for (const m of rd.messages) host.send(this.groupId, m);
    // What is durable before this Ready's writes and stays so: the stored log, short of what a
    // Ready still in flight (or this one) rewrites — a conflicting suffix from a new leader — and
    // nothing while a snapshot replaces the whole log.
    const storage = this.#storage;
    let stable = storage.lastIndex();
    let earlierApplied = true;
    for (const each of this.#outstanding) {
      stable = Math.min(stable, firstRewritten(each.rd));
      if (each.earlyApplied < each.rd.committedEntries.length) earlierApplied = false;
    }
    stable = Math.min(stable, firstRewritten(rd));
    const written = storage.write(rd);
    const outstanding: OutstandingReady = {
      rd,
      written,
      // Only the commit index moved (or nothing was written): nothing to sync, but it completes
      // only after every earlier Ready, whose writes its acknowledgements may count on.
      durable: !rd.mustSync || written === undefined,
      earlyApplied: 0,
    };
    this.#outstanding.push(outstanding);
    // Committed entries already durable here apply at once (a leader's usually are, so its commit
    // latency does not wait for the sync of the entries proposed meanwhile) — in index order, so
    // only once every earlier Ready applied all of its own.
    const committed = rd.committedEntries;
    while (earlierApplied && outstanding.earlyApplied < committed.length) {
      const entry = committed[outstanding.earlyApplied] as Entry;
      if (entry.index > stable) break;
      outstanding.earlyApplied++;
      this.#apply(entry);
    }
    if (rd.mustSync && written !== undefined) {
      host.awaitDurable(written, this);
    } else {
      // A failed store still fails the group.
      written?.catch((error: unknown) =>
        this.fail(error instanceof Error ? error : new Error(String(error))),
      );
      this.#completeDurable();
    }
  }

  finish(written: Promise<void>): void {
    if (this.#stopped) return;
    // Batches become durable in order: `written` covers every Ready up to the last one in it.
    const outstanding = this.#outstanding;
    let last = -1;
    for (let i = 0; i < outstanding.length; i++)
      if ((outstanding[i] as OutstandingReady).written === written) last = i;
    for (let i = 0; i <= last; i++) (outstanding[i] as OutstandingReady).durable = true;
    this.#completeDurable();
  }

  /** Complete the durable Readys at the head of the pipeline, oldest first. */
  #completeDurable(): void {
    let completed = false;
    while (!this.#stopped) {
      const head = this.#outstanding[0];
      if (head === undefined || !head.durable) break;
      this.#outstanding.shift();
      this.#complete(head);
      completed = true;
    }
    if (!completed) return;
    this.#storage.trimCache(this.#appliedRaft);
    this.#updateRole();
    this.#serveBarriers();
    this.#host.markDirty(this);
    this.#events.onProgress();
  }

  /** The Ready and every earlier one are durable: release its acknowledgements, apply, advance. */
  #complete(head: OutstandingReady): void {
    const rd = head.rd;
    this.#storage.persisted(rd);
    const host = this.#host;
    for (const m of rd.persistedMessages) host.send(this.groupId, m);
    if (rd.snapshot !== undefined) this.#restore(rd.snapshot);
    const committed = rd.committedEntries;
    for (let i = head.earlyApplied; i < committed.length; i++) this.#apply(committed[i] as Entry);
    this.core.advance();
  }

  canQuiesce(isDown: (node: NodeId) => boolean = never): boolean {
    const core = this.core;
    if (this.#stopped || this.#outstanding.length > 0 || core.role !== RaftRole.Leader) return false;
    if (core.hasReady() || core.leadTransferee !== undefined) return false;
    const last = core.lastIndex;
    if (core.commitIndex !== last || this.#appliedRaft !== last) return false;
    for (const [node, progress] of core.status().progress) {
      if (progress.match !== last && !isDown(node)) return false;
    }
    return true;
  }

  onQuiesceNotice(notice: QuiesceNotice, from: NodeId): boolean {
    const core = this.core;
    if (this.#stopped || core.role !== RaftRole.Follower || core.lead !== from) return false;
    if (core.term !== notice.term || core.lastIndex < notice.commit) return false;
    if (core.commitIndex < notice.commit) {
      // The leader's last word: commit what every member has (as a heartbeat would carry it).
      core.step(
        message(MessageType.Heartbeat, from, this.#host.nodeId, notice.term, { commit: notice.commit }),
      );
      this.#host.markDirty(this);
    }
    return true;
  }

  /**
   * A leader waking from quiescence counts its followers as recently active (they were caught up
   * and silent by agreement, not cut off): otherwise its first check-quorum after waking could
   * find nobody active since the last one and step down for nothing. A follower that is really
   * gone is caught by the next check-quorum, one election timeout later.
   */
  onUnquiesce(): void {
    const core = this.core;
    if (this.#stopped || core.role !== RaftRole.Leader) return;
    const self = this.#host.nodeId;
    for (const peer of this.peers()) core.step(message(MessageType.HeartbeatResp, peer, self, core.term));
  }

  peers(): readonly NodeId[] {
    const self = this.#host.nodeId;
    const conf = this.core.confState();
    const ids = new Set<NodeId>([...conf.voters, ...conf.votersOutgoing, ...conf.learners]);
    ids.delete(self);
    return [...ids];
  }

  /**
   * Snapshot the machine at the applied index and truncate the log behind it (one batch). Resolves
   * once durable; a no-op when nothing was applied since the last snapshot.
   */
  compact(): Promise<void> {
    const index = this.#appliedRaft;
    if (index <= this.#storage.snapshotIndex) return Promise.resolve();
    const term = this.core.termAt(index);
    invariant(term !== undefined, () => `group ${this.groupId}: no term for applied index ${index}`);
    const data = encodeSnapshotData({
      appIndex: this.#appIndex,
      ts: this.#appliedTs,
      machine: this.#machine.snapshot(),
    });
    const snapshot: Snapshot = { meta: { index, term, confState: this.#confState }, data };
    return this.#storage.compact(snapshot);
  }

  /** Stop: pending proposals reject with `error`; nothing is applied any more. */
  stop(error: Error): void {
    if (this.#stopped) return;
    this.#stopped = true;
    let bytes = 0;
    for (const proposal of this.#pending.drain()) {
      bytes += proposal.bytes;
      proposal.reject(error);
    }
    if (bytes > 0) this.#host.account(-bytes);
    this.#settleConfChange(Number.POSITIVE_INFINITY, error);
  }

  fail(error: Error): void {
    if (this.#stopped) return;
    const failure = error instanceof LogFailedError ? error : new LogFailedError(this.groupId, error);
    this.stop(failure);
    this.#events.onFailed(failure);
  }

  // ------------------------------------------------------------------------------ internals

  /** The machine and the applied position as of `snapshot` (machine untouched when it has no state). */
  #adoptSnapshot(snapshot: Snapshot, content: SnapshotContent): void {
    if (content.machine !== undefined) {
      this.#machine.restore(content.machine, {
        index: content.appIndex,
        term: snapshot.meta.term,
        ts: content.ts,
      });
    }
    this.#appliedRaft = snapshot.meta.index;
    this.#appIndex = content.appIndex;
    this.#appliedTs = content.ts;
    this.#confState = snapshot.meta.confState;
  }

  #apply(entry: Entry): void {
    invariant(
      entry.index === this.#appliedRaft + 1,
      () => `group ${this.groupId}: applying ${entry.index} after ${this.#appliedRaft}`,
    );
    this.#appliedRaft = entry.index;
    if (entry.type === EntryType.ConfChange) {
      this.#confState = this.core.applyConfChange(decodeConfChange(entry.data));
      const pending = this.#pendingConf;
      if (pending !== undefined && pending.raftIndex === entry.index && pending.term === entry.term) {
        this.#pendingConf = undefined;
        pending.resolve(this.#confState);
      }
      this.#settleLost(entry.index);
      return;
    }
    // A command applied where a change was pending: that change was lost. (Checked before the error
    // is made: an Error's stack capture on every applied entry cost the hot path dearly.)
    const pendingConf = this.#pendingConf;
    if (pendingConf !== undefined && pendingConf.raftIndex <= entry.index) {
      this.#settleConfChange(entry.index, new NotLeaderError(this.groupId, this.core.lead));
    }
    const data = entry.data;
    if (!isCommandEntry(data)) {
      this.#settleLost(entry.index);
      return;
    }
    const stamped = commandTs(data);
    const ts = stamped > this.#appliedTs ? stamped : this.#appliedTs;
    this.#appliedTs = ts;
    const meta: EntryMeta = { index: ++this.#appIndex, term: entry.term, ts };
    const proposal = this.#pending.peek();
    if (proposal !== undefined && proposal.raftIndex === entry.index) {
      this.#shiftPending(proposal);
      if (proposal.term === entry.term) {
        this.#commitLatencyMs = Math.max(0, this.#clock.now() - stamped);
        let result: R;
        try {
          result = this.#machine.apply(proposal.command, meta);
        } catch (error) {
          proposal.reject(error);
          return;
        }
        proposal.resolve(result);
        return;
      }
      this.#lost(proposal);
    }
    try {
      const codec = this.#codec;
      const bytes = commandBytes(data);
      this.#machine.apply(
        codec.decodeEntry === undefined ? codec.decode(bytes) : codec.decodeEntry(bytes),
        meta,
      );
    } catch {
      // Deterministic: the leader's apply threw the same way and rejected its proposal.
    }
  }

  /**
   * A membership change proposed at or below `index` that did not apply as ours (another entry
   * took its index, a snapshot covered it, the replica stopped) fails with `error`.
   */
  #settleConfChange(index: number, error: unknown): void {
    const pending = this.#pendingConf;
    if (pending === undefined || pending.raftIndex > index) return;
    this.#pendingConf = undefined;
    pending.reject(error);
  }

  /** The entry at `index` is not a command of ours: a proposal waiting there was lost. */
  #settleLost(index: number): void {
    const proposal = this.#pending.peek();
    if (proposal === undefined || proposal.raftIndex !== index) return;
    this.#shiftPending(proposal);
    this.#lost(proposal);
  }

  /**
   * `proposal` (already shifted) lost its index to another entry: it fails, and so does every
   * proposal of its term after it. Only this replica, leading that term, made that term's entries,
   * each on top of the ones before; by log matching, a log holding a later one of them holds this
   * one too, and the committed log does not. Waiting for their own indexes instead could wait
   * forever: a new leader with a shorter log writes nothing there until new commands come, and the
   * clients waiting on these proposals may be the only ones that would send any (a publisher
   * stalled on confirms after a partition healed).
   */
  #lost(proposal: PendingProposal<C, R>): void {
    const error = new NotLeaderError(this.groupId, this.core.lead);
    proposal.reject(error);
    while (true) {
      const next = this.#pending.peek();
      if (next === undefined || next.term !== proposal.term) return;
      this.#shiftPending(next);
      next.reject(error);
    }
  }

  #shiftPending(proposal: PendingProposal<C, R>): void {
    this.#pending.shift();
    this.#host.account(-proposal.bytes);
  }

  /**
   * The snapshot to send a follower: the stored one with its machine bytes replaced by the
   * machine's transfer payload for that state (see `StateMachine.transferSnapshot`).
   */
  #outgoingSnapshot(stored: Snapshot): Snapshot {
    const transfer = this.#machine.transferSnapshot;
    const content = decodeSnapshotData(stored.data);
    if (transfer === undefined || content.machine === undefined || content.transfer === true) return stored;
    const machine = transfer.call(this.#machine, content.machine, {
      index: content.appIndex,
      term: stored.meta.term,
      ts: content.ts,
    });
    const data = encodeSnapshotData({ appIndex: content.appIndex, ts: content.ts, machine, transfer: true });
    return { meta: stored.meta, data };
  }

  /** A snapshot from the leader as it is to be stored: a transfer payload installed, else as is. */
  #incomingSnapshot(received: Snapshot): Snapshot {
    const content = decodeSnapshotData(received.data);
    if (content.transfer !== true || content.machine === undefined) return received;
    const install = this.#machine.installTransferSnapshot;
    invariant(
      install !== undefined,
      () => `group ${this.groupId}: received a transfer snapshot, but the machine cannot install one`,
    );
    const machine = install.call(this.#machine, content.machine, {
      index: content.appIndex,
      term: received.meta.term,
      ts: content.ts,
    });
    const data = encodeSnapshotData({ appIndex: content.appIndex, ts: content.ts, machine });
    return { meta: received.meta, data };
  }

  #restore(snapshot: Snapshot): void {
    const content = decodeSnapshotData(snapshot.data);
    invariant(
      content.machine !== undefined,
      () => `group ${this.groupId}: a snapshot without machine state cannot replace applied state`,
    );
    this.#adoptSnapshot(snapshot, content);
    this.#settleConfChange(snapshot.meta.index, new NotLeaderError(this.groupId, this.core.lead));
    // Proposals at or below the snapshot were decided without us seeing them: unknown outcome.
    while (true) {
      const proposal = this.#pending.peek();
      if (proposal === undefined || proposal.raftIndex > snapshot.meta.index) break;
      this.#shiftPending(proposal);
      proposal.reject(new NotLeaderError(this.groupId, this.core.lead));
    }
  }

  #onSoftState(soft: SoftState): void {
    // Leadership moved (or is being contested): a read-index request the old leader had not
    // answered is lost with its term (a deposed leader drops its pending reads). Ask again, of the
    // new leader once one is known (`#serveBarriers`), instead of waiting out the timeout.
    for (const barrier of this.#barriers.values()) if (barrier.index === -1) barrier.index = -2;
    if (soft.role === RaftRole.Leader) {
      // The term's no-op is the last entry now: everything before it is ours to serve once applied.
      this.#termStartIndex = this.core.lastIndex;
      // Proposals at or after it were overwritten (or never stored) by the time we lead again.
      const termStart = this.#termStartIndex;
      const lost = this.#pending.popNewestWhile((proposal) => proposal.raftIndex >= termStart);
      for (const proposal of lost) {
        this.#host.account(-proposal.bytes);
        proposal.reject(new NotLeaderError(this.groupId, undefined));
      }
      if (this.#appliedTs > this.#lastProposedTs) this.#lastProposedTs = this.#appliedTs;
    } else {
      this.#termStartIndex = Number.POSITIVE_INFINITY;
    }
    this.#updateRole();
  }

  #updateRole(): void {
    const core = this.core;
    let role: Role;
    let leader: string | undefined = core.lead;
    if (!this.#isMember()) {
      role = 'removed';
    } else if (core.role === RaftRole.Leader) {
      // Elected, but serving only once the state includes everything committed before its term.
      role = this.#appliedRaft >= this.#termStartIndex ? 'leader' : 'candidate';
      if (role === 'candidate') leader = undefined;
    } else if (core.role === RaftRole.Follower) {
      role = 'follower';
    } else {
      role = 'candidate';
    }
    const term = core.term;
    if (role === this.#role && term === this.#roleTerm && leader === this.#roleLeader) return;
    this.#role = role;
    this.#roleTerm = term;
    this.#roleLeader = leader;
    this.#events.onRole({ role, term, leader });
  }

  #isMember(): boolean {
    const self = this.#host.nodeId;
    const conf = this.#confState;
    return (
      conf.voters.includes(self) ||
      conf.votersOutgoing.includes(self) ||
      conf.learners.includes(self) ||
      conf.learnersNext.includes(self)
    );
  }
}

function never(): boolean {
  return false;
}
