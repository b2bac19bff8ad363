/**
 * The queue consistency check across the cluster (`styx ctl check_queue[s]`, `GET /api/checks/...`):
 * asks every member node holding replicas of the queues checked for its reports on them, one
 * cluster RPC per node (`QUEUE_CHECK_RPC`), and judges them with queue/replica-check.ts.
 *
 * The check travels on the cluster RPC protocol, not the queue link: one stream per call, so a
 * slow check never queues behind deliveries, and a node that does not know the kind answers
 * UNKNOWN_KIND instead of closing a data stream.
 *
 * Followers apply a moment after their leader, so replicas of a queue in use are often at
 * different applied indexes and cannot be compared (queueVerdict compares only equal ones). When
 * the answers are not aligned, the nodes are asked again for those queues, at most
 * `ALIGN_ATTEMPTS` times in all, so an idle queue's replicas are compared once they settle. A queue
 * whose replicas are still apart after the last attempt (one under steady publishing) is reported
 * `not_compared` with the indexes seen and the number of attempts: not ok, and not a mismatch.
 */
import type { RaftGroupLog } from '@styx/raft';
import { RpcError } from '../cluster/cluster-rpc.ts';
import { ChannelError, Code } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { BodyStore } from '../queue/body-store.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type {
  QueueCheckStatus,
  ReplicaAppliedIndex,
  ReplicaCheck,
  ReplicaRaftPosition,
  ReplicaReport,
} from '../queue/replica-check.ts';
import { aligned, queueVerdict, replicaReport } from '../queue/replica-check.ts';
import type { QueueApplyResult, QueueCommand } from '../queue/types.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import { isReplicatedQueue, notReplicatedError } from './replicated-queue.ts';

/** The cluster RPC kind a node answers with its replica reports. */
export const QUEUE_CHECK_RPC = 'queue-check';

/** How long a node may take to report on its replicas, ms. */
const REPORT_TIMEOUT_MS = 5_000;
/**
 * How many times in all replicas are asked while their applied indexes differ: the bound on a check
 * of a busy queue (each attempt waits `ALIGN_PAUSE_MS` after the one before, plus the answers).
 */
export const ALIGN_ATTEMPTS = 3;
/** Pause before asking again, ms (a few heartbeats: followers learn the commit index from them). */
const ALIGN_PAUSE_MS = 250;

/** One replica's check, its node named as operators know it. */
export type NamedReplicaCheck = ReplicaCheck & { readonly node: string };

/** The check of one queue: the verdict and every replica's report. */
export interface QueueCheckReport {
  readonly vhost: string;
  readonly name: string;
  readonly status: QueueCheckStatus;
  /** `status === 'ok'`. */
  readonly ok: boolean;
  readonly problems: readonly string[];
  /** How many times the replicas were asked (1 when they answered aligned, up to `ALIGN_ATTEMPTS`). */
  readonly attempts: number;
  /** `not_compared`: why, and each replica's applied index at the last attempt (named). */
  readonly notCompared?: {
    readonly reason: string;
    readonly appliedIndexes: readonly (ReplicaAppliedIndex & { readonly node: string })[];
  };
  readonly replicas: readonly NamedReplicaCheck[];
}

/** What the check needs of the cluster: its RPCs (cluster.ts). */
export type QueueCheckRpc = Pick<BrokerCluster, 'handleRpc' | 'callRpc'>;

/** What the check needs of its broker. */
export interface QueueChecksHost {
  readonly selfId: string;
  readonly selfName: string;
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  /** The body store of durable queues; undefined on a node keeping everything in memory. */
  readonly bodyStore: BodyStore | undefined;
  /** The nodes holding a replica of `record`. */
  membersOf(record: QueueRecord): readonly string[];
  /** The replica of a queue incarnation running here. */
  replica(groupId: string): QueueActor | undefined;
  /** Its Raft group, where this node can read it (in a cluster). */
  group(groupId: string): RaftGroupLog<QueueCommand, QueueApplyResult> | undefined;
  /** Absent on a node alone. */
  readonly cluster: QueueCheckRpc | undefined;
}

/** A node's answer: per group id asked, its report or why it has none. */
type NodeAnswer = Readonly<Record<string, ReplicaReport | { readonly error: string }>>;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class QueueChecks {
  readonly #host: QueueChecksHost;
  readonly #log: Logger;

  constructor(host: QueueChecksHost) {
    this.#host = host;
    this.#log = host.logger.child({ component: 'queue-checks' });
    host.cluster?.handleRpc(QUEUE_CHECK_RPC, async (payload) => {
      let groupIds: string[];
      try {
        groupIds = decodeGroupIds(payload);
      } catch (error) {
        throw new RpcError('BAD_REQUEST', (error as Error).message);
      }
      return encoder.encode(JSON.stringify(this.#answer(groupIds)));
    });
  }

  /** Why `record` cannot be checked (406, the API's 400), or undefined when it can. */
  refusal(record: QueueRecord): ChannelError | undefined {
    if (this.#host.bodyStore === undefined) {
      return new ChannelError(
        Code.PRECONDITION_FAILED,
        `queue '${record.name}' in vhost '${record.vhost}' is not replicated: this node keeps every ` +
          'queue in memory (it runs without a data dir)',
      );
    }
    return isReplicatedQueue(record) ? undefined : notReplicatedError(record);
  }

  /** Check `records` (those `refusal` refuses are left out), in the order given. */
  async check(records: readonly QueueRecord[]): Promise<QueueCheckReport[]> {
    const queues = records.filter((record) => this.refusal(record) === undefined);
    const checks = new Map<string, ReplicaCheck[]>();
    /** Per group: how many times its replicas were asked. */
    const attempts = new Map<string, number>();
    let pending = queues;
    for (let attempt = 1; pending.length > 0; attempt++) {
      for (const [groupId, replicas] of await this.#collect(pending)) {
        checks.set(groupId, replicas);
        attempts.set(groupId, attempt);
      }
      if (attempt >= ALIGN_ATTEMPTS) break;
      pending = pending.filter((record) => !aligned(checks.get(record.groupId) ?? []));
      if (pending.length > 0) await sleep(ALIGN_PAUSE_MS);
    }
    const nameOf = this.#nameOf();
    return queues.map((record): QueueCheckReport => {
      const replicas = checks.get(record.groupId) ?? [];
      const verdict = queueVerdict(replicas, nameOf);
      const asked = attempts.get(record.groupId) ?? 0;
      const where = { queue: record.name, vhost: record.vhost, attempts: asked };
      if (verdict.status === 'failed') {
        this.#log.warn({ ...where, problems: verdict.problems }, 'queue consistency check failed');
      } else if (verdict.notCompared !== undefined) {
        this.#log.warn({ ...where, reason: verdict.notCompared.reason }, 'queue replicas not compared');
      }
      return {
        vhost: record.vhost,
        name: record.name,
        status: verdict.status,
        ok: verdict.ok,
        problems: verdict.problems,
        attempts: asked,
        ...(verdict.notCompared === undefined
          ? {}
          : {
              notCompared: {
                reason: `${verdict.notCompared.reason} (asked ${asked} time(s))`,
                appliedIndexes: verdict.notCompared.appliedIndexes.map((r) => ({
                  ...r,
                  node: nameOf(r.nodeId),
                })),
              },
            }),
        replicas: replicas.map((replica) => ({ ...replica, node: nameOf(replica.nodeId) })),
      };
    });
  }

  /** Ask every member node, at once, for its reports on the queues it holds replicas of. */
  async #collect(records: readonly QueueRecord[]): Promise<Map<string, ReplicaCheck[]>> {
    const groupsByNode = new Map<string, string[]>();
    for (const record of records) {
      for (const node of this.#host.membersOf(record)) {
        const groups = groupsByNode.get(node);
        if (groups === undefined) groupsByNode.set(node, [record.groupId]);
        else groups.push(record.groupId);
      }
    }
    const answers = new Map<string, NodeAnswer | Error>();
    await Promise.all(
      [...groupsByNode].map(async ([node, groupIds]) => {
        answers.set(node, await this.#ask(node, groupIds).catch((error: unknown) => asError(error)));
      }),
    );
    const checks = new Map<string, ReplicaCheck[]>();
    for (const record of records) {
      checks.set(
        record.groupId,
        this.#host.membersOf(record).map((nodeId): ReplicaCheck => {
          const answer = answers.get(nodeId);
          if (answer === undefined || answer instanceof Error) {
            return { nodeId, online: false, error: answer?.message ?? 'not asked' };
          }
          const report = answer[record.groupId];
          if (report === undefined) return { nodeId, online: false, error: 'its answer left the queue out' };
          if ('error' in report) return { nodeId, online: false, error: report.error };
          return { ...report, nodeId, online: true };
        }),
      );
    }
    return checks;
  }

  async #ask(node: string, groupIds: readonly string[]): Promise<NodeAnswer> {
    if (node === this.#host.selfId) return this.#answer(groupIds);
    const cluster = this.#host.cluster;
    if (cluster === undefined) throw new Error(`node ${node} is not reachable from a node alone`);
    const payload = encoder.encode(JSON.stringify({ groups: groupIds }));
    return decodeAnswer(await cluster.callRpc(node, QUEUE_CHECK_RPC, payload, REPORT_TIMEOUT_MS));
  }

  /** This node's reports on its replicas of `groupIds`. */
  #answer(groupIds: readonly string[]): NodeAnswer {
    const answer: Record<string, ReplicaReport | { error: string }> = {};
    for (const groupId of groupIds) {
      const actor = this.#host.replica(groupId);
      const bodyStore = this.#host.bodyStore;
      if (actor === undefined || bodyStore === undefined) {
        answer[groupId] = { error: 'no replica of the queue runs on that node' };
        continue;
      }
      answer[groupId] = replicaReport(this.#host.selfId, this.#position(groupId, actor), {
        counts: actor.counts(),
        liveIds: () => actor.liveIds(),
        hasBody: (id) => bodyStore.has(groupId, id),
        dedupeWindow: actor.dedupeWindow(),
      });
    }
    return answer;
  }

  #position(groupId: string, actor: QueueActor): ReplicaRaftPosition {
    const group = this.#host.group(groupId);
    if (group === undefined) {
      return {
        role: actor.isLeader ? 'leader' : 'follower',
        term: null,
        appliedIndex: null,
        commitIndex: null,
      };
    }
    const learner = group.membership.learners.includes(this.#host.selfId);
    return {
      role: learner ? 'learner' : group.role,
      term: group.term,
      appliedIndex: group.appliedIndex,
      commitIndex: group.commitIndex,
    };
  }

  /** Node id → name, from the metadata's cluster nodes (this node by its own name when alone). */
  #nameOf(): (nodeId: string) => string {
    const names = new Map(this.#host.metadata.clusterNodes().map((n) => [n.id, n.name]));
    names.set(this.#host.selfId, names.get(this.#host.selfId) ?? this.#host.selfName);
    return (id) => names.get(id) ?? id;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function parseJson(bytes: Uint8Array, what: string): unknown {
  try {
    return JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new Error(`malformed ${what}: ${(error as Error).message}`);
  }
}

function decodeGroupIds(payload: Uint8Array): string[] {
  const request = parseJson(payload, 'queue check request') as { groups?: unknown };
  const groups = request?.groups;
  if (!Array.isArray(groups) || !groups.every((g) => typeof g === 'string')) {
    throw new Error('malformed queue check request: no list of group ids');
  }
  return groups;
}

/** A member's answer, checked field by field: a malformed one counts as no answer. */
function decodeAnswer(bytes: Uint8Array): NodeAnswer {
  const answer = parseJson(bytes, 'queue check answer');
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) {
    throw new Error('malformed queue check answer: not an object');
  }
  for (const [groupId, report] of Object.entries(answer)) {
    if (!isReportOrError(report)) throw new Error(`malformed queue check answer for group ${groupId}`);
  }
  return answer as NodeAnswer;
}

function isReportOrError(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  if (typeof v.error === 'string') return true;
  const count = (x: unknown): boolean => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  const countOrNull = (x: unknown): boolean => x === null || count(x);
  return (
    typeof v.role === 'string' &&
    countOrNull(v.term) &&
    countOrNull(v.appliedIndex) &&
    countOrNull(v.commitIndex) &&
    count(v.messages) &&
    count(v.liveIds) &&
    typeof v.digest === 'string' &&
    count(v.missingBodies) &&
    Array.isArray(v.missingBodyIds) &&
    v.missingBodyIds.every(count) &&
    (v.dedupeWindow === undefined || count(v.dedupeWindow))
  );
}
