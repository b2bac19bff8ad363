import type { NodeId } from './types.ts';

/**
 * Quorum arithmetic, pure: the commit index and the vote outcome of a majority configuration and
 * of a joint one (two majorities that must both agree). The committed index of an empty majority is
 * +Infinity and its vote is won, so that a joint config with an empty outgoing half behaves as its
 * incoming half alone.
 */

export const VoteResult = {
  /** Neither won nor lost yet: some voters have not answered. */
  Pending: 0,
  Lost: 1,
  Won: 2,
} as const;
export type VoteResult = (typeof VoteResult)[keyof typeof VoteResult];

/** The two halves of a configuration; `outgoing` is empty outside joint consensus. */
export interface JointConfig {
  readonly incoming: readonly NodeId[];
  readonly outgoing: readonly NodeId[];
}

/** Reused sort buffer: quorum math runs on every append ack, so it must not allocate. */
let scratch = new Float64Array(16);

/**
 * The largest index acknowledged by a majority of `voters`: sort the acked indexes descending and
 * take the q-th, q = floor(n/2) + 1. A voter `acked` knows nothing of counts as 0.
 */
export function majorityCommittedIndex(voters: readonly NodeId[], acked: (id: NodeId) => number): number {
  const n = voters.length;
  if (n === 0) return Number.POSITIVE_INFINITY;
  if (n === 1) return acked(voters[0] as NodeId);
  if (scratch.length < n) scratch = new Float64Array(n * 2);
  for (let i = 0; i < n; i++) scratch[i] = acked(voters[i] as NodeId);
  // Insertion sort, descending: n is a handful of replicas.
  for (let i = 1; i < n; i++) {
    const value = scratch[i] as number;
    let j = i - 1;
    while (j >= 0 && (scratch[j] as number) < value) {
      scratch[j + 1] = scratch[j] as number;
      j--;
    }
    scratch[j + 1] = value;
  }
  return scratch[(n >> 1) as number] as number;
}

/** Outcome of an election (or of any yes/no poll) among `voters`; a missing answer is pending. */
export function majorityVoteResult(
  voters: readonly NodeId[],
  votes: ReadonlyMap<NodeId, boolean>,
): VoteResult {
  const n = voters.length;
  if (n === 0) return VoteResult.Won;
  let granted = 0;
  let missing = 0;
  for (const id of voters) {
    const vote = votes.get(id);
    if (vote === undefined) missing++;
    else if (vote) granted++;
  }
  const quorum = (n >> 1) + 1;
  if (granted >= quorum) return VoteResult.Won;
  if (granted + missing >= quorum) return VoteResult.Pending;
  return VoteResult.Lost;
}

/** The commit index of a joint config: what both halves have committed. */
export function jointCommittedIndex(config: JointConfig, acked: (id: NodeId) => number): number {
  const incoming = majorityCommittedIndex(config.incoming, acked);
  if (config.outgoing.length === 0) return incoming;
  const outgoing = majorityCommittedIndex(config.outgoing, acked);
  return incoming < outgoing ? incoming : outgoing;
}

/** A joint vote is won when both halves won, lost when either lost. */
export function jointVoteResult(config: JointConfig, votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  const incoming = majorityVoteResult(config.incoming, votes);
  if (config.outgoing.length === 0) return incoming;
  const outgoing = majorityVoteResult(config.outgoing, votes);
  if (incoming === outgoing) return incoming;
  if (incoming === VoteResult.Lost || outgoing === VoteResult.Lost) return VoteResult.Lost;
  return VoteResult.Pending;
}
