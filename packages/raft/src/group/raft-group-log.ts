import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import {
  LogClosedError,
  LogCorruptedError,
  LogFailedError,
  NotLeaderError,
  notOpenError,
} from '../errors.ts';
import type { ConfChangeV2 } from '../raft/conf-change.ts';
import { ConfChangeTransition, ConfChangeType } from '../raft/conf-change.ts';
import type { ConfState, NodeId } from '../raft/types.ts';
import { EMPTY_CONF_STATE } from '../raft/types.ts';
import type { CommandCodec, ReplicatedLog, Role, RoleChange, StateMachine } from '../replicated-log.ts';
import { RoleListeners } from '../role-listeners.ts';
import { AdmissionQueueFullError } from './errors.ts';
import {
  bootstrapGroup,
  migrateSingleVoterGroup,
  singleVoter,
  storedGroupFormat,
} from './group-bootstrap.ts';
import { GroupReplica } from './group-replica.ts';
import { LogStoreRaftStorage } from './log-store-raft-storage.ts';
import type { RaftHost } from './raft-host.ts';

export interface RaftGroupLogOptions {
  readonly host: RaftHost;
  /**
   * The group's voters when it is created (default: the host's node alone). Used only to bootstrap
   * a group with nothing stored; afterwards the membership comes from the log. Every replica of a
   * group must be created with the same voters.
   */
  readonly voters?: readonly NodeId[];
  /** Where the leader reads time for `EntryMeta.ts` (default: the host's clock). */
  readonly clock?: Clock;
  /**
   * Campaign as soon as the replica opens (default: true for a one-voter group). A multi-voter
   * group's creator may set it on one replica so that replica leads first, without waiting out an
   * election timeout.
   */
  readonly campaignOnOpen?: boolean;
  /**
   * Campaign as soon as the replica opens if this open creates the group (nothing was stored): a
   * multi-voter group's creator leads first without an election timeout, and the same replica
   * reopened later (a restart) waits for the group's leader like any other instead of disrupting it.
   */
  readonly campaignOnCreate?: boolean;
  /**
   * Open a replica for a group this node is joining: with nothing stored it starts with an empty
   * membership (no voters; it never campaigns) and waits for the group's leader, which adds it as a
   * learner and sends it the log or a snapshot. `voters` is ignored.
   */
  readonly join?: boolean;
}

/** One change of a group's membership. */
export interface MembershipChange {
  readonly type: 'addVoter' | 'addLearner' | 'remove';
  readonly nodeId: NodeId;
}

/** How far a member has replicated, as the leader sees it. */
export interface MemberProgress {
  /** Highest index known to be on the member's disk. */
  readonly match: number;
  /** Heard from within the last election timeout. */
  readonly active: boolean;
}

function isSingleVoter(conf: ConfState, self: NodeId): boolean {
  return conf.voters.length === 1 && conf.voters[0] === self && conf.votersOutgoing.length === 0;
}

function memberSet(conf: ConfState): Set<NodeId> {
  return new Set([...conf.voters, ...conf.votersOutgoing, ...conf.learners, ...conf.learnersNext]);
}

const CHANGE_TYPES = {
  addVoter: ConfChangeType.AddVoter,
  addLearner: ConfChangeType.AddLearner,
  remove: ConfChangeType.RemoveNode,
} as const;

/**
 * A replica of a Raft group as a `ReplicatedLog`: what a queue actor or the metadata store runs on,
 * the same contract as the single-voter and in-memory logs (it passes the same compliance suite).
 *
 * - `open` restores the latest snapshot, then replays the committed log through the Ready loop. A
 *   one-voter group elects itself and `open` resolves once it leads and has applied everything
 *   stored (its role is 'leader' then, as on the single-voter log). A multi-voter replica resolves
 *   once it has applied up to the commit index it had persisted, in whatever role it is.
 * - Roles: 'leader' once elected AND its state includes every entry committed before its term
 *   (until then it reports 'candidate'); 'follower' / 'candidate' as Raft's; 'removed' once a
 *   membership change without it is applied. Listeners hear the role at the end of `open`, then
 *   every change.
 * - `propose` on a replica that does not lead rejects with `NotLeaderError` carrying the leader's
 *   node id when known. A proposal whose index another leader's entry took rejects with
 *   `NotLeaderError` too (it was not committed). `LogClosedError`/`LogFailedError` mean "outcome
 *   unknown", as on every log.
 * - `compact` snapshots the machine at the applied index (with the application index, the applied
 *   ts and the membership) and truncates the log behind it.
 *
 * Data written by `SingleVoterLog` for the same group id (same log store keys) is migrated on
 * `open`, in one batch, keeping every index (see group-bootstrap.ts); only for a one-voter group.
 */
export class RaftGroupLog<C, R> implements ReplicatedLog<C, R> {
  readonly groupId: string;
  readonly #codec: CommandCodec<C>;
  readonly #host: RaftHost;
  readonly #voters: readonly NodeId[];
  readonly #clock: Clock;
  #campaign: boolean;
  readonly #campaignExplicit: boolean;
  readonly #join: boolean;
  readonly #campaignOnCreate: boolean;
  readonly #roles = new RoleListeners();
  #state: 'new' | 'opening' | 'open' | 'closed' | 'failed' = 'new';
  #failure: Error | undefined;
  #replica: GroupReplica<C, R> | undefined;
  /** Resolves `open` once the replay (and, for one voter, the election) is done. */
  #opened: { readonly resolve: () => void; readonly reject: (error: unknown) => void } | undefined;
  #openTarget = 0;

  constructor(groupId: string, codec: CommandCodec<C>, options: RaftGroupLogOptions) {
    this.groupId = groupId;
    this.#codec = codec;
    this.#host = options.host;
    this.#join = options.join ?? false;
    this.#voters = this.#join ? [] : (options.voters ?? [options.host.nodeId]);
    this.#clock = options.clock ?? systemClock;
    this.#campaign = !this.#join && (options.campaignOnOpen ?? this.#isSingleVoter());
    this.#campaignExplicit = options.campaignOnOpen !== undefined;
    this.#campaignOnCreate = !this.#join && (options.campaignOnCreate ?? false);
    if (this.#voters.length === 0 && !this.#join) throw new RangeError(`group ${groupId}: no voters`);
  }

  /** Lifecycle of this log object. */
  get state(): 'new' | 'opening' | 'open' | 'closed' | 'failed' {
    return this.#state;
  }

  get role(): Role {
    return this.#state === 'open' ? (this.#replica?.role ?? 'follower') : 'follower';
  }

  /** The Raft index this replica has applied up to (tests and diagnostics). */
  get appliedIndex(): number {
    return this.#replica?.appliedIndex ?? 0;
  }

  /** The replica's current Raft term (0 before `open`; diagnostics such as `quorum_status`). */
  get term(): number {
    return this.#replica?.core.term ?? 0;
  }

  /** Elections this replica started since it opened (0 before `open`; metrics). */
  get elections(): number {
    return this.#replica?.core.elections ?? 0;
  }

  /** Pre-vote rounds this replica started since it opened (0 before `open`; metrics). */
  get preVotes(): number {
    return this.#replica?.core.preVotes ?? 0;
  }

  /** Elections this replica won since it opened (0 before `open`; metrics). */
  get electionsWon(): number {
    return this.#replica?.core.electionsWon ?? 0;
  }

  /** The highest index this replica knows to be committed (0 before `open`; diagnostics). */
  get commitIndex(): number {
    return this.#replica?.core.commitIndex ?? 0;
  }

  /** The index of the last entry written to this replica's log (0 before `open`; metrics). */
  get lastWrittenIndex(): number {
    return this.#replica?.lastWrittenIndex ?? 0;
  }

  /** The index of this replica's latest snapshot (0 before `open`; metrics). */
  get snapshotIndex(): number {
    return this.#replica?.snapshotIndex ?? 0;
  }

  /**
   * Time from proposing to applying the last command this replica proposed, ms (0 before any;
   * metrics). Only a leader proposes, so a follower keeps what it measured when it last led.
   */
  get commitLatencyMs(): number {
    return this.#replica?.commitLatencyMs ?? 0;
  }

  /** The membership as of the applied index (empty before `open`). */
  get membership(): ConfState {
    return this.#replica?.membership ?? EMPTY_CONF_STATE;
  }

  /** The leader this replica knows of, if any (itself when it leads). */
  get leader(): NodeId | undefined {
    return this.#state === 'open' ? this.#replica?.core.lead : undefined;
  }

  /** Replication progress of every member, while this replica leads (else empty). */
  progress(): ReadonlyMap<NodeId, MemberProgress> {
    const out = new Map<NodeId, MemberProgress>();
    const replica = this.#replica;
    if (this.#state !== 'open' || replica === undefined) return out;
    for (const [id, pr] of replica.core.status().progress) {
      out.set(id, { match: pr.match, active: id === this.#host.nodeId || pr.recentActive });
    }
    return out;
  }

  /**
   * Change the group's membership (on the leader; elsewhere `NotLeaderError` with the leader's
   * id). Several changes at once go through a joint configuration, left automatically. Resolves
   * with the new membership once the change is applied here; `MembershipChangeError` when another
   * change is in progress or this one does not apply.
   */
  async changeMembership(changes: readonly MembershipChange[]): Promise<ConfState> {
    if (this.#state !== 'open') throw this.#notOpenError();
    const replica = this.#replica as GroupReplica<C, R>;
    const members = memberSet(replica.membership);
    if (changes.some((change) => change.type !== 'remove' && !members.has(change.nodeId))) {
      // A joiner's replica starts from an empty membership at index 0, not from the one this
      // group started with: it must receive a snapshot (which carries the membership), never the
      // log from index 1. Compacting first puts the start of the log behind a snapshot.
      if (replica.role !== 'leader') throw new NotLeaderError(this.groupId, replica.core.lead);
      await this.compact();
    }
    const cc: ConfChangeV2 = {
      transition: ConfChangeTransition.Auto,
      changes: changes.map((change) => ({ type: CHANGE_TYPES[change.type], nodeId: change.nodeId })),
      context: '',
    };
    return replica.proposeConfChange(cc);
  }

  /**
   * Stand for election now, unless a leader is known (a no-op on a replica that is not open, or not
   * a voter). For a new group's creator whose first vote requests reached replicas that were not
   * open yet (they are dropped): asking again beats waiting out an election timeout.
   */
  campaignIfLeaderless(): void {
    if (this.#state !== 'open') return;
    const replica = this.#replica as GroupReplica<C, R>;
    if (replica.core.lead !== undefined || !replica.membership.voters.includes(this.#host.nodeId)) return;
    replica.campaign();
  }

  /**
   * Ask the group to move its leadership to voter `to` (best effort; see `GroupReplica.transferLeader`).
   * The outcome shows in `leader` and the role changes.
   */
  transferLeadership(to: NodeId): void {
    if (this.#state !== 'open') throw this.#notOpenError();
    (this.#replica as GroupReplica<C, R>).transferLeader(to);
  }

  /**
   * Whether this replica leads and member `to` is known to hold every entry of its log. A transfer
   * to such a member completes at once; to one that lags, the leader first catches it up and drops
   * every proposal meanwhile (as etcd-raft does), for up to an election timeout: moving thousands
   * of leaders to a node still catching up after a restart made those queues unwritable.
   */
  caughtUp(to: NodeId): boolean {
    if (this.#state !== 'open') return false;
    const core = (this.#replica as GroupReplica<C, R>).core;
    return core.matchOf(to) === core.lastIndex;
  }

  /**
   * Resolves once this replica has applied every entry committed before the call, as the group's
   * leader confirmed it: afterwards the local machine reflects every write acknowledged anywhere
   * before the call. Rejects with `BarrierTimeoutError` after `timeoutMs` without a leader's answer.
   */
  barrier(timeoutMs: number): Promise<void> {
    if (this.#state !== 'open') return Promise.reject(this.#notOpenError());
    return (this.#replica as GroupReplica<C, R>).barrier(timeoutMs);
  }

  async open(machine: StateMachine<C, R>): Promise<void> {
    if (this.#state !== 'new') throw new Error(`group ${this.groupId}: open() called twice`);
    this.#state = 'opening';
    const host = this.#host;
    const store = host.logStore;
    try {
      // A previous incarnation's writes may still be in flight: read only once they are durable.
      await store.sync();
      if (this.#state !== 'opening') return;
      const format = storedGroupFormat(store, this.groupId);
      if (format === 'empty') {
        await bootstrapGroup(store, this.groupId, {
          ...singleVoter(host.nodeId),
          voters: [...this.#voters].sort(),
        });
      } else if (format === 'single-voter' && this.#join) {
        throw new LogCorruptedError(this.groupId, 'single-voter data cannot join a group');
      } else if (format === 'single-voter') {
        if (!this.#isSingleVoter()) {
          throw new LogCorruptedError(this.groupId, 'single-voter data cannot seed a multi-voter group');
        }
        await migrateSingleVoterGroup(store, this.groupId, host.nodeId);
      }
      if (this.#state !== 'opening') return;
      const storage = new LogStoreRaftStorage(this.groupId, store);
      const initial = storage.initialState();
      this.#openTarget = initial.hardState.commit;
      if (!this.#campaignExplicit) {
        this.#campaign = !this.#join && isSingleVoter(initial.confState, host.nodeId);
      }
      if (format === 'empty' && this.#campaignOnCreate) this.#campaign = true;
      const replica = new GroupReplica<C, R>({
        groupId: this.groupId,
        host: host.services,
        storage,
        machine,
        codec: this.#codec,
        clock: this.#clock,
        config: host.tuning,
        random: host.random,
        events: {
          onRole: (change) => this.#onRole(change),
          onFailed: (error) => this.#onFailed(error),
          onProgress: () => this.#checkOpened(),
        },
      });
      this.#replica = replica;
      const opened = new Promise<void>((resolve, reject) => {
        this.#opened = { resolve, reject };
      });
      host.register(replica, () => this.close());
      if (this.#campaign) replica.core.campaign();
      this.#checkOpened();
      await opened;
    } catch (error) {
      if (this.#currentState() === 'closed') return;
      this.#state = 'failed';
      this.#failure =
        error instanceof LogCorruptedError || error instanceof LogFailedError
          ? error
          : new LogFailedError(this.groupId, error);
      this.#stopReplica(this.#failure);
      throw this.#failure;
    }
    if (this.#currentState() !== 'opening') return;
    this.#state = 'open';
    this.#roles.emit((this.#replica as GroupReplica<C, R>).roleChange());
  }

  propose(command: C): Promise<R> {
    if (this.#state !== 'open') return Promise.reject(this.#notOpenError());
    const replica = this.#replica as GroupReplica<C, R>;
    if (this.#host.underInFlightBound()) return replica.propose(command);
    // Over the node's in-flight bound: the proposal waits its turn.
    return new Promise<R>((resolve, reject) => {
      const waiting = this.#host.whenUnderInFlightBound(() => {
        const proposed =
          this.#state === 'open' ? replica.propose(command) : Promise.reject(this.#notOpenError());
        proposed.then(resolve, reject);
      });
      // Too many wait already: refused now, not held.
      if (!waiting) reject(new AdmissionQueueFullError(this.groupId, this.#host.maxWaitingProposals));
    });
  }

  onRole(listener: (change: RoleChange) => void): () => void {
    return this.#roles.add(listener);
  }

  async compact(): Promise<void> {
    if (this.#state !== 'open') throw this.#notOpenError();
    try {
      await (this.#replica as GroupReplica<C, R>).compact();
    } catch (error) {
      throw new LogFailedError(this.groupId, error);
    }
  }

  async close(): Promise<void> {
    if (this.#state === 'closed') return;
    const wasOpening = this.#state === 'opening';
    this.#state = 'closed';
    this.#stopReplica(new LogClosedError(this.groupId));
    if (wasOpening) this.#opened?.resolve();
  }

  async destroy(): Promise<void> {
    await this.close();
    try {
      await this.#host.logStore.deleteGroup(this.groupId);
    } catch (error) {
      throw new LogFailedError(this.groupId, error);
    }
  }

  // ------------------------------------------------------------------------------ internals

  /** The state, read afresh (an await may have changed it; TypeScript's narrowing cannot tell). */
  #currentState(): RaftGroupLog<C, R>['state'] {
    return this.#state;
  }

  #isSingleVoter(): boolean {
    return this.#voters.length === 1 && this.#voters[0] === this.#host.nodeId;
  }

  #stopReplica(error: Error): void {
    const replica = this.#replica;
    if (replica === undefined) return;
    this.#host.unregister(replica);
    replica.stop(error);
  }

  #onRole(change: RoleChange): void {
    if (this.#state === 'open') this.#roles.emit(change);
    else this.#checkOpened();
  }

  /** While opening: resolve `open` once the replay (and a one-voter group's election) is done. */
  #checkOpened(): void {
    const replica = this.#replica;
    const opened = this.#opened;
    if (this.#state !== 'opening' || replica === undefined || opened === undefined) return;
    if (replica.appliedIndex < this.#openTarget) return;
    // A group whose only voter is this node resolves once it leads; its membership is the one
    // the replay reached (a group created with one voter may have grown since).
    if (isSingleVoter(replica.membership, this.#host.nodeId) && replica.role !== 'leader') return;
    this.#opened = undefined;
    opened.resolve();
  }

  #onFailed(error: Error): void {
    if (this.#state === 'closed' || this.#state === 'failed') return;
    const wasOpening = this.#state === 'opening';
    this.#state = 'failed';
    this.#failure = error;
    this.#host.unregister(this.#replica as GroupReplica<C, R>);
    if (wasOpening) this.#opened?.reject(error);
  }

  #notOpenError(): Error {
    return notOpenError(this.groupId, this.#state, this.#failure);
  }
}
