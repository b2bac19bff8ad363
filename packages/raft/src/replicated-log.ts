/**
 * The contract every Styx replicated log fulfils: the in-memory log (exclusive and non-durable
 * queues), the single-voter log on the node's LMDB log store (durable queues on one node), and a
 * Raft group (a queue or the metadata store in a cluster). A queue actor is written once against
 * this interface; the cluster adds voters, not a second code path.
 *
 * The log drives a deterministic state machine: it feeds every committed entry to
 * `StateMachine.apply` exactly once per incarnation, in log order, on every replica. The leader
 * stamps each entry with a timestamp when it proposes (clamped to be monotonic), so time inside the
 * machine comes from the log, never from a clock.
 */

/** Where a committed entry sits in the log, and the leader's clamped timestamp for it. */
export interface EntryMeta {
  /** 1-based log index. */
  readonly index: number;
  /** The term the entry was proposed in (always 1 for logs without elections). */
  readonly term: number;
  /** Leader time in ms since the epoch when it proposed the entry: max(now, previous ts). */
  readonly ts: number;
}

/**
 * What the log drives. `apply` must be deterministic: the same state, command and meta give the
 * same result and the same next state on every replica and on every replay.
 */
export interface StateMachine<C, R> {
  /** Apply one committed command. The return value resolves the leader's `propose` promise. */
  apply(command: C, meta: EntryMeta): R;
  /** Serialize the state as of the last applied entry (metadata only: no message bodies). */
  snapshot(): Uint8Array;
  /** Replace the state with a snapshot taken by `snapshot()` (on restart or install). */
  restore(snapshot: Uint8Array, meta: EntryMeta): void;
  /**
   * Optional, with `installTransferSnapshot`: what a replica catching up by snapshot needs besides
   * the metadata (a queue's live message bodies, which live outside the machine's state). Called
   * on a leader when it starts sending `snapshot` (taken by `snapshot()` at `meta`) to a follower;
   * the machine's state may have moved on since (never back). The result travels as the snapshot
   * in place of `snapshot` and is held in memory for the transfer. Without these methods a
   * follower installs `snapshot` itself. Local compaction always stores `snapshot()` only.
   */
  transferSnapshot?(snapshot: Uint8Array, meta: EntryMeta): Uint8Array;
  /**
   * Optional, with `transferSnapshot`: a replica received `transfer` (what some replica's
   * `transferSnapshot` returned for a snapshot at `meta`). Store what it carries besides the
   * metadata — those writes must be ordered before the stored snapshot (they are made while the
   * snapshot's write is gathered) — and return the metadata snapshot: that is what is stored and,
   * once durable, handed to `restore`. No entry is applied in between.
   */
  installTransferSnapshot?(transfer: Uint8Array, meta: EntryMeta): Uint8Array;
}

/** Encodes commands for logs that persist or send them. The in-memory log does not need one. */
export interface CommandCodec<C> {
  encode(command: C): Uint8Array;
  decode(bytes: Uint8Array): C;
  /**
   * Optional: `encode`, with the encoding starting at byte `headroom` of the returned array; bytes
   * [0, headroom) are left for the log to fill with its entry header, which saves the log a copy
   * (and an allocation) of every command — a message body, for a queue.
   */
  encodeWithHeadroom?(command: C, headroom: number): Uint8Array;
  /**
   * Optional: `decode` for a command read from the log to be applied (by a follower, or replayed),
   * which may leave for later what the machine's `apply` does not read (for a queue: the message
   * it only stores). What it defers must decode, when read, to what `decode` gives, so that every
   * replica's state stays the same. Without it, `decode` is used.
   */
  decodeEntry?(bytes: Uint8Array): C;
}

export type Role = 'leader' | 'follower' | 'candidate' | 'removed';

export interface RoleChange {
  readonly role: Role;
  readonly term: number;
  /** The leader's node id when known. */
  readonly leader: string | undefined;
}

export interface ReplicatedLog<C, R> {
  /** Stable id of this group incarnation (a re-created queue of the same name gets a new one). */
  readonly groupId: string;
  /** Current role of this replica. */
  readonly role: Role;

  /**
   * Restore the machine from the latest snapshot and replay the committed log after it, then start
   * accepting proposals. Resolves once the replay is complete. Calls `onRole` with the initial role.
   */
  open(machine: StateMachine<C, R>): Promise<void>;

  /**
   * Append a command. Resolves with the machine's `apply` result once the entry is committed
   * (durably, for durable logs) and applied on this replica. Rejects with `NotLeaderError` on a
   * follower, `LogClosedError` after `close()`, or a `LogFailedError` if it can no longer commit.
   * Entries proposed in one turn are committed together (group commit).
   */
  propose(command: C): Promise<R>;

  /** Subscribe to role changes. Returns an unsubscribe function. */
  onRole(listener: (change: RoleChange) => void): () => void;

  /**
   * Take a snapshot of the machine at the last applied index and truncate the log behind it.
   * A no-op for logs that keep nothing.
   */
  compact(): Promise<void>;

  /** Stop: pending proposals fail with `LogClosedError`; stored state is kept. */
  close(): Promise<void>;

  /** Stop and delete everything stored for this group. */
  destroy(): Promise<void>;
}

/** Creates a log for a group. The node holds one factory per kind of log. */
export interface ReplicatedLogFactory {
  create<C, R>(groupId: string, codec: CommandCodec<C>): ReplicatedLog<C, R>;
}
