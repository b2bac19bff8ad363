/**
 * How this node's replica of a clustered queue starts when nothing is stored for it.
 *
 * - **founded**: the queue's record names its group's founders (`QueueRecord.founders`) and this
 *   node is one. Every founder's replica starts from the same state at index 0 — a snapshot holding
 *   the founders as voters — so their logs agree from the start, and the first founder campaigns at
 *   once. One election, no membership change: the declare waits for a leader, not for members to
 *   be added one by one (each add a compaction, a snapshot sent, a learner promoted).
 *
 *   Why it is safe: the founders are fixed by the committed declare, so every replica that ever
 *   starts this way starts from the group's true initial state (as every replica of a statically
 *   configured Raft group does). A founder whose replica starts late (it was down) is a follower
 *   that catches up from the log or a snapshot. A founder removed, its data destroyed once every
 *   remaining member held the removal, then added back, starts again from index 0 as a voter of
 *   the founders' configuration: it can win no vote, since every voter of the current configuration
 *   has a longer log than its empty one, and the leader adding it back sends it a snapshot (with
 *   the current membership) first. A node added later that is no founder joins (below), even as
 *   the first member: the founders made the group, so a second one must never be bootstrapped.
 * - **bootstrap** (no founders: a queue declared before `queue_founders`): the first member creates
 *   the group as its only voter and adds the others.
 * - **join**: the replica waits, with no membership, for the leader to add it.
 */
import type { QueueRecord } from '../metadata/types.ts';

export type ReplicaStart = 'bootstrap' | 'join' | { readonly founders: readonly string[] };

/** How `selfId`'s replica of `record` starts; `members` are the record's replicas, leader first. */
export function replicaStart(record: QueueRecord, members: readonly string[], selfId: string): ReplicaStart {
  const founders = record.founders;
  if (founders !== undefined) return founders.includes(selfId) ? { founders } : 'join';
  return members[0] === selfId ? 'bootstrap' : 'join';
}
