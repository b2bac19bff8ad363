import type { ConfChangeV2, MembershipConfig } from './conf-change.ts';
import {
  applyChange,
  encodeConfChange,
  fromConfState,
  isJoint,
  isLeaveJoint,
  isVoter,
  LEAVE_JOINT,
  memberIds,
  toConfState,
} from './conf-change.ts';
import {
  ConfChangeError,
  DropReason,
  invariant,
  ProposalDroppedError,
  RaftConfigError,
  UnexpectedMessageError,
} from './errors.ts';
import type { Mutations } from './mutations.ts';
import { NO_MUTATIONS } from './mutations.ts';
import { Progress, ProgressState } from './progress.ts';
import { jointCommittedIndex, jointVoteResult, VoteResult } from './quorum.ts';
import { NO_TERM, RaftLog } from './raft-log.ts';
import { ReadIndexQueue } from './read-index.ts';
import type {
  ConfState,
  Entry,
  HardState,
  Message,
  NodeId,
  RaftConfig,
  RaftRandom,
  RaftStorage,
  ReadState,
  Ready,
  ResolvedRaftConfig,
  Snapshot,
  SnapshotChunk,
  SoftState,
} from './types.ts';
import { CAMPAIGN_TRANSFER, EntryType, MessageType, RAFT_DEFAULTS, RaftRole } from './types.ts';

const NO_ENTRIES: readonly Entry[] = Object.freeze([]);
const NO_MESSAGES: readonly Message[] = Object.freeze([]);
const NO_READ_STATES: readonly ReadState[] = Object.freeze([]);

/** What the core remembers about the Ready it handed out, to settle it on `advance()`. */
interface OutstandingReady {
  /**
   * The last entry this Ready's writes vouch for once durable: its last entry, lowered when a
   * conflicting append (or a snapshot) replaces entries it writes before it is advanced — the
   * replacement is written by a later Ready, and the entries it replaced must not be marked stable
   * (etcd's ABA race of asynchronous storage writes).
   */
  lastEntryIndex: number;
  lastEntryTerm: number;
  readonly snapshotIndex: number;
  readonly applyingTo: number;
  readonly committedBytes: number;
  readonly selfMessages: readonly Message[];
}

/** A snapshot being received chunk by chunk from one leader in one term. */
interface SnapshotAssembly {
  readonly from: NodeId;
  readonly term: number;
  readonly index: number;
  readonly snapTerm: number;
  readonly count: number;
  readonly totalBytes: number;
  readonly chunks: Uint8Array[];
}

/** The replication view of one replica, for status and tests. */
export interface ProgressStatus {
  readonly match: number;
  readonly next: number;
  readonly state: ProgressState;
  readonly recentActive: boolean;
  readonly isLearner: boolean;
  readonly inflightMessages: number;
  readonly inflightBytes: number;
}

export interface RaftStatus {
  readonly id: NodeId;
  readonly term: number;
  readonly vote: NodeId | undefined;
  readonly lead: NodeId | undefined;
  readonly role: RaftRole;
  readonly commit: number;
  readonly applied: number;
  readonly firstIndex: number;
  readonly lastIndex: number;
  readonly confState: ConfState;
  readonly leadTransferee: NodeId | undefined;
  /** Per replica, as the leader sees it; empty on other roles. */
  readonly progress: ReadonlyMap<NodeId, ProgressStatus>;
}

function resolveConfig(config: RaftConfig, storage: RaftStorage): ResolvedRaftConfig {
  const resolved: ResolvedRaftConfig = {
    ...RAFT_DEFAULTS,
    applied: storage.firstIndex() - 1,
    ...stripUndefined(config),
  } as ResolvedRaftConfig;
  const positive: (keyof ResolvedRaftConfig)[] = [
    'electionTicks',
    'heartbeatTicks',
    'maxSizePerMsg',
    'maxInflightMsgs',
    'maxInflightBytes',
    'maxUncommittedEntriesBytes',
    'maxCommittedBytesPerReady',
    'snapshotChunkBytes',
    'maxSnapshotChunksInflight',
    'maxPendingReadIndex',
    'maxReadiesInFlight',
  ];
  for (const key of positive) {
    const value = resolved[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new RaftConfigError(`${key} must be a positive integer, got ${String(value)}`);
    }
  }
  if (resolved.electionTicks <= resolved.heartbeatTicks) {
    throw new RaftConfigError('electionTicks must be greater than heartbeatTicks');
  }
  if (resolved.id === '') throw new RaftConfigError('id must not be empty');
  return resolved;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  const out: Partial<T> = {};
  for (const key of Object.keys(value) as (keyof T)[]) {
    if (value[key] !== undefined) out[key] = value[key];
  }
  return out;
}

/**
 * One Raft replica as a pure, deterministic state machine (etcd's raft + RawNode, rewritten).
 *
 * Inputs: `tick()` (the host's timer, in ticks), `step(message)` (from the network), `propose`,
 * `proposeConfChange`, `applyConfChange`, `transferLeader`, `readIndex`, `campaign`. Output: a
 * `Ready` (what to persist, send, apply), settled with `advance()`. No clock, timer, randomness
 * (an injected `RaftRandom` draws election jitter) or I/O inside: the same inputs give the same
 * outputs, which is what makes the simulator's seeds replay bit for bit.
 *
 * Safety rules it keeps (each one a classic bug of engineering.md §1.6 when broken):
 * - votes and append acknowledgements are released only after what they promise is persisted
 *   (`Ready.persistedMessages`; the leader's own acknowledgement is stepped in `advance()`);
 * - the leader commits only entries of its current term by counting (a no-op starts each term);
 * - a follower truncates only at the first conflicting entry, never a committed one, and commits
 *   only what the message proved (min(leaderCommit, last new index));
 * - higher terms make it a follower first; lower terms are dropped (or answered to unstick);
 * - one vote per term, only for an up-to-date log; each voter counted once;
 * - pre-vote changes neither term nor vote; check-quorum steps a cut-off leader down;
 * - reads are confirmed by a heartbeat quorum after a commit in the current term (ReadIndex);
 * - one membership change at a time, effective when applied;
 * - a snapshot at or below the commit index is never installed;
 * - `advance()` marks entries stable only if they were not replaced meanwhile.
 * Broken invariants throw `RaftInvariantError`: the replica must stop.
 */
export class RaftCore {
  readonly id: NodeId;
  readonly #cfg: ResolvedRaftConfig;
  readonly #mut: Mutations;
  readonly #random: RaftRandom;
  readonly #log: RaftLog;

  #term = 0;
  #vote: NodeId | undefined;
  #lead: NodeId | undefined;
  #role: RaftRole = RaftRole.Follower;
  #config: MembershipConfig;
  #progress = new Map<NodeId, Progress>();
  #votes = new Map<NodeId, boolean>();
  /** Granted vote responses received (counted per response only under a mutation). */
  #grantedResponses = 0;
  #isLearner = false;

  #msgs: Message[] = [];
  #msgsAfterAppend: Message[] = [];
  #readStates: ReadState[] = [];

  #electionElapsed = 0;
  #elections = 0;
  #preVotes = 0;
  #electionsWon = 0;
  #heartbeatElapsed = 0;
  #randomizedElectionTimeout = 0;
  /** The election timer runs a short delay set by `forgetLeader`: a normal draw replaces it next. */
  #quickElection = false;
  #leadTransferee: NodeId | undefined;
  /** Index of the latest conf change the leader appended; none may be proposed until it is applied. */
  #pendingConfIndex = 0;
  #uncommittedBytes = 0;
  readonly #reads: ReadIndexQueue;
  /** Read requests that arrived before this leader committed an entry of its term. */
  #readsBeforeTermCommit: { from: NodeId; context: string }[] = [];
  #assembly: SnapshotAssembly | undefined;
  /** A received snapshot waiting for the host to finish applying the outstanding Ready. */
  #deferredSnapshot: { from: NodeId; term: number; snapshot: Snapshot } | undefined;
  /** Entries were appended since the last broadcast; flushed at `ready()` (batching). */
  #bcastPending = false;
  /** The commit index moved since the last broadcast; flushed at `ready()` with the entries. */
  #commitBcastPending = false;

  #prevSoft: SoftState;
  #prevHard: HardState;
  /** Readys handed out and not advanced yet, oldest first (at most `maxReadiesInFlight`). */
  #outstanding: OutstandingReady[] = [];

  readonly #acked = (id: NodeId): number => this.#progress.get(id)?.match ?? 0;

  /**
   * @param mutations TEST ONLY: re-enables classic bugs for the mutation gate (see mutations.ts).
   */
  constructor(
    config: RaftConfig,
    storage: RaftStorage,
    random: RaftRandom,
    mutations: Mutations = NO_MUTATIONS,
  ) {
    this.#cfg = resolveConfig(config, storage);
    this.id = this.#cfg.id;
    this.#mut = mutations;
    this.#random = random;
    this.#reads = new ReadIndexQueue();
    this.#log = new RaftLog(storage, this.#cfg.maxCommittedBytesPerReady);
    this.#log.unstable.onOverwrite = (first) => this.#onOverwrite(first);
    const { hardState, confState } = storage.initialState();
    this.#config = fromConfState(confState);
    this.#reconcileProgress();
    if (hardState.term !== 0 || hardState.vote !== undefined || hardState.commit !== 0) {
      invariant(
        hardState.commit >= this.#log.committed && hardState.commit <= this.#log.lastIndex(),
        () => `stored commit ${hardState.commit} outside [${this.#log.committed}, ${this.#log.lastIndex()}]`,
      );
      this.#log.committed = hardState.commit;
      this.#term = hardState.term;
      this.#vote = hardState.vote;
    }
    const applied = this.#cfg.applied;
    if (applied > this.#log.applied) this.#log.appliedTo(applied);
    this.#becomeFollower(this.#term, undefined);
    this.#prevSoft = this.#softState();
    this.#prevHard = this.#hardState();
  }

  // ---------------------------------------------------------------------------------------------
  // Inspection

  /** Current term (volatile view; the durable one is in the last persisted HardState). */
  get term(): number {
    return this.#term;
  }
  /** Elections this replica started (became candidate, past any pre-vote) since it was created. */
  get elections(): number {
    return this.#elections;
  }
  /** Pre-vote rounds this replica started since it was created (each may end in an election or not). */
  get preVotes(): number {
    return this.#preVotes;
  }
  /**
   * Elections this replica won since it was created. `elections - electionsWon` counts the
   * elections it lost or abandoned: split votes, a rival's win, a term that timed out.
   */
  get electionsWon(): number {
    return this.#electionsWon;
  }
  /** Who this replica voted for in the current term. */
  get vote(): NodeId | undefined {
    return this.#vote;
  }
  /** The leader this replica knows of in the current term. */
  get lead(): NodeId | undefined {
    return this.#lead;
  }
  get role(): RaftRole {
    return this.#role;
  }
  /** Highest index known committed. */
  get commitIndex(): number {
    return this.#log.committed;
  }
  /** Highest index the host has applied (as of the last `advance()`). */
  get appliedIndex(): number {
    return this.#log.applied;
  }
  /** Index of the last entry (persisted or not). */
  get lastIndex(): number {
    return this.#log.lastIndex();
  }
  /** Index of the first entry still in the log (snapshot index + 1). */
  get firstIndex(): number {
    return this.#log.firstIndex();
  }
  get isLearner(): boolean {
    return this.#isLearner;
  }
  /** The voter leadership is being handed to, while a transfer is in progress. */
  get leadTransferee(): NodeId | undefined {
    return this.#leadTransferee;
  }

  /** Term of the entry at `index`, or undefined when compacted away or absent. */
  termAt(index: number): number | undefined {
    const term = this.#log.term(index);
    return term === NO_TERM ? undefined : term;
  }

  /** Entries [lo, hi) of the log (lo >= firstIndex, hi <= lastIndex + 1). */
  entries(lo: number, hi: number): Entry[] {
    return this.#log.slice(lo, hi, Number.POSITIVE_INFINITY);
  }

  /** How far the leader knows `id`'s log matches its own; undefined on a follower or for a non-member. */
  matchOf(id: NodeId): number | undefined {
    return this.#role === RaftRole.Leader ? this.#progress.get(id)?.match : undefined;
  }

  confState(): ConfState {
    return toConfState(this.#config);
  }

  /** The current membership (immutable; replaced on every change). */
  membership(): MembershipConfig {
    return this.#config;
  }

  status(): RaftStatus {
    const progress = new Map<NodeId, ProgressStatus>();
    if (this.#role === RaftRole.Leader) {
      for (const [id, pr] of this.#progress) {
        progress.set(id, {
          match: pr.match,
          next: pr.next,
          state: pr.state,
          recentActive: pr.recentActive,
          isLearner: pr.isLearner,
          inflightMessages: pr.inflights.count,
          inflightBytes: pr.inflights.bytes,
        });
      }
    }
    return {
      id: this.id,
      term: this.#term,
      vote: this.#vote,
      lead: this.#lead,
      role: this.#role,
      commit: this.#log.committed,
      applied: this.#log.applied,
      firstIndex: this.#log.firstIndex(),
      lastIndex: this.#log.lastIndex(),
      confState: this.confState(),
      leadTransferee: this.#leadTransferee,
      progress,
    };
  }

  // ---------------------------------------------------------------------------------------------
  // Inputs

  /** Advance the logical clock by one tick. */
  tick(): void {
    if (this.#role === RaftRole.Leader) this.#tickHeartbeat();
    else this.#tickElection();
  }

  /** Start an election now (as if the election timeout elapsed). */
  campaign(): void {
    this.#hup(false);
  }

  /**
   * The transport says `leader` is unreachable (its connection closed, or the failure detector
   * suspects it). A follower of `leader` forgets it, as etcd-raft's MsgForgetLeader does, so it no
   * longer holds the leader's lease against other replicas' (pre-)votes, and campaigns after a
   * short random delay (1 to electionTicks / 2 ticks) instead of a whole election timeout: a
   * crashed leader is replaced in a fraction of the time. Safety never rests on timing; if the
   * word was wrong, the replicas that still hear the leader refuse the pre-vote from inside their
   * lease, and the leader's next message makes this replica its follower again. Anything but a
   * follower of `leader` ignores it. Returns whether this replica forgot its leader.
   *
   * `delayTicks` replaces the random delay: a host that loses the leader of thousands of groups at
   * once spreads their campaigns over more ticks, and lets one replica of each group go first.
   */
  forgetLeader(leader: NodeId, delayTicks?: number): boolean {
    if (this.#role !== RaftRole.Follower || this.#lead !== leader || leader === this.id) return false;
    this.#lead = undefined;
    this.#electionElapsed = 0;
    this.#randomizedElectionTimeout =
      delayTicks === undefined
        ? 1 + this.#random.nextInt(Math.max(1, this.#cfg.electionTicks >> 1))
        : Math.max(1, Math.floor(delayTicks));
    this.#quickElection = true;
    return true;
  }

  /**
   * Append `data` as a new entry. Returns its index. Throws `ProposalDroppedError` if this replica
   * cannot take it now (not the leader, a transfer in progress, the uncommitted bytes bound).
   * Proposals made between two Readys leave as one append per follower (batching).
   */
  propose(data: Uint8Array): number {
    this.#checkCanPropose();
    if (!this.#increaseUncommitted(data.byteLength)) {
      throw new ProposalDroppedError(DropReason.UncommittedLimit, this.#lead);
    }
    return this.#appendEntry(EntryType.Normal, data);
  }

  /**
   * Append a membership change. Refused while another is pending (appended, not yet applied), when
   * it does not apply to the current configuration, or for the same reasons as `propose`.
   */
  proposeConfChange(cc: ConfChangeV2): number {
    this.#checkCanPropose();
    if (!this.#mut.concurrentConfChanges && this.#pendingConfIndex > this.#log.applied) {
      throw new ProposalDroppedError(
        DropReason.ConfChangePending,
        this.#lead,
        `index ${this.#pendingConfIndex} not applied yet (applied ${this.#log.applied})`,
      );
    }
    const joint = isJoint(this.#config);
    const leave = isLeaveJoint(cc);
    if (joint && !leave) {
      throw new ProposalDroppedError(
        DropReason.ConfChangeInvalid,
        this.#lead,
        'must leave the joint config first',
      );
    }
    if (!joint && leave) {
      throw new ProposalDroppedError(DropReason.ConfChangeInvalid, this.#lead, 'not in a joint config');
    }
    try {
      applyChange(this.#config, cc);
    } catch (error) {
      if (error instanceof ConfChangeError) {
        throw new ProposalDroppedError(DropReason.ConfChangeInvalid, this.#lead, error.message);
      }
      throw error;
    }
    const data = encodeConfChange(cc);
    if (!this.#increaseUncommitted(data.byteLength)) {
      throw new ProposalDroppedError(DropReason.UncommittedLimit, this.#lead);
    }
    const index = this.#appendEntry(EntryType.ConfChange, data);
    this.#pendingConfIndex = index;
    return index;
  }

  /**
   * The host applies a committed conf-change entry: switch to the new configuration. Returns the
   * membership to persist with later snapshots. A change that does not apply throws: it was
   * validated when proposed, so this means the log is corrupted.
   */
  applyConfChange(cc: ConfChangeV2): ConfState {
    const next = applyChange(this.#config, cc);
    this.#switchToConfig(next);
    return toConfState(next);
  }

  /** Hand leadership to `to` (a voter). On a follower the request is forwarded to the leader. */
  transferLeader(to: NodeId): void {
    if (this.#role === RaftRole.Leader) {
      this.#handleTransferLeader(to);
    } else if (this.#lead !== undefined) {
      this.#send(
        this.#msg(MessageType.TransferLeader, this.#lead, this.#term, 0, 0, NO_ENTRIES, 0, false, 0, to),
      );
    }
  }

  /**
   * Ask for a read index for request `context`, unique per request across every replica of the
   * group and every restart (the leader keeps one pending read per context: a second request with
   * a context already pending is ignored, whoever sent it). The answer comes as a
   * `ReadState` in a later Ready, or never (the host times out and retries): on a follower the
   * request is forwarded to the leader. Returns false if it was dropped at once (no leader known,
   * or the pending-reads bound reached).
   */
  readIndex(context: string): boolean {
    if (context === '') throw new RangeError('readIndex: context must not be empty');
    if (this.#role === RaftRole.Leader) return this.#handleReadIndex(this.id, context);
    if (this.#lead === undefined) return false;
    this.#send(
      this.#msg(MessageType.ReadIndex, this.#lead, this.#term, 0, 0, NO_ENTRIES, 0, false, 0, context),
    );
    return true;
  }

  /** The transport could not reach `id`: stop pipelining to it and probe again. */
  reportUnreachable(id: NodeId): void {
    if (this.#role !== RaftRole.Leader) return;
    const pr = this.#progress.get(id);
    if (pr !== undefined && pr.state === ProgressState.Replicate) pr.becomeProbe();
  }

  /** Process a message from another replica. */
  step(m: Message): void {
    if (m.from === this.id) throw new UnexpectedMessageError(`message from self (${m.type}) through step()`);
    if (m.to !== this.id) throw new UnexpectedMessageError(`message for ${m.to} stepped into ${this.id}`);
    this.#step(m);
  }

  // ---------------------------------------------------------------------------------------------
  // Ready / advance

  /** Whether `ready()` has anything; false while a Ready is outstanding (not advanced). */
  hasReady(): boolean {
    const outstanding = this.#outstanding;
    if (outstanding.length > 0) {
      if (outstanding.length >= this.#cfg.maxReadiesInFlight) return false;
      // A snapshot is a barrier: nothing is cut behind one until it is durable, and a received
      // snapshot waits for the pipeline to drain (see #handleSnapshot).
      if (this.#deferredSnapshot !== undefined) return false;
      for (const rd of outstanding) if (rd.snapshotIndex > 0) return false;
    }
    if ((this.#bcastPending || this.#commitBcastPending) && this.#role === RaftRole.Leader) return true;
    if (this.#msgs.length > 0 || this.#msgsAfterAppend.length > 0) return true;
    if (this.#log.unstable.hasNotInProgress()) return true;
    if (this.#readStates.length > 0) return true;
    if (this.#log.hasNextCommittedEntries()) return true;
    const hard = this.#prevHard;
    if (hard.term !== this.#term || hard.vote !== this.#vote || hard.commit !== this.#log.committed)
      return true;
    const soft = this.#prevSoft;
    return soft.lead !== this.#lead || soft.role !== this.#role;
  }

  /**
   * Take the next batch of work. At most `maxReadiesInFlight` Readys may be taken and not yet
   * advanced (default 1: `advance()` before the next `ready()`); each `advance()` settles the oldest.
   * The core keeps stepping and ticking in between, and what that produces goes in the next Ready.
   */
  ready(): Ready {
    invariant(
      this.#outstanding.length < this.#cfg.maxReadiesInFlight,
      () =>
        `ready() with ${this.#outstanding.length} Readys not advanced (maxReadiesInFlight ${this.#cfg.maxReadiesInFlight})`,
    );
    this.#flushBroadcast();
    const log = this.#log;
    const unstable = log.unstable;

    const soft = this.#softState();
    const softChanged = soft.lead !== this.#prevSoft.lead || soft.role !== this.#prevSoft.role;
    const prevHard = this.#prevHard;
    const hardChanged =
      prevHard.term !== this.#term || prevHard.vote !== this.#vote || prevHard.commit !== log.committed;
    const hard = hardChanged ? this.#hardState() : undefined;

    const snapshot = unstable.snapshotInProgress ? undefined : unstable.snapshot;
    const taken = unstable.takeNotInProgress();
    const entries = taken.length > 0 ? taken : NO_ENTRIES;
    const committedEntries = log.nextCommittedEntries();
    let applyingTo = 0;
    let committedBytes = 0;
    if (committedEntries.length > 0) {
      applyingTo = (committedEntries[committedEntries.length - 1] as Entry).index;
      log.acceptApplying(applyingTo);
      for (const entry of committedEntries) committedBytes += entry.data.byteLength;
    }

    let messages: Message[] | readonly Message[] = this.#msgs.length > 0 ? this.#msgs : NO_MESSAGES;
    this.#msgs = [];
    let persistedMessages: Message[] = [];
    const selfMessages: Message[] = [];
    const early: Message[] = [];
    const mut = this.#mut;
    for (const m of this.#msgsAfterAppend) {
      if (!this.#acknowledgesHeldEntry(m)) continue;
      if (m.to === this.id) {
        if (mut.countUnsyncedLeaderEntries && m.type === MessageType.AppResp) early.push(m);
        else selfMessages.push(m);
      } else if (
        (mut.ackAppendBeforeSync && m.type === MessageType.AppResp && !m.reject) ||
        (mut.voteBeforeSync && m.type === MessageType.VoteResp && !m.reject)
      ) {
        messages = [...messages, m];
      } else {
        persistedMessages.push(m);
      }
    }
    this.#msgsAfterAppend = [];
    if (mut.replyBeforePersist && persistedMessages.length > 0) {
      messages = [...messages, ...persistedMessages];
      persistedMessages = [];
    }
    const readStates = this.#readStates.length > 0 ? this.#readStates : NO_READ_STATES;
    this.#readStates = [];

    const lastEntry = entries[entries.length - 1];
    const mustSync =
      entries.length > 0 ||
      snapshot !== undefined ||
      prevHard.term !== this.#term ||
      prevHard.vote !== this.#vote;

    this.#outstanding.push({
      lastEntryIndex: lastEntry?.index ?? 0,
      lastEntryTerm: lastEntry?.term ?? 0,
      snapshotIndex: snapshot?.meta.index ?? 0,
      applyingTo,
      committedBytes,
      selfMessages,
    });
    if (softChanged) this.#prevSoft = soft;
    if (hard !== undefined) this.#prevHard = hard;
    // Mutation only: the leader counts its entries as soon as they are handed to storage.
    for (const m of early) this.#step(m);
    return {
      softState: softChanged ? soft : undefined,
      hardState: hard,
      entries,
      snapshot,
      committedEntries,
      messages,
      persistedMessages,
      readStates,
      mustSync,
    };
  }

  /**
   * Whether `m`, if it acknowledges an append, still tells the truth. An acknowledgement waits for
   * the next Ready's sync, but the log may change before that Ready is cut: a newer leader's
   * conflicting append can replace the acknowledged entry, which then never reaches the disk.
   * Released after the sync of the replacement, it would promise an entry we do not hold, and an
   * old leader could count it toward committing that entry. An acknowledgement holds while our
   * entry at its index still has the term it had when it was made (by log matching, so does the
   * whole prefix); one that does not is dropped, as a lost message would be.
   */
  #acknowledgesHeldEntry(m: Message): boolean {
    if (m.type !== MessageType.AppResp || m.reject || m.index === 0 || this.#mut.ackReplacedEntries) {
      return true;
    }
    return this.#log.term(m.index) === m.logTerm;
  }

  /** The host finished the last Ready: it is persisted, its messages sent, its entries applied. */
  advance(): void {
    const rd = this.#outstanding.shift();
    invariant(rd !== undefined, 'advance() without an outstanding ready()');
    const log = this.#log;
    if (rd.snapshotIndex > 0) {
      log.unstable.stableSnapTo(rd.snapshotIndex);
      if (rd.snapshotIndex > log.applied) log.appliedTo(rd.snapshotIndex);
    }
    if (rd.lastEntryIndex > 0) {
      log.unstable.stableTo(rd.lastEntryIndex, rd.lastEntryTerm, this.#mut.stableToIgnoresTerm);
    }
    if (rd.applyingTo > 0) {
      log.appliedTo(rd.applyingTo);
      if (this.#role === RaftRole.Leader) {
        this.#uncommittedBytes = Math.max(0, this.#uncommittedBytes - rd.committedBytes);
      }
    }
    const deferred = this.#deferredSnapshot;
    if (deferred !== undefined && this.#outstanding.length === 0) {
      this.#deferredSnapshot = undefined;
      // Still the follower of the leader that sent it (a new term or role dropped it in #reset).
      if (this.#role === RaftRole.Follower && this.#lead === deferred.from) {
        this.#installSnapshot(deferred.from, deferred.snapshot);
      }
    }
    // Auto-leave: once the joint config this leader is responsible for is applied, leave it.
    if (
      this.#role === RaftRole.Leader &&
      this.#config.autoLeave &&
      isJoint(this.#config) &&
      log.applied >= this.#pendingConfIndex &&
      this.#leadTransferee === undefined
    ) {
      this.#pendingConfIndex = this.#appendEntry(EntryType.ConfChange, encodeConfChange(LEAVE_JOINT));
    }
    // Our own vote and append acknowledgement count only now that they are durable.
    for (const m of rd.selfMessages) this.#step(m);
  }

  /**
   * Entries from `first` on (all of them for -1) were replaced while Readys writing them are
   * outstanding: those Readys now vouch only for the entries before `first`, which are unchanged.
   * Without this, a Ready whose entry at its last index was replaced and then written back (same
   * index and term, by a later leader) would mark it stable while a Ready still in flight
   * overwrites it in storage with the entry in between (etcd's ABA race; etcd drops the stale
   * acknowledgement by its term, this keeps the prefix that is still true).
   */
  #onOverwrite(first: number): void {
    if (this.#mut.stableToIgnoresTerm || this.#mut.stableIgnoresOverwriteInFlight) return;
    for (const rd of this.#outstanding) {
      if (rd.lastEntryIndex >= first && rd.lastEntryIndex > 0) {
        rd.lastEntryIndex = Math.max(0, first - 1);
        rd.lastEntryTerm = first > 0 ? this.#log.term(first - 1) : 0;
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Role transitions

  #softState(): SoftState {
    return { lead: this.#lead, role: this.#role };
  }

  #hardState(): HardState {
    return { term: this.#term, vote: this.#vote, commit: this.#log.committed };
  }

  #reset(term: number): void {
    if (this.#term !== term) {
      this.#term = term;
      this.#vote = undefined;
    }
    this.#lead = undefined;
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#resetRandomizedElectionTimeout();
    this.#leadTransferee = undefined;
    this.#deferredSnapshot = undefined;
    this.#votes.clear();
    this.#grantedResponses = 0;
    const next = this.#log.lastIndex() + 1;
    for (const [id, pr] of this.#progress) {
      const fresh = this.#newProgress(next, pr.isLearner);
      this.#progress.set(id, fresh);
    }
    this.#pendingConfIndex = 0;
    this.#uncommittedBytes = 0;
    this.#reads.clear();
    this.#readsBeforeTermCommit = [];
    this.#bcastPending = false;
    this.#commitBcastPending = false;
  }

  #newProgress(next: number, isLearner: boolean): Progress {
    const unbounded = this.#mut.unboundedQueues;
    return new Progress(
      next,
      unbounded ? Number.POSITIVE_INFINITY : this.#cfg.maxInflightMsgs,
      unbounded ? 0 : this.#cfg.maxInflightBytes,
      isLearner,
    );
  }

  #resetRandomizedElectionTimeout(): void {
    this.#quickElection = false;
    const base = this.#cfg.electionTicks;
    this.#randomizedElectionTimeout = this.#mut.fixedElectionTimeout
      ? base
      : base + this.#random.nextInt(base);
  }

  #becomeFollower(term: number, lead: NodeId | undefined): void {
    this.#reset(term);
    this.#lead = lead;
    this.#role = RaftRole.Follower;
  }

  #becomePreCandidate(): void {
    invariant(this.#role !== RaftRole.Leader, 'leader cannot become pre-candidate');
    // Neither the term nor the vote changes: a pre-vote round must leave no trace if it fails.
    this.#votes.clear();
    this.#grantedResponses = 0;
    this.#lead = undefined;
    this.#role = RaftRole.PreCandidate;
    this.#preVotes++;
  }

  #becomeCandidate(): void {
    invariant(this.#role !== RaftRole.Leader, 'leader cannot become candidate');
    this.#reset(this.#term + 1);
    this.#vote = this.id;
    this.#role = RaftRole.Candidate;
    this.#elections++;
  }

  #becomeLeader(): void {
    invariant(this.#role !== RaftRole.Follower, 'follower cannot become leader without an election');
    this.#reset(this.#term);
    this.#lead = this.id;
    this.#role = RaftRole.Leader;
    this.#electionsWon++;
    const self = this.#progress.get(this.id);
    if (self !== undefined) {
      // Our own match comes from our durable self-acknowledgements only (see advance()).
      self.becomeReplicate();
      self.recentActive = true;
    }
    // Conservatively assume the uncommitted tail holds a conf change: none may be proposed until
    // everything this leader inherited is applied.
    this.#pendingConfIndex = this.#log.lastIndex();
    // The no-op of the new term: committing it commits every earlier entry indirectly (§5.4.2).
    this.#appendEntry(EntryType.Normal, new Uint8Array(0));
  }

  #promotable(): boolean {
    return (
      this.#progress.has(this.id) &&
      !this.#isLearner &&
      isVoter(this.#config, this.id) &&
      this.#log.unstable.snapshot === undefined
    );
  }

  #tickElection(): void {
    this.#electionElapsed++;
    if (this.#promotable() && this.#electionElapsed >= this.#randomizedElectionTimeout) {
      this.#electionElapsed = 0;
      // A failed quick campaign retries after a whole election timeout, as any other would.
      if (this.#quickElection) this.#resetRandomizedElectionTimeout();
      this.#hup(false);
    }
  }

  #tickHeartbeat(): void {
    this.#heartbeatElapsed++;
    this.#electionElapsed++;
    if (this.#electionElapsed >= this.#cfg.electionTicks) {
      this.#electionElapsed = 0;
      if (this.#cfg.checkQuorum) this.#checkQuorum();
      // A transfer that did not finish within an election timeout is abandoned.
      if (this.#role === RaftRole.Leader && this.#leadTransferee !== undefined)
        this.#leadTransferee = undefined;
    }
    if (this.#role !== RaftRole.Leader) return;
    if (this.#heartbeatElapsed >= this.#cfg.heartbeatTicks) {
      this.#heartbeatElapsed = 0;
      this.#bcastHeartbeat(this.#reads.lastContext());
    }
  }

  #checkQuorum(): void {
    const active = new Map<NodeId, boolean>();
    for (const [id, pr] of this.#progress) active.set(id, id === this.id || pr.recentActive);
    if (
      jointVoteResult(this.#config.voters, active) !== VoteResult.Won &&
      !this.#mut.checkQuorumNeverStepsDown
    ) {
      this.#becomeFollower(this.#term, undefined);
    }
    for (const [id, pr] of this.#progress) if (id !== this.id) pr.recentActive = false;
  }

  /** Whether committed entries not yet applied include a conf change (then we must not campaign). */
  #hasUnappliedConfChanges(): boolean {
    const log = this.#log;
    if (log.applied >= log.committed) return false;
    let lo = Math.max(log.applied + 1, log.firstIndex());
    const hi = log.committed + 1;
    while (lo < hi) {
      const page = log.slice(lo, hi, this.#cfg.maxCommittedBytesPerReady);
      for (const entry of page) if (entry.type === EntryType.ConfChange) return true;
      lo += page.length;
    }
    return false;
  }

  #hup(transfer: boolean): void {
    if (this.#role === RaftRole.Leader) return;
    if (!this.#promotable()) return;
    if (this.#hasUnappliedConfChanges()) return;
    // Transfers skip pre-vote: the leader asked, so this is not a node recovering from a partition.
    if (this.#cfg.preVote && !transfer) this.#campaign(true, false);
    else this.#campaign(false, transfer);
  }

  #campaign(pre: boolean, transfer: boolean): void {
    let term: number;
    let type: MessageType;
    if (pre) {
      this.#becomePreCandidate();
      type = MessageType.PreVote;
      term = this.#term + 1;
    } else {
      this.#becomeCandidate();
      type = MessageType.Vote;
      term = this.#term;
    }
    const lastIndex = this.#log.lastIndex();
    const lastTerm = this.#log.lastTerm();
    const context = transfer ? CAMPAIGN_TRANSFER : '';
    const respType = pre ? MessageType.PreVoteResp : MessageType.VoteResp;
    for (const id of this.#voterIds()) {
      if (id === this.id) {
        // Our own vote, stepped in advance() once the term and vote are durable.
        this.#send(this.#msg(respType, this.id, term, 0, 0, NO_ENTRIES, 0, false, 0, ''));
      } else {
        this.#send(this.#msg(type, id, term, lastTerm, lastIndex, NO_ENTRIES, 0, false, 0, context));
      }
    }
  }

  #voterIds(): NodeId[] {
    const { incoming, outgoing } = this.#config.voters;
    if (outgoing.length === 0) return incoming as NodeId[];
    return [...new Set([...incoming, ...outgoing])].sort();
  }

  #poll(from: NodeId, granted: boolean): VoteResult {
    if (!this.#votes.has(from)) this.#votes.set(from, granted);
    if (this.#mut.countDuplicateVotes) {
      if (granted) this.#grantedResponses++;
      const quorum = (this.#config.voters.incoming.length >> 1) + 1;
      if (this.#grantedResponses >= quorum) return VoteResult.Won;
    }
    return jointVoteResult(this.#config.voters, this.#votes);
  }

  // ---------------------------------------------------------------------------------------------
  // Message handling

  #step(m: Message): void {
    if (m.term > this.#term) {
      if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
        const force = m.context === CAMPAIGN_TRANSFER;
        const inLease =
          this.#cfg.checkQuorum &&
          this.#lead !== undefined &&
          this.#electionElapsed < this.#cfg.electionTicks;
        // We heard from a leader within the minimum election timeout: a vote request now comes
        // from a node cut off from it (or removed), and must not disrupt the group.
        if (!force && inLease) return;
      }
      if (m.type === MessageType.PreVote) {
        // A pre-vote never changes our term.
      } else if (m.type === MessageType.PreVoteResp && !m.reject) {
        // A granted pre-vote echoes the term we would campaign in; it is not a newer term.
      } else if (
        m.type === MessageType.App ||
        m.type === MessageType.Heartbeat ||
        m.type === MessageType.Snap
      ) {
        this.#becomeFollower(m.term, m.from);
      } else {
        // A newer term from a candidate (or a reply naming it) is adopted, but it does not restart
        // our election timer: only a leader's message or a granted vote does (Raft §5.2). A
        // candidate whose log is too old to win, on a faster clock, would otherwise hold back
        // forever the timer of the one replica whose log could win.
        const elapsed = this.#electionElapsed;
        this.#becomeFollower(m.term, undefined);
        if (!this.#mut.termBumpResetsElectionTimer) this.#electionElapsed = elapsed;
      }
    } else if (m.term < this.#term && !this.#mut.acceptStaleTerm) {
      if (
        (m.type === MessageType.App || m.type === MessageType.Heartbeat) &&
        (this.#cfg.checkQuorum || this.#cfg.preVote || !this.#mut.silentToStaleLeader)
      ) {
        // A leader cut off from us may have missed our higher term: answer so it steps down. Our
        // own vote requests are no substitute: with check-quorum the leader ignores them inside its
        // lease, and a replica whose configuration is stale (it missed the change that made the
        // leader a voter) never sends them to the leader at all. Unanswered, such a replica stays
        // behind forever while the leader keeps its older term.
        this.#send(this.#msg(MessageType.AppResp, m.from, this.#term, 0, 0, NO_ENTRIES, 0, false, 0, ''));
      } else if (m.type === MessageType.PreVote) {
        // Reject explicitly: a pre-candidate stuck at a lower term would otherwise never learn ours.
        this.#send(this.#msg(MessageType.PreVoteResp, m.from, this.#term, 0, 0, NO_ENTRIES, 0, true, 0, ''));
      } else if (m.type === MessageType.Vote && !this.#mut.silentToStaleCandidate) {
        // Reject with our term (Raft §5.1; etcd ignores it): the candidate adopts it as a follower
        // and its next campaign outbids us. Ignored, a candidate whose votes must include ours can
        // only win once its term happens to pass ours, while we may never reach it: when our
        // configuration is stale, our own vote requests and appends go to other replicas. A
        // candidate that only learns a term number is no more disruptive than its next campaign.
        this.#send(this.#msg(MessageType.VoteResp, m.from, this.#term, 0, 0, NO_ENTRIES, 0, true, 0, ''));
      }
      return;
    }

    if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
      this.#handleVoteRequest(m);
      return;
    }
    switch (this.#role) {
      case RaftRole.Leader:
        this.#stepLeader(m);
        break;
      case RaftRole.Candidate:
      case RaftRole.PreCandidate:
        this.#stepCandidate(m);
        break;
      default:
        this.#stepFollower(m);
    }
  }

  #handleVoteRequest(m: Message): void {
    const pre = m.type === MessageType.PreVote;
    const canVote =
      this.#mut.voteTwice ||
      this.#vote === m.from ||
      (this.#vote === undefined && this.#lead === undefined) ||
      (pre && m.term > this.#term);
    const upToDate = this.#mut.voteIgnoresLog || this.#log.isUpToDate(m.logTerm, m.index);
    const respType = pre ? MessageType.PreVoteResp : MessageType.VoteResp;
    if (canVote && upToDate) {
      // The grant carries the request's term: for a pre-vote that is the term the candidate
      // would use, so it is not mistaken for a stale answer.
      this.#send(this.#msg(respType, m.from, m.term, 0, 0, NO_ENTRIES, 0, false, 0, ''));
      if (!pre) {
        this.#electionElapsed = 0;
        this.#vote = m.from;
      }
    } else {
      this.#send(this.#msg(respType, m.from, this.#term, 0, 0, NO_ENTRIES, 0, true, 0, ''));
    }
  }

  #stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.AppResp:
        this.#handleAppendResponse(m);
        break;
      case MessageType.HeartbeatResp:
        this.#handleHeartbeatResponse(m);
        break;
      case MessageType.SnapResp:
        this.#handleSnapshotResponse(m);
        break;
      case MessageType.TransferLeader:
        if (this.#progress.has(m.from)) this.#handleTransferLeader(m.context);
        break;
      case MessageType.ReadIndex:
        if (this.#progress.has(m.from)) this.#handleReadIndex(m.from, m.context);
        break;
      default:
        // Vote responses of an election already won, or messages for other roles: nothing to do.
        break;
    }
  }

  #stepCandidate(m: Message): void {
    const respType = this.#role === RaftRole.PreCandidate ? MessageType.PreVoteResp : MessageType.VoteResp;
    switch (m.type) {
      case MessageType.App:
        this.#becomeFollower(m.term, m.from);
        this.#handleAppend(m);
        break;
      case MessageType.Heartbeat:
        this.#becomeFollower(m.term, m.from);
        this.#handleHeartbeat(m);
        break;
      case MessageType.Snap:
        this.#becomeFollower(m.term, m.from);
        this.#handleSnapshotChunk(m);
        break;
      case MessageType.VoteResp:
      case MessageType.PreVoteResp: {
        if (m.type !== respType) break;
        const result = this.#poll(m.from, !m.reject);
        if (result === VoteResult.Won) {
          if (this.#role === RaftRole.PreCandidate) {
            if (this.#mut.preVoteElects) {
              this.#becomeCandidate();
              this.#becomeLeader();
            } else {
              this.#campaign(false, false);
            }
          } else {
            this.#becomeLeader();
          }
        } else if (result === VoteResult.Lost) {
          // A pre-candidate's term never moved, so this is the term we already had.
          this.#becomeFollower(this.#term, undefined);
        }
        break;
      }
      default:
        break;
    }
  }

  /** A follower heard from the leader of its term: its election timer restarts (a whole timeout). */
  #heardFromLeader(from: NodeId): void {
    this.#electionElapsed = 0;
    this.#lead = from;
    if (this.#quickElection) this.#resetRandomizedElectionTimeout();
  }

  #stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.App:
        this.#heardFromLeader(m.from);
        this.#handleAppend(m);
        break;
      case MessageType.Heartbeat:
        this.#heardFromLeader(m.from);
        this.#handleHeartbeat(m);
        break;
      case MessageType.Snap:
        this.#heardFromLeader(m.from);
        this.#handleSnapshotChunk(m);
        break;
      case MessageType.TimeoutNow:
        this.#hup(true);
        break;
      case MessageType.ReadIndexResp:
        this.#readStates.push({ index: m.index, context: m.context });
        break;
      default:
        // Forwarded requests reaching a follower, stale responses: dropped.
        break;
    }
  }

  #handleAppend(m: Message): void {
    const log = this.#log;
    if (m.index < log.committed) {
      this.#sendAppendAck(m.from, log.committed);
      return;
    }
    const lastNew = log.maybeAppend(m.index, m.logTerm, m.commit, m.entries, this.#mut);
    if (lastNew >= 0) {
      this.#sendAppendAck(m.from, lastNew);
      return;
    }
    // Reject with a hint: the largest index <= min(m.index, our last) whose term is <= m.logTerm.
    // The leader can skip everything after it (see RaftLog.findConflictByTerm).
    const hintIndex = log.findConflictByTerm(Math.min(m.index, log.lastIndex()), m.logTerm);
    const hintTerm = log.term(hintIndex);
    this.#send(
      this.#msg(
        MessageType.AppResp,
        m.from,
        this.#term,
        hintTerm === NO_TERM ? 0 : hintTerm,
        m.index,
        NO_ENTRIES,
        0,
        true,
        hintIndex,
        '',
      ),
    );
  }

  #handleHeartbeat(m: Message): void {
    // The leader sends min(our match, its commit), so this never passes what we hold in its term.
    const log = this.#log;
    log.commitTo(this.#mut.commitPastProven ? Math.min(m.commit, log.lastIndex()) : m.commit);
    this.#send(
      this.#msg(MessageType.HeartbeatResp, m.from, this.#term, 0, 0, NO_ENTRIES, 0, false, 0, m.context),
    );
  }

  #handleSnapshotChunk(m: Message): void {
    const chunk = m.snapshot;
    if (chunk === undefined) return;
    const meta = chunk.meta;
    const log = this.#log;
    if (meta.index <= log.committed && !this.#mut.installStaleSnapshot) {
      // Nothing to install: we already have (and committed) everything it covers.
      this.#assembly = undefined;
      this.#sendAppendAck(m.from, log.committed);
      return;
    }
    let asm = this.#assembly;
    if (
      asm === undefined ||
      asm.from !== m.from ||
      asm.term !== m.term ||
      asm.index !== meta.index ||
      asm.snapTerm !== meta.term ||
      asm.count !== chunk.count
    ) {
      // Chunks of different senders or terms are never mixed: two leaders may encode the same
      // state differently.
      if (chunk.chunk !== 0) {
        this.#sendSnapResp(m.from, meta.index, true, 0);
        return;
      }
      asm = {
        from: m.from,
        term: m.term,
        index: meta.index,
        snapTerm: meta.term,
        count: chunk.count,
        totalBytes: chunk.totalBytes,
        chunks: [],
      };
      this.#assembly = asm;
    }
    const received = asm.chunks.length;
    if (chunk.chunk !== received) {
      // A duplicate (ack what we have) or a gap (ask for the missing chunk again).
      this.#sendSnapResp(m.from, meta.index, chunk.chunk > received, received);
      return;
    }
    asm.chunks.push(chunk.data);
    if (asm.chunks.length < asm.count) {
      this.#sendSnapResp(m.from, meta.index, false, asm.chunks.length);
      return;
    }
    this.#assembly = undefined;
    const snapshot: Snapshot = { meta, data: concat(asm.chunks, asm.totalBytes) };
    if (
      (log.applying > log.applied || this.#outstanding.some((rd) => rd.snapshotIndex > 0)) &&
      !this.#mut.installSnapshotWhileApplying
    ) {
      // The host is applying committed entries of the outstanding Ready. Installing now would put
      // the snapshot's configuration under them (a conf change among them would then apply to a
      // configuration that already includes it): install once they are applied, in advance().
      this.#deferredSnapshot = { from: m.from, term: m.term, snapshot };
      return;
    }
    this.#installSnapshot(m.from, snapshot);
  }

  #installSnapshot(from: NodeId, snapshot: Snapshot): void {
    const log = this.#log;
    this.#sendAppendAck(from, this.#restore(snapshot) ? log.lastIndex() : log.committed);
  }

  /**
   * Acknowledge holding the log up to `index`. The acknowledgement carries the term of our entry
   * at `index` (as `logTerm`, which a leader reads only on rejections) so that `ready()` can tell
   * whether that entry is still the one we hold when the acknowledgement is released.
   */
  #sendAppendAck(to: NodeId, index: number): void {
    const term = this.#log.term(index);
    this.#send(
      this.#msg(
        MessageType.AppResp,
        to,
        this.#term,
        term === NO_TERM ? 0 : term,
        index,
        NO_ENTRIES,
        0,
        false,
        0,
        '',
      ),
    );
  }

  #sendSnapResp(to: NodeId, index: number, reject: boolean, nextChunk: number): void {
    this.#send(
      this.#msg(MessageType.SnapResp, to, this.#term, 0, index, NO_ENTRIES, 0, reject, nextChunk, ''),
    );
  }

  /** Install a snapshot from the leader. Returns false when it was not installed (nothing new). */
  #restore(snapshot: Snapshot): boolean {
    const log = this.#log;
    const meta = snapshot.meta;
    if (meta.index <= log.committed && !this.#mut.installStaleSnapshot) return false;
    invariant(this.#role === RaftRole.Follower, 'only a follower installs a snapshot');
    // Unlike etcd we do not refuse a snapshot whose configuration lacks us: a replica added after
    // the leader's latest snapshot gets exactly that, and becomes a member again when it applies
    // the entry that added it (until then it is simply not promotable).
    if (!this.#mut.installStaleSnapshot && log.matchTerm(meta.index, meta.term)) {
      // Our log already holds the snapshot's last entry: just fast-forward the commit.
      log.commitTo(meta.index);
      return false;
    }
    log.restore(snapshot);
    this.#config = fromConfState(meta.confState);
    this.#reconcileProgress();
    return true;
  }

  #handleAppendResponse(m: Message): void {
    const pr = this.#progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    const log = this.#log;
    if (m.reject) {
      let nextProbe = m.rejectHint;
      if (m.logTerm > 0) nextProbe = log.findConflictByTerm(m.rejectHint, m.logTerm);
      if (pr.maybeDecrTo(m.index, nextProbe)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.#sendAppend(m.from);
      }
      return;
    }
    if (!(pr.maybeUpdate(m.index) || (pr.match === m.index && pr.state === ProgressState.Probe))) return;
    if (pr.state === ProgressState.Probe) {
      pr.becomeReplicate();
    } else if (pr.state === ProgressState.Snapshot) {
      if (pr.match + 1 >= log.firstIndex()) {
        pr.becomeProbe();
        pr.becomeReplicate();
      } else if (pr.match >= pr.pendingSnapshot) {
        // Installed, but we compacted past it meanwhile: stream the newer snapshot.
        this.#startSnapshot(m.from, pr);
      }
    } else {
      pr.inflights.freeLE(m.index);
    }
    if (this.#maybeCommit()) {
      this.#releaseReadsBeforeTermCommit();
      this.#commitBcastPending = true;
    } else if (m.from !== this.id && pr.canBumpCommit(log.committed)) {
      // The follower may not know the latest commit yet: an empty append tells it.
      this.#sendAppend(m.from);
    }
    if (m.from !== this.id) {
      // Flow control may have opened (probe → replicate, acks freed the window): fill it.
      while (this.#maybeSendAppend(m.from, false)) {}
    }
    if (m.from === this.#leadTransferee && pr.match === log.lastIndex()) this.#sendTimeoutNow(m.from);
  }

  #handleHeartbeatResponse(m: Message): void {
    const pr = this.#progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    pr.msgAppFlowPaused = false;
    if (pr.state === ProgressState.Snapshot) {
      // Go-back-N: chunks unacknowledged while two heartbeats came back are presumed lost.
      if (pr.snapshotStalled()) pr.snapNextChunk = pr.snapAckedChunk;
      this.#sendSnapshotChunks(m.from, pr);
    } else if (pr.match < this.#log.lastIndex() || pr.state === ProgressState.Probe) {
      this.#sendAppend(m.from);
    }
    if (m.context === '') return;
    const acks = this.#reads.recordAck(m.from, m.context);
    if (acks === undefined) return;
    const withSelf = new Map(acks);
    withSelf.set(this.id, true);
    if (jointVoteResult(this.#config.voters, withSelf) !== VoteResult.Won) return;
    for (const read of this.#reads.confirmUpTo(m.context))
      this.#answerRead(read.from, read.context, read.index);
  }

  #handleSnapshotResponse(m: Message): void {
    const pr = this.#progress.get(m.from);
    if (pr === undefined || pr.state !== ProgressState.Snapshot || m.index !== pr.pendingSnapshot) return;
    pr.recentActive = true;
    if (m.reject) {
      // A gap (chunks lost or reordered) or a follower that lost its partial copy (restarted):
      // record what it holds, but resend nothing now. Resending on every rejection multiplies
      // traffic (each resent window draws more rejections); the next heartbeat response rewinds
      // to the acknowledged chunk instead, so retransmission costs one window per interval.
      pr.snapAckedChunk = m.rejectHint;
      return;
    }
    if (m.rejectHint <= pr.snapAckedChunk) return;
    pr.snapAckedChunk = m.rejectHint;
    if (pr.snapNextChunk < pr.snapAckedChunk) pr.snapNextChunk = pr.snapAckedChunk;
    this.#sendSnapshotChunks(m.from, pr);
  }

  #handleTransferLeader(to: NodeId): void {
    const pr = this.#progress.get(to);
    if (pr === undefined || pr.isLearner || !isVoter(this.#config, to)) return;
    if (this.#leadTransferee !== undefined) {
      if (this.#leadTransferee === to) return;
      this.#leadTransferee = undefined;
    }
    if (to === this.id) return;
    // The transfer must finish within one election timeout, or it is abandoned (tickHeartbeat).
    this.#electionElapsed = 0;
    this.#leadTransferee = to;
    if (pr.match === this.#log.lastIndex()) this.#sendTimeoutNow(to);
    else this.#sendAppend(to);
  }

  #sendTimeoutNow(to: NodeId): void {
    this.#send(this.#msg(MessageType.TimeoutNow, to, this.#term, 0, 0, NO_ENTRIES, 0, false, 0, ''));
  }

  /** Whether the leader's commit index covers an entry of its own term (ReadIndex precondition). */
  #committedEntryInCurrentTerm(): boolean {
    return this.#log.term(this.#log.committed) === this.#term;
  }

  #handleReadIndex(from: NodeId, context: string): boolean {
    if (!this.#mut.readIndexBeforeTermCommit && !this.#committedEntryInCurrentTerm()) {
      // Our commit index may lag what the previous leader committed until our no-op commits.
      if (this.#readsBeforeTermCommit.length >= this.#cfg.maxPendingReadIndex) return false;
      this.#readsBeforeTermCommit.push({ from, context });
      return true;
    }
    return this.#confirmRead(from, context);
  }

  #confirmRead(from: NodeId, context: string): boolean {
    const index = this.#log.committed;
    const { incoming, outgoing } = this.#config.voters;
    const singleton = outgoing.length === 0 && incoming.length === 1 && incoming[0] === this.id;
    if (singleton || this.#mut.readIndexWithoutQuorum) {
      this.#answerRead(from, context, index);
      return true;
    }
    if (this.#reads.size >= this.#cfg.maxPendingReadIndex) return false;
    if (!this.#reads.add(index, from, context)) return true;
    this.#bcastHeartbeat(context);
    return true;
  }

  #releaseReadsBeforeTermCommit(): void {
    if (this.#readsBeforeTermCommit.length === 0 || !this.#committedEntryInCurrentTerm()) return;
    const waiting = this.#readsBeforeTermCommit;
    this.#readsBeforeTermCommit = [];
    for (const read of waiting) this.#confirmRead(read.from, read.context);
  }

  #answerRead(from: NodeId, context: string, index: number): void {
    if (from === this.id) {
      this.#readStates.push({ index, context });
    } else {
      this.#send(
        this.#msg(MessageType.ReadIndexResp, from, this.#term, 0, index, NO_ENTRIES, 0, false, 0, context),
      );
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Leader: replication

  #checkCanPropose(): void {
    if (this.#role !== RaftRole.Leader) throw new ProposalDroppedError(DropReason.NotLeader, this.#lead);
    if (this.#leadTransferee !== undefined) {
      throw new ProposalDroppedError(DropReason.Transferring, this.#lead, `to ${this.#leadTransferee}`);
    }
    if (!this.#progress.has(this.id)) throw new ProposalDroppedError(DropReason.NotVoter, this.#lead);
  }

  #increaseUncommitted(bytes: number): boolean {
    if (
      this.#uncommittedBytes > 0 &&
      bytes > 0 &&
      this.#uncommittedBytes + bytes > this.#cfg.maxUncommittedEntriesBytes &&
      !this.#mut.unboundedQueues
    ) {
      return false;
    }
    this.#uncommittedBytes += bytes;
    return true;
  }

  #appendEntry(type: Entry['type'], data: Uint8Array): number {
    const index = this.#log.lastIndex() + 1;
    const entry: Entry = { term: this.#term, index, type, data };
    this.#log.append([entry]);
    // Acknowledge our own append once it is durable (stepped in advance()).
    this.#setSelfAck(index);
    this.#bcastPending = true;
    return index;
  }

  #setSelfAck(index: number): void {
    const pending = this.#msgsAfterAppend;
    for (let i = pending.length - 1; i >= 0; i--) {
      const m = pending[i] as Message;
      if (m.to === this.id && m.type === MessageType.AppResp && m.term === this.#term) {
        pending[i] = this.#msg(
          MessageType.AppResp,
          this.id,
          this.#term,
          this.#term,
          index,
          NO_ENTRIES,
          0,
          false,
          0,
          '',
        );
        return;
      }
    }
    pending.push(
      this.#msg(MessageType.AppResp, this.id, this.#term, this.#term, index, NO_ENTRIES, 0, false, 0, ''),
    );
  }

  #maybeCommit(): boolean {
    const index = jointCommittedIndex(this.#config.voters, this.#acked);
    if (!Number.isFinite(index)) return false;
    return this.#log.maybeCommit(index, this.#term, this.#mut.commitOldTermByCounting);
  }

  /**
   * Send what accumulated since the last Ready: new entries to every follower (pipelined up to its
   * window), and, if the commit index moved, at least one (possibly empty) append carrying it.
   * Deferring this to `ready()` batches every proposal and acknowledgement of one I/O turn into
   * one append per follower.
   */
  #flushBroadcast(): void {
    const entries = this.#bcastPending;
    const commit = this.#commitBcastPending;
    this.#bcastPending = false;
    this.#commitBcastPending = false;
    if ((!entries && !commit) || this.#role !== RaftRole.Leader) return;
    for (const id of this.#progress.keys()) {
      if (id === this.id) continue;
      if (this.#maybeSendAppend(id, commit)) while (this.#maybeSendAppend(id, false)) {}
    }
  }

  #sendAppend(to: NodeId): void {
    this.#maybeSendAppend(to, true);
  }

  /**
   * Send `to` the next append (entries from its `next`, up to maxSizePerMsg), or start a snapshot if
   * those entries are compacted. Returns whether a message was sent.
   */
  #maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.#progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const log = this.#log;
    const prevIndex = pr.next - 1;
    const prevTerm = log.term(prevIndex);
    if (prevTerm === NO_TERM) return this.#startSnapshot(to, pr);
    // With a full window (unpaused by a heartbeat response) send no entries: an empty append still
    // carries the commit and, if appends were lost, draws the rejection that restarts probing.
    const windowFull = pr.state === ProgressState.Replicate && pr.inflights.full();
    const entries = windowFull ? NO_ENTRIES : log.entriesFrom(pr.next, this.#cfg.maxSizePerMsg);
    if (entries.length === 0 && !sendIfEmpty) return false;
    let bytes = 0;
    for (const entry of entries) bytes += entry.data.byteLength;
    this.#send(
      this.#msg(MessageType.App, to, this.#term, prevTerm, prevIndex, entries, log.committed, false, 0, ''),
    );
    const last = entries.length > 0 ? (entries[entries.length - 1] as Entry).index : prevIndex;
    pr.sentEntries(entries.length, bytes, last);
    if (log.committed > pr.sentCommit) pr.sentCommit = log.committed;
    return true;
  }

  #startSnapshot(to: NodeId, pr: Progress): boolean {
    if (!pr.recentActive) return false;
    const snapshot = this.#log.snapshot();
    invariant(snapshot.meta.index > 0, 'need a snapshot to send, but storage has none');
    pr.becomeSnapshot(snapshot);
    this.#sendSnapshotChunks(to, pr);
    return true;
  }

  /** Send the next chunks of the snapshot in flight to `to`, up to the chunk window. */
  #sendSnapshotChunks(to: NodeId, pr: Progress): void {
    const snapshot = pr.snapshot;
    if (snapshot === undefined) return;
    const total = snapshot.data.byteLength;
    const size = this.#cfg.snapshotChunkBytes;
    const count = Math.max(1, Math.ceil(total / size));
    const window = this.#cfg.maxSnapshotChunksInflight;
    while (pr.snapNextChunk < count && pr.snapNextChunk - pr.snapAckedChunk < window) {
      const k = pr.snapNextChunk++;
      const chunk: SnapshotChunk = {
        meta: snapshot.meta,
        chunk: k,
        count,
        totalBytes: total,
        data: snapshot.data.subarray(k * size, Math.min(total, (k + 1) * size)),
      };
      this.#send({
        type: MessageType.Snap,
        from: this.id,
        to,
        term: this.#term,
        logTerm: 0,
        index: 0,
        entries: NO_ENTRIES,
        commit: 0,
        reject: false,
        rejectHint: 0,
        context: '',
        snapshot: chunk,
      });
    }
  }

  #bcastHeartbeat(context: string): void {
    const committed = this.#log.committed;
    for (const [id, pr] of this.#progress) {
      if (id === this.id) continue;
      // Never tell a follower to commit past what it is known to hold from this leader: its log
      // may still end in entries of an older term that were never committed.
      const commit = this.#mut.commitPastProven ? committed : Math.min(pr.match, committed);
      if (commit > pr.sentCommit) pr.sentCommit = commit;
      this.#send(
        this.#msg(MessageType.Heartbeat, id, this.#term, 0, 0, NO_ENTRIES, commit, false, 0, context),
      );
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Configuration

  #switchToConfig(config: MembershipConfig): void {
    this.#config = config;
    this.#reconcileProgress();
    if (this.#role !== RaftRole.Leader) return;
    const self = this.#progress.get(this.id);
    if (self === undefined || this.#isLearner) {
      // Removed (or demoted) leader: step down rather than lead a group it is not a voter of.
      if (this.#cfg.stepDownOnRemoval) this.#becomeFollower(this.#term, undefined);
      return;
    }
    if (this.#leadTransferee !== undefined && !isVoter(config, this.#leadTransferee)) {
      this.#leadTransferee = undefined;
    }
    // The quorum changed: the commit index may move; new replicas should be probed at once.
    if (this.#maybeCommit()) this.#releaseReadsBeforeTermCommit();
    this.#commitBcastPending = true;
  }

  /** Make the progress map match the configuration: add new members, drop removed ones. */
  #reconcileProgress(): void {
    const config = this.#config;
    const ids = memberIds(config);
    const keep = new Set(ids);
    for (const id of [...this.#progress.keys()]) if (!keep.has(id)) this.#progress.delete(id);
    const next = this.#log.lastIndex() + 1;
    const learners = new Set(config.learners);
    for (const id of ids) {
      const isLearner = learners.has(id);
      let pr = this.#progress.get(id);
      if (pr === undefined) {
        pr = this.#newProgress(next, isLearner);
        // A new member counts as active until the next check-quorum round: it has not had a
        // chance to answer yet, and must not make the leader step down.
        pr.recentActive = true;
        this.#progress.set(id, pr);
      }
      pr.isLearner = isLearner;
    }
    this.#isLearner = learners.has(this.id);
  }

  // ---------------------------------------------------------------------------------------------
  // Sending

  /**
   * Queue a message. Responses that promise durable state (votes, append acknowledgements, even
   * rejections, to err on the side of safety) and messages to ourselves wait for the next Ready's
   * persistence; everything else may leave at once.
   */
  #send(m: Message): void {
    const t = m.type;
    if (
      m.to === this.id ||
      t === MessageType.AppResp ||
      t === MessageType.VoteResp ||
      t === MessageType.PreVoteResp
    ) {
      this.#msgsAfterAppend.push(m);
    } else {
      this.#msgs.push(m);
    }
  }

  #msg(
    type: MessageType,
    to: NodeId,
    term: number,
    logTerm: number,
    index: number,
    entries: readonly Entry[],
    commit: number,
    reject: boolean,
    rejectHint: number,
    context: string,
  ): Message {
    return {
      type,
      from: this.id,
      to,
      term,
      logTerm,
      index,
      entries,
      commit,
      reject,
      rejectHint,
      context,
      snapshot: undefined,
    };
  }
}

function concat(chunks: readonly Uint8Array[], totalBytes: number): Uint8Array {
  let length = 0;
  for (const chunk of chunks) length += chunk.byteLength;
  invariant(length === totalBytes, () => `snapshot chunks hold ${length} bytes, expected ${totalBytes}`);
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}
