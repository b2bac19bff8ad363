/**
 * One queue replica's figures, as plain typed data: what `/metrics` writes per queue, and what
 * other code (the management API, the web console) can read without parsing the exposition text.
 * Read synchronously from the replica's actor and Raft group; nothing is proposed or copied beyond
 * the few small records returned.
 *
 * Which figures mean what on which replica:
 * - message counts (ready, unacked, consumers, pending dead-letters) are replicated state: every
 *   replica agrees once it applied the same entries;
 * - flow counters (published, delivered, acked, dead-lettered per strategy) are counted by each
 *   replica from the entries it applied since it opened (queue-flow-counters.ts);
 * - drops by a cycle or of at-most-once copies, and blocked hand-offs, are the leader's own (they
 *   happen where the copies are routed): zero on a follower;
 * - Raft figures are this replica's; per-replica commit lag only on the leader.
 */
import type { QueueActor } from '../queue/queue-actor.ts';
import type { DeadLetterStrategyLabel, QueueFlowTotals } from '../queue/queue-flow-counters.ts';
import type { QueueConfig, QueueCounts, RemovalTotals } from '../queue/types.ts';
import type { RaftReplicaView } from './metrics-source.ts';

/** How a dead-lettered copy was dropped: no DLX set, a dead-letter cycle, or lost at-most-once. */
export interface DeadLetterDropFigures {
  /** The queue had no dead-letter exchange (RabbitMQ's strategy label `disabled`). */
  readonly noDlx: RemovalTotals;
  /** Not delivered to a target that would close a cycle, per strategy. */
  readonly cycle: Readonly<Record<DeadLetterStrategyLabel, RemovalTotals>>;
  /** At-most-once copies with nowhere to go or refused by a target. */
  readonly lost: RemovalTotals;
}

/** A replica's progress as its group's leader sees it. */
export interface ReplicaLagFigures {
  /** The replica's node, by name. */
  readonly node: string;
  /** Highest log index known to be on its disk. */
  readonly match: number;
  /** The leader's commit index minus `match` (0 when caught up). */
  readonly commitLag: number;
  /** Heard from within the last election timeout. */
  readonly online: boolean;
}

export interface RaftFigures {
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  /** The last index written to the replica's log. */
  readonly lastWrittenIndex: number;
  /** The index of the replica's latest snapshot. */
  readonly snapshotIndex: number;
  /** Proposal-to-apply time of the last command it proposed as leader, ms (0 before any). */
  readonly commitLatencyMs: number;
  /** Elections this replica started since it opened. */
  readonly elections: number;
  /** Pre-vote rounds this replica started since it opened. */
  readonly preVotes: number;
  /** Elections this replica won since it opened (the rest were lost: split votes, a rival's win). */
  readonly electionsWon: number;
  /** Every member's lag, on the leader of a group of more than one; empty otherwise. */
  readonly replicas: readonly ReplicaLagFigures[];
}

export interface QueueFigures {
  readonly vhost: string;
  readonly name: string;
  /** This replica leads the queue: its figures are the queue's (followers' may trail). */
  readonly leader: boolean;
  readonly config: QueueConfig;
  readonly counts: QueueCounts;
  readonly flow: QueueFlowTotals;
  readonly dropped: DeadLetterDropFigures;
  /** At-least-once hand-offs whose last attempt found nowhere to go or was refused (leader only). */
  readonly blockedHandOffs: number;
  /** Undefined for a queue without a Raft group (an in-memory queue). */
  readonly raft: RaftFigures | undefined;
}

/** The figures of `actor`, whose Raft group (if any) is `group`; `nameOf` maps node ids to names. */
export function queueFigures(
  actor: QueueActor,
  group: RaftReplicaView | undefined,
  nameOf: (id: string) => string,
): QueueFigures {
  const totals = actor.deadLetterTotals();
  const cycle = actor.cycleDropsByStrategy();
  return {
    vhost: actor.vhost,
    name: actor.name,
    leader: actor.isLeader,
    config: actor.config(),
    counts: actor.counts(),
    flow: actor.flowTotals(),
    dropped: {
      noDlx: totals.droppedNoDlx,
      cycle: { at_most_once: cycle.atMostOnce, at_least_once: cycle.atLeastOnce },
      lost: totals.droppedAtMostOnce,
    },
    blockedHandOffs: actor.blockedHandOffs(),
    raft: group === undefined ? undefined : raftFigures(group, nameOf),
  };
}

/** A replica's Raft figures; per-member lag only on the leader of a group of more than one. */
export function raftFigures(group: RaftReplicaView, nameOf: (id: string) => string): RaftFigures {
  const commitIndex = group.commitIndex;
  const replicas: ReplicaLagFigures[] = [];
  const membership = group.membership;
  // A group of one has nobody to lag: skip building its progress map.
  if (group.role === 'leader' && membership.voters.length + membership.learners.length > 1) {
    for (const [id, progress] of group.progress()) {
      replicas.push({
        node: nameOf(id),
        match: progress.match,
        commitLag: Math.max(0, commitIndex - progress.match),
        online: progress.active,
      });
    }
  }
  return {
    term: group.term,
    commitIndex,
    appliedIndex: group.appliedIndex,
    lastWrittenIndex: group.lastWrittenIndex,
    snapshotIndex: group.snapshotIndex,
    commitLatencyMs: group.commitLatencyMs,
    elections: group.elections,
    preVotes: group.preVotes,
    electionsWon: group.electionsWon,
    replicas,
  };
}

/** The figures of every replica `actors` holds (sorted by vhost, then name, for stable output). */
export function allQueueFigures(
  actors: Iterable<QueueActor>,
  groupOf: (groupId: string) => RaftReplicaView | undefined,
  nameOf: (id: string) => string,
): QueueFigures[] {
  const out: QueueFigures[] = [];
  for (const actor of actors) out.push(queueFigures(actor, groupOf(actor.groupId), nameOf));
  out.sort(byVhostThenName);
  return out;
}

function byVhostThenName(a: QueueFigures, b: QueueFigures): number {
  if (a.vhost !== b.vhost) return a.vhost < b.vhost ? -1 : 1;
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}
