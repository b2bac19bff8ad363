/**
 * The consistency check of a replicated queue (`styx ctl check_queue`, `GET /api/checks/queues`),
 * after rabbitmq-diagnostics' checks: each replica reports what it holds, and the reports are
 * compared. Pure: no I/O, no clock; the fan-out to the member nodes is broker/queue-checks.ts.
 *
 * A replica's report: its Raft position (role, term, applied and commit index), the message count
 * as its machine keeps it (ready + unacked + waiting for a dead-letter hand-off), the number of
 * live message ids and a digest of them, and the live messages whose body this node's body store
 * does not hold. The verdict is not ok when
 * - a replica holds a live message without its body (it could not deliver or hand it on);
 * - a replica's count disagrees with its own live ids (the machine's incremental counts drifted);
 * - replicas at the same applied index disagree on the count or the digest: the machine is
 *   deterministic, so the same log prefix must give the same messages (replicas at different
 *   indexes are not compared: one is simply behind); or on the dedupe window, a replicated
 *   parameter (a replica that skipped the entry setting it, as a build that cannot decode it would,
 *   dedupes differently from then on; a report of an older build, without the window, is not
 *   compared on it);
 * - a replica could not be checked (its node did not answer, or runs no replica it should): as
 *   RabbitMQ's checks do, a check that cannot verify fails, and the problem says why.
 *
 * Without such a problem the verdict is still not ok when a replica was compared with no other: it
 * answered at an applied index no other replica was at (a queue in use, whose followers apply a
 * moment after their leader, may never line up while it is asked). Its status is then
 * `not_compared`, apart from `failed`: nothing was found wrong, but nothing was verified either, and
 * calling that ok hid a replica that had diverged for as long as its queue was busy.
 */
import { createHash } from 'node:crypto';
import type { QueueCounts } from './types.ts';

/** How many ids of live messages without a body a report lists (the count covers them all). */
export const MISSING_BODY_IDS_SHOWN = 5;

/** A replica's role in its Raft group ('learner': a non-voting member catching up). */
export type ReplicaRole = 'leader' | 'follower' | 'learner' | 'candidate' | 'removed';

/**
 * A replica's Raft position. Term and indexes are null where this node cannot read its queue's
 * Raft group (a node alone, whose queues have one replica each: nothing to compare them with).
 */
export interface ReplicaRaftPosition {
  readonly role: ReplicaRole;
  readonly term: number | null;
  readonly appliedIndex: number | null;
  readonly commitIndex: number | null;
}

/** What the check reads of a replica: its machine (the queue actor) and this node's body store. */
export interface ReplicaContentView {
  readonly counts: QueueCounts;
  /** Every message whose body the queue still needs (queued, then pending a hand-off). */
  liveIds(): Iterable<number>;
  /** Whether this node's body store holds the body of message `id`. */
  hasBody(id: number): boolean;
  /** Hand-off ids the machine remembers per source (its log's `setDedupeWindow`, or the initial). */
  readonly dedupeWindow?: number | undefined;
}

/** One replica's answer (node ids; the caller names them). */
export interface ReplicaReport extends ReplicaRaftPosition {
  readonly nodeId: string;
  readonly online: true;
  /** ready + unacked + pending dead-letters, as the machine counts them. */
  readonly messages: number;
  /** How many live message ids the machine holds (equals `messages` unless its counts drifted). */
  readonly liveIds: number;
  /** `liveIdsDigest` of those ids. */
  readonly digest: string;
  /** Live messages whose body is missing from this node's body store. */
  readonly missingBodies: number;
  /** The first `MISSING_BODY_IDS_SHOWN` of them, in id order. */
  readonly missingBodyIds: readonly number[];
  /** The machine's dedupe window; absent from a node of an older build. */
  readonly dedupeWindow?: number;
}

/** A member that did not answer (down, partitioned, slow, or holding no replica it should hold). */
export interface UnreachableReplica {
  readonly nodeId: string;
  readonly online: false;
  readonly error: string;
}

export type ReplicaCheck = ReplicaReport | UnreachableReplica;

/**
 * A check's outcome: `ok` (every replica compared and consistent), `failed` (a problem found, or a
 * replica that could not be checked) or `not_compared` (no problem found, but some replica was at
 * an applied index no other replica was at, so its messages were compared with nothing).
 */
export type QueueCheckStatus = 'ok' | 'failed' | 'not_compared';

/** A replica that answered, at the applied index it answered at. */
export interface ReplicaAppliedIndex {
  readonly nodeId: string;
  readonly appliedIndex: number;
}

export interface QueueVerdict {
  readonly status: QueueCheckStatus;
  /** `status === 'ok'`. */
  readonly ok: boolean;
  /** What is wrong (`failed`); empty otherwise. */
  readonly problems: readonly string[];
  /** `not_compared`: why, naming the replicas left uncompared and every replica's applied index. */
  readonly notCompared?: {
    readonly reason: string;
    readonly appliedIndexes: readonly ReplicaAppliedIndex[];
  };
}

/**
 * A digest of a set of message ids: the first 16 hex digits (64 bits) of the SHA-256 of the ids
 * sorted ascending, each as an 8-byte big-endian float (ids are log indexes: exact integers). Sorted
 * first, because a replica restored from a snapshot may hold its pending dead-letters in another
 * order than one that applied them live; the set is what must agree.
 */
export function liveIdsDigest(ids: Iterable<number>): string {
  const sorted = Float64Array.from(ids).sort();
  const bytes = new DataView(new ArrayBuffer(sorted.length * 8));
  for (let i = 0; i < sorted.length; i++) bytes.setFloat64(i * 8, sorted[i] as number);
  return createHash('sha256').update(bytes).digest('hex').slice(0, 16);
}

/**
 * This node's report on its replica. O(live messages) and synchronous, so the ids, the counts and
 * the Raft position are one cut of the replica (nothing applies in between).
 */
export function replicaReport(
  nodeId: string,
  raft: ReplicaRaftPosition,
  content: ReplicaContentView,
): ReplicaReport {
  const ids: number[] = [];
  const missing: number[] = [];
  for (const id of content.liveIds()) {
    ids.push(id);
    if (!content.hasBody(id)) missing.push(id);
  }
  missing.sort((a, b) => a - b);
  const { ready, unacked, deadLetterPending } = content.counts;
  return {
    nodeId,
    online: true,
    role: raft.role,
    term: raft.term,
    appliedIndex: raft.appliedIndex,
    commitIndex: raft.commitIndex,
    messages: ready + unacked + deadLetterPending,
    liveIds: ids.length,
    digest: liveIdsDigest(ids),
    missingBodies: missing.length,
    missingBodyIds: missing.slice(0, MISSING_BODY_IDS_SHOWN),
    ...(content.dedupeWindow === undefined ? {} : { dedupeWindow: content.dedupeWindow }),
  };
}

/** The verdict on a queue's replica reports; `nameOf` names nodes in the problems. */
export function queueVerdict(
  replicas: readonly ReplicaCheck[],
  nameOf: (nodeId: string) => string,
): QueueVerdict {
  const problems: string[] = [];
  if (replicas.length === 0) problems.push('the queue has no replicas to check');
  const answered: ReplicaReport[] = [];
  for (const replica of replicas) {
    const node = nameOf(replica.nodeId);
    if (!replica.online) {
      problems.push(`the replica on ${node} could not be checked: ${replica.error}`);
      continue;
    }
    answered.push(replica);
    if (replica.missingBodies > 0) {
      problems.push(
        `${node} holds ${replica.missingBodies} live message(s) whose body is missing from its body ` +
          `store (first ids: ${replica.missingBodyIds.join(', ')})`,
      );
    }
    if (replica.messages !== replica.liveIds) {
      problems.push(
        `${node} counts ${replica.messages} message(s) but holds ${replica.liveIds} live message id(s)`,
      );
    }
  }
  const byIndex = new Map<number, ReplicaReport[]>();
  for (const replica of answered) {
    if (replica.appliedIndex === null) continue;
    const same = byIndex.get(replica.appliedIndex);
    if (same === undefined) byIndex.set(replica.appliedIndex, [replica]);
    else same.push(replica);
  }
  for (const [index, same] of [...byIndex].sort(([a], [b]) => a - b)) {
    const views = new Set(same.map((r) => `${r.messages}/${r.liveIds}/${r.digest}`));
    if (views.size <= 1) continue;
    const each = same
      .map((r) => `${nameOf(r.nodeId)} has ${r.messages} (${r.liveIds} ids, digest ${r.digest})`)
      .join('; ');
    problems.push(`replicas at applied index ${index} disagree on their messages: ${each}`);
  }
  for (const [index, same] of [...byIndex].sort(([a], [b]) => a - b)) {
    const told = same.filter((r) => r.dedupeWindow !== undefined);
    if (new Set(told.map((r) => r.dedupeWindow)).size <= 1) continue;
    const each = told.map((r) => `${nameOf(r.nodeId)} ${r.dedupeWindow}`).join('; ');
    problems.push(`replicas at applied index ${index} disagree on their dedupe window: ${each}`);
  }
  if (problems.length > 0) return { status: 'failed', ok: false, problems };
  const alone = [...byIndex.values()]
    .filter((same) => same.length === 1)
    .map((same) => same[0] as ReplicaReport);
  if (byIndex.size <= 1 || alone.length === 0) return { status: 'ok', ok: true, problems };
  const appliedIndexes = answered
    .filter((r) => r.appliedIndex !== null)
    .map((r) => ({ nodeId: r.nodeId, appliedIndex: r.appliedIndex as number }));
  const at = (r: ReplicaAppliedIndex): string => `${nameOf(r.nodeId)} at ${r.appliedIndex}`;
  const reason =
    `the replicas were not at one applied index (${appliedIndexes.map(at).join(', ')}): ` +
    `${alone.map((r) => nameOf(r.nodeId)).join(', ')} could not be compared with any other replica`;
  return { status: 'not_compared', ok: false, problems, notCompared: { reason, appliedIndexes } };
}

/**
 * Whether the replicas that answered are at one applied index, so a verdict on them compares every
 * replica with every other (replicas that did not answer, or whose index is unknown, aside).
 */
export function aligned(replicas: readonly ReplicaCheck[]): boolean {
  const indexes = new Set<number>();
  for (const replica of replicas)
    if (replica.online && replica.appliedIndex !== null) indexes.add(replica.appliedIndex);
  return indexes.size <= 1;
}
