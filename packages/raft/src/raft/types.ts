import type { HardState } from '../storage/log-storage.ts';

/**
 * The data types of the pure Raft core: log entries, messages, configuration states, snapshots,
 * the `Ready` batch the host processes, and the core's configuration with every bound documented.
 *
 * Indexes and terms are plain numbers (safe integers): at a million entries per second a group
 * needs ~285 years to exhaust 2^53.
 */

export type { HardState };

/** A replica's id. Never reused: a node removed from a group never comes back under the same id. */
export type NodeId = string;

export const EntryType = {
  /** Application data (empty data = the leader's no-op of a new term). */
  Normal: 0,
  /** An encoded `ConfChangeV2` (see conf-change.ts); the host calls `applyConfChange` on apply. */
  ConfChange: 1,
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export interface Entry {
  readonly term: number;
  readonly index: number;
  readonly type: EntryType;
  readonly data: Uint8Array;
}

/** The membership of a group, as persisted with snapshots. Arrays are sorted ascending. */
export interface ConfState {
  readonly voters: readonly NodeId[];
  /** Voters of the outgoing configuration while in joint consensus; empty otherwise. */
  readonly votersOutgoing: readonly NodeId[];
  readonly learners: readonly NodeId[];
  /** Voters of the outgoing config that become learners when the joint config is left. */
  readonly learnersNext: readonly NodeId[];
  /** Whether the leader leaves the joint configuration on its own once it is applied. */
  readonly autoLeave: boolean;
}

export interface SnapshotMeta {
  /** The last log index the snapshot covers. */
  readonly index: number;
  /** The term of the entry at `index`. */
  readonly term: number;
  /** Membership as of `index`. */
  readonly confState: ConfState;
}

/** The application's state as of `meta.index`, as opaque bytes (the core never looks inside). */
export interface Snapshot {
  readonly meta: SnapshotMeta;
  readonly data: Uint8Array;
}

/**
 * One piece of a snapshot in flight from a leader to a follower. The leader cuts `data` into
 * `count` chunks of at most `RaftConfig.snapshotChunkBytes`; chunk `chunk` holds bytes
 * [chunk * chunkBytes, ...). A snapshot with empty data still travels as one (empty) chunk.
 */
export interface SnapshotChunk {
  readonly meta: SnapshotMeta;
  /** 0-based position of this chunk. */
  readonly chunk: number;
  /** Number of chunks of the snapshot (>= 1). */
  readonly count: number;
  /** Total size of the snapshot data in bytes. */
  readonly totalBytes: number;
  readonly data: Uint8Array;
}

export const MessageType = {
  /** Leader → follower: entries after (index, logTerm), and the leader's commit. */
  App: 1,
  /** Follower → leader: accepted up to `index`, or rejected with a hint (rejectHint, logTerm). */
  AppResp: 2,
  /** Candidate → voter: vote for me in `term`; my last entry is (index, logTerm). */
  Vote: 3,
  VoteResp: 4,
  /** Pre-candidate → voter: would you vote for me in `term` (= my term + 1)? Changes nothing. */
  PreVote: 5,
  PreVoteResp: 6,
  /** Leader → follower: one chunk of a snapshot. */
  Snap: 7,
  /** Follower → leader: chunk acknowledgement (`index` = snapshot index, `rejectHint` = next chunk). */
  SnapResp: 8,
  /** Leader → follower: I am alive; commit up to `commit` (<= what you matched); optional read context. */
  Heartbeat: 9,
  HeartbeatResp: 10,
  /** Leader → transfer target: campaign now, skipping pre-vote and leases. */
  TimeoutNow: 11,
  /** Follower → leader: a forwarded leadership-transfer request (`index` unused, target in `context`). */
  TransferLeader: 12,
  /** Follower → leader: a forwarded read-index request (`context` = the request id). */
  ReadIndex: 13,
  /** Leader → follower: the read index (`index`) for request `context`. */
  ReadIndexResp: 14,
} as const;
export type MessageType = (typeof MessageType)[keyof typeof MessageType];

/**
 * Every message has every field (one object shape, so the hot paths stay monomorphic); fields a
 * type does not use hold their zero value.
 */
export interface Message {
  readonly type: MessageType;
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
  /** App: term of the entry at `index`; Vote/PreVote: last log term; AppResp reject: hint term. */
  readonly logTerm: number;
  /** App: index before `entries`; AppResp: last matching index; Vote: last log index. */
  readonly index: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
  readonly reject: boolean;
  /** AppResp reject: the follower's conflict hint index; SnapResp: the next chunk it expects. */
  readonly rejectHint: number;
  /** Read-index request id, the transfer marker on forced votes, a forwarded transfer target. */
  readonly context: string;
  readonly snapshot: SnapshotChunk | undefined;
}

/** Role of a replica. */
export const RaftRole = {
  Follower: 'follower',
  PreCandidate: 'pre-candidate',
  Candidate: 'candidate',
  Leader: 'leader',
} as const;
export type RaftRole = (typeof RaftRole)[keyof typeof RaftRole];

/** Volatile state the host may want to react to (role events); never persisted. */
export interface SoftState {
  readonly lead: NodeId | undefined;
  readonly role: RaftRole;
}

/** A read index the host may serve a linearizable read at, once it has applied `index`. */
export interface ReadState {
  readonly index: number;
  /** The id given to `readIndex`. */
  readonly context: string;
}

/**
 * What the host must do, in this order, before calling `advance()` for it:
 * 1. send `messages` (they depend on nothing unpersisted; may go in parallel with step 2);
 * 2. persist `snapshot` (replacing the whole stored log), then `entries` (first deleting every stored
 *    entry with index >= entries[0].index), then `hardState` — atomically, synced when `mustSync`;
 * 3. only then send `persistedMessages` (votes and append acknowledgements promise durability);
 * 4. restore the machine from `snapshot` if any, then apply `committedEntries` in order (calling
 *    `applyConfChange` for conf-change entries); serve `readStates` once applied reaches them.
 */
export interface Ready {
  readonly softState: SoftState | undefined;
  readonly hardState: HardState | undefined;
  readonly entries: readonly Entry[];
  readonly snapshot: Snapshot | undefined;
  readonly committedEntries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly persistedMessages: readonly Message[];
  readonly readStates: readonly ReadState[];
  /** Whether step 2 needs an fsync (entries, snapshot, term or vote changed; commit alone does not). */
  readonly mustSync: boolean;
}

/**
 * The durable state the core reads: what the host has persisted from earlier `Ready`s (and its own
 * compactions). Storage errors are fatal to the core; methods are only called with arguments inside
 * the documented ranges. `firstIndex`, `lastIndex` and `term` are on hot paths (every step): keep
 * them O(1), e.g. cached in memory beside the store.
 */
export interface RaftStorage {
  /** Persisted hard state and the membership as of the latest snapshot. */
  initialState(): { readonly hardState: HardState; readonly confState: ConfState };
  /** Index of the first stored entry: snapshot index + 1. */
  firstIndex(): number;
  /** Index of the last stored entry, or the snapshot index when no entry follows it. */
  lastIndex(): number;
  /** Term of the entry at `index`, for firstIndex() - 1 <= index <= lastIndex(). */
  term(index: number): number;
  /**
   * Entries [lo, hi), with firstIndex() <= lo < hi <= lastIndex() + 1, stopping once their data
   * exceeds `maxBytes` (but always at least one entry).
   */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  /** The latest snapshot (its meta matches firstIndex() - 1). */
  snapshot(): Snapshot;
}

/** The core's only source of randomness (election timeout jitter). */
export interface RaftRandom {
  /** A uniformly distributed integer in [0, bound). */
  nextInt(bound: number): number;
}

/**
 * Configuration of one replica. Every bound is a count or a size with its unit in the name or doc,
 * and a default chosen for a broker queue (small entries, thousands of groups per node).
 */
export interface RaftConfig {
  readonly id: NodeId;
  /**
   * Election timeout in ticks (default 10). A follower that hears nothing from a leader for a random
   * number of ticks in [electionTicks, 2 * electionTicks) starts an election; a fresh draw is made
   * on every reset. Must be well above heartbeatTicks (etcd suggests 10x) so one lost heartbeat
   * does not cause an election.
   */
  readonly electionTicks?: number;
  /** Leader heartbeat interval in ticks (default 1). */
  readonly heartbeatTicks?: number;
  /** Pre-vote (Raft thesis §9.6): a candidate first checks it could win (default true). */
  readonly preVote?: boolean;
  /**
   * Check-quorum (default true): a leader that has not heard from a quorum within an election
   * timeout steps down, and a follower that heard from a leader within one ignores vote requests.
   */
  readonly checkQuorum?: boolean;
  /** Upper bound on the entry data bytes of one append message (default 1 MiB; >= 1 entry is sent). */
  readonly maxSizePerMsg?: number;
  /** Bound on append messages in flight to one follower in replicate state (default 256 messages). */
  readonly maxInflightMsgs?: number;
  /**
   * Bound on entry data bytes in flight to one follower (default 8 MiB). With 100 ms round trips,
   * 8 MiB caps one follower's replication at ~80 MiB/s (Little's law).
   */
  readonly maxInflightBytes?: number;
  /**
   * Bound on the data bytes of uncommitted entries at the leader (default 64 MiB); proposals beyond
   * it are dropped with reason UNCOMMITTED_LIMIT. A single proposal is always accepted when nothing
   * is uncommitted.
   */
  readonly maxUncommittedEntriesBytes?: number;
  /** Bound on the data bytes of committed entries in one Ready (default 16 MiB; >= 1 entry). */
  readonly maxCommittedBytesPerReady?: number;
  /**
   * Size of one snapshot chunk in bytes (default 1 MiB). A follower holds the chunks of the one
   * snapshot it is receiving in memory until the last arrives: that is bounded by the snapshot's
   * size, which the application bounds (a queue's stored snapshot is metadata only; a snapshot sent
   * to a lagging follower also carries the queue's live bodies, so it is as large as the queue).
   */
  readonly snapshotChunkBytes?: number;
  /** Snapshot chunks in flight to one follower (default 4 chunks). */
  readonly maxSnapshotChunksInflight?: number;
  /** Bound on pending read-index requests at the leader (default 4096 requests); more are dropped. */
  readonly maxPendingReadIndex?: number;
  /** A leader removed from the configuration steps down when it applies the change (default true). */
  readonly stepDownOnRemoval?: boolean;
  /**
   * The last index the host's state machine has applied when the core starts (default: the
   * storage's snapshot index). Committed entries after it are handed out again for replay.
   */
  readonly applied?: number;
  /**
   * Readys handed out and not yet advanced, at most (default 1). With 1, `ready()` waits for the
   * previous Ready's `advance()`. Above 1 the storage writes are pipelined (etcd's asynchronous
   * storage writes): the next Ready goes to storage while the previous one is still syncing. The
   * host must then complete Readys strictly in the order they were handed out, and advance each
   * only once its writes AND those of every earlier Ready are durable — a Ready that writes
   * nothing (`mustSync` false) still waits its turn, since its `persistedMessages` may promise
   * entries an earlier Ready is writing. Entries are handed out once (a Ready carries only the
   * entries appended since the previous one, or those that replaced entries still in flight).
   */
  readonly maxReadiesInFlight?: number;
}

/** A resolved configuration: every optional field filled with its default. */
export type ResolvedRaftConfig = Required<RaftConfig>;

/** Defaults of every bound; see `RaftConfig` for meaning and units. */
export const RAFT_DEFAULTS = {
  electionTicks: 10,
  heartbeatTicks: 1,
  preVote: true,
  checkQuorum: true,
  maxSizePerMsg: 1024 * 1024,
  maxInflightMsgs: 256,
  maxInflightBytes: 8 * 1024 * 1024,
  maxUncommittedEntriesBytes: 64 * 1024 * 1024,
  maxCommittedBytesPerReady: 16 * 1024 * 1024,
  snapshotChunkBytes: 1024 * 1024,
  maxSnapshotChunksInflight: 4,
  maxPendingReadIndex: 4096,
  stepDownOnRemoval: true,
  maxReadiesInFlight: 1,
} as const;

/** The `context` of a vote request forced by a leadership transfer: it overrides leases. */
export const CAMPAIGN_TRANSFER = 'transfer';

const EMPTY_ENTRIES: readonly Entry[] = Object.freeze([]);

/** A message with every field present; `fields` overrides the zero values. */
export function message(
  type: MessageType,
  from: NodeId,
  to: NodeId,
  term: number,
  fields?: Partial<Omit<Message, 'type' | 'from' | 'to' | 'term'>>,
): Message {
  return {
    type,
    from,
    to,
    term,
    logTerm: fields?.logTerm ?? 0,
    index: fields?.index ?? 0,
    entries: fields?.entries ?? EMPTY_ENTRIES,
    commit: fields?.commit ?? 0,
    reject: fields?.reject ?? false,
    rejectHint: fields?.rejectHint ?? 0,
    context: fields?.context ?? '',
    snapshot: fields?.snapshot,
  };
}

/** Names of message types, for logs and traces. */
export const MESSAGE_TYPE_NAMES: Readonly<Record<MessageType, string>> = {
  1: 'App',
  2: 'AppResp',
  3: 'Vote',
  4: 'VoteResp',
  5: 'PreVote',
  6: 'PreVoteResp',
  7: 'Snap',
  8: 'SnapResp',
  9: 'Heartbeat',
  10: 'HeartbeatResp',
  11: 'TimeoutNow',
  12: 'TransferLeader',
  13: 'ReadIndex',
  14: 'ReadIndexResp',
};

/** Bytes an entry counts for in the size bounds (its data; the fixed header is ignored). */
export function entryBytes(entry: Entry): number {
  return entry.data.byteLength;
}

export const EMPTY_CONF_STATE: ConfState = Object.freeze({
  voters: [],
  votersOutgoing: [],
  learners: [],
  learnersNext: [],
  autoLeave: false,
});
