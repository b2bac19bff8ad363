/**
 * TEST-ONLY switches that re-enable the classic Raft bugs of engineering.md §1.6, one flag per bug
 * (two for the bugs that have two halves). The mutation gate turns each one on and shows that the
 * simulator or a scripted scenario catches it. They are not part of `RaftConfig`: only code that
 * passes a `Mutations` object to the `RaftCore` constructor explicitly can turn one on, and nothing
 * outside the tests does. Every flag is off in `NO_MUTATIONS`.
 */
export interface Mutations {
  /** #1: votes and append acknowledgements leave before the state they promise is persisted. */
  readonly replyBeforePersist: boolean;
  /** #2: the leader commits an earlier term's entry by counting its replicas. */
  readonly commitOldTermByCounting: boolean;
  /** #3: an append truncates the log after its last entry even when everything matched. */
  readonly truncateOnEveryAppend: boolean;
  /**
   * #4: a follower commits past what the message proved: to min(leaderCommit, its own last index)
   * on an append, and to the leader's full commit index on a heartbeat (the leader no longer caps
   * it at the follower's match).
   */
  readonly commitPastProven: boolean;
  /** #5: messages from lower terms are processed as if they were current. */
  readonly acceptStaleTerm: boolean;
  /** #6a: a voter grants a second vote in a term it already voted in. */
  readonly voteTwice: boolean;
  /** #6b: a voter grants its vote without checking the candidate's log is up to date. */
  readonly voteIgnoresLog: boolean;
  /** #7: a candidate counts granted responses instead of voters, so a duplicate counts twice. */
  readonly countDuplicateVotes: boolean;
  /** #8: a won pre-vote is taken as a won election: the pre-candidate leads without a real vote. */
  readonly preVoteElects: boolean;
  /** #9: a leader that no longer hears from a quorum never steps down. */
  readonly checkQuorumNeverStepsDown: boolean;
  /** #10a: the leader answers a read index without a heartbeat round confirming it still leads. */
  readonly readIndexWithoutQuorum: boolean;
  /** #10b: a new leader answers read indexes before it has committed an entry of its term. */
  readonly readIndexBeforeTermCommit: boolean;
  /** #11: a membership change may be proposed while the previous one is still unapplied. */
  readonly concurrentConfChanges: boolean;
  /** #12: a snapshot at or below the commit index is installed anyway (commit goes back). */
  readonly installStaleSnapshot: boolean;
  /** #13: `advance` marks entries stable without checking they were not replaced meanwhile (ABA). */
  readonly stableToIgnoresTerm: boolean;
  /** #14: every election timeout is exactly `electionTicks` (no random jitter). */
  readonly fixedElectionTimeout: boolean;
  /** #15: the inflight message/byte bounds and the uncommitted bytes bound are ignored. */
  readonly unboundedQueues: boolean;
  /**
   * Found by wide sweeps: an append acknowledgement made before a conflicting append replaced the
   * entry it acknowledges is still released after the next sync (it promises an entry not on disk).
   */
  readonly ackReplacedEntries: boolean;
  /**
   * Found by wide sweeps: a follower installs a snapshot while the host still applies the committed
   * entries of an earlier Ready, so a conf change among them lands on the snapshot's configuration.
   */
  readonly installSnapshotWhileApplying: boolean;
  /**
   * Found by wide sweeps: without pre-vote and check-quorum, an append or heartbeat from a leader
   * of a lower term is ignored instead of answered, so a replica that raised its term and cannot
   * reach the leader with vote requests (its configuration is stale) is never caught up.
   */
  readonly silentToStaleLeader: boolean;
  /**
   * Found by wide sweeps: a vote request from a lower term is ignored (as etcd does without
   * pre-vote) instead of rejected with our term, so a candidate whose quorum needs a replica at a
   * higher term that never contacts it (a stale configuration) wins only once its term, by chance,
   * passes that replica's.
   */
  readonly silentToStaleCandidate: boolean;
  /**
   * Found by wide sweeps: adopting a newer term from a vote request restarts the election timer,
   * so a candidate that cannot win, on a faster clock, keeps the replica that could win from ever
   * campaigning (no pre-vote to stop it).
   */
  readonly termBumpResetsElectionTimer: boolean;
  /**
   * Pipelined storage (issue 28): an append acknowledgement leaves as soon as its Ready is handed
   * to storage, before the sync that makes the acknowledged entries durable.
   */
  readonly ackAppendBeforeSync: boolean;
  /**
   * Pipelined storage: the leader counts its own entries toward commit once they are handed to
   * storage (its self-acknowledgement is stepped in `ready()`), before they are durable.
   */
  readonly countUnsyncedLeaderEntries: boolean;
  /**
   * Pipelined storage: a Ready advanced after a later one replaced some of its entries still marks
   * all of them stable (only the term at its last index is checked): an entry replaced and then
   * written back by a newer leader is taken as stable while a Ready in flight overwrites it on disk
   * with the entry in between (etcd's ABA race of asynchronous storage writes).
   */
  readonly stableIgnoresOverwriteInFlight: boolean;
  /** Pipelined storage: a granted vote leaves before the term and vote it promises are durable. */
  readonly voteBeforeSync: boolean;
  /**
   * Pipelined storage, in the host (the simulator's replica): a Ready that writes nothing is
   * completed at once instead of after the earlier Readys still syncing, so its acknowledgements
   * promise entries an earlier Ready has not made durable yet.
   */
  readonly completeOutOfOrder: boolean;
}

export type MutationName = keyof Mutations;

export const NO_MUTATIONS: Mutations = Object.freeze({
  replyBeforePersist: false,
  commitOldTermByCounting: false,
  truncateOnEveryAppend: false,
  commitPastProven: false,
  acceptStaleTerm: false,
  voteTwice: false,
  voteIgnoresLog: false,
  countDuplicateVotes: false,
  preVoteElects: false,
  checkQuorumNeverStepsDown: false,
  readIndexWithoutQuorum: false,
  readIndexBeforeTermCommit: false,
  concurrentConfChanges: false,
  installStaleSnapshot: false,
  stableToIgnoresTerm: false,
  fixedElectionTimeout: false,
  unboundedQueues: false,
  ackReplacedEntries: false,
  installSnapshotWhileApplying: false,
  silentToStaleLeader: false,
  silentToStaleCandidate: false,
  termBumpResetsElectionTimer: false,
  ackAppendBeforeSync: false,
  countUnsyncedLeaderEntries: false,
  stableIgnoresOverwriteInFlight: false,
  voteBeforeSync: false,
  completeOutOfOrder: false,
});

/** Every mutation name, in §1.6 order. */
export const MUTATION_NAMES: readonly MutationName[] = Object.freeze(
  Object.keys(NO_MUTATIONS) as MutationName[],
);

/** The mutations object with only `name` turned on. */
export function onlyMutation(name: MutationName): Mutations {
  return Object.freeze({ ...NO_MUTATIONS, [name]: true });
}
