/**
 * The management API's queue consistency checks (broker/queue-checks.ts), after
 * rabbitmq-diagnostics' checks: the status says whether the check passed, the body says why.
 *
 *   GET /api/checks/queues[?vhost=V]       {ok, status, queues: [report...]}: every replicated queue (of V)
 *   GET /api/checks/queues/{vhost}/{name}  report: {vhost, name, ok, status, problems, attempts,
 *                                          [reason, applied_indexes,] replicas}
 *
 * A report's status: `ok`; `failed` (a replica missing bodies, replicas at one applied index that
 * disagree, or a replica that could not be checked); or `not_compared`: nothing found wrong, but a
 * replica was still at an applied index no other replica was at after `attempts` tries (a queue in
 * use), with the `reason` and every replica's `applied_index` seen. The list's status is `failed`
 * when any queue failed, else `not_compared` when any was not compared, else `ok`.
 *
 * 200 when ok, 503 when not (same body): a check that could not verify is not a pass, as RabbitMQ's
 * health checks have it. An unknown vhost or queue is 404; a queue that is not replicated
 * (non-durable, exclusive) is 400 on its own and left out of the list.
 *
 * Readers: tags `administrator` or `monitoring`, over every vhost (as RabbitMQ's health checks).
 */
import type { NamedReplicaCheck, QueueCheckReport, QueueChecks } from '../broker/queue-checks.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { QueueCheckStatus } from '../queue/replica-check.ts';
import { fromQueueReplicaError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import type { Json } from './views.ts';

/** The broker's checks (a test may give a fake). */
export type QueueCheckOps = Pick<QueueChecks, 'refusal' | 'check'>;

export interface QueueCheckRouteDeps {
  readonly ops: QueueCheckOps;
  readonly metadata: MetadataMachine;
}

function byName(a: QueueRecord, b: QueueRecord): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

function replicaJson(replica: NamedReplicaCheck): Json {
  if (!replica.online) {
    return { node: replica.node, node_id: replica.nodeId, online: false, error: replica.error };
  }
  return {
    node: replica.node,
    node_id: replica.nodeId,
    online: true,
    role: replica.role,
    term: replica.term,
    applied_index: replica.appliedIndex,
    commit_index: replica.commitIndex,
    messages: replica.messages,
    live_ids: replica.liveIds,
    digest: replica.digest,
    missing_bodies: replica.missingBodies,
    missing_body_ids: [...replica.missingBodyIds],
    dedupe_window: replica.dedupeWindow ?? null,
  };
}

/** One queue's check as JSON (the shape the chaos harness reads: keep it). */
export function queueCheckJson(report: QueueCheckReport): Json {
  const notCompared = report.notCompared;
  return {
    vhost: report.vhost,
    name: report.name,
    ok: report.ok,
    status: report.status,
    problems: [...report.problems],
    attempts: report.attempts,
    ...(notCompared === undefined
      ? {}
      : {
          reason: notCompared.reason,
          applied_indexes: notCompared.appliedIndexes.map((r) => ({
            node: r.node,
            node_id: r.nodeId,
            applied_index: r.appliedIndex,
          })),
        }),
    replicas: report.replicas.map(replicaJson),
  };
}

/** The status of a list of checks: the worst of its queues' (a mismatch before an uncompared one). */
export function overallStatus(reports: readonly QueueCheckReport[]): QueueCheckStatus {
  if (reports.some((r) => r.status === 'failed')) return 'failed';
  return reports.some((r) => r.status === 'not_compared') ? 'not_compared' : 'ok';
}

export function queueCheckRoutes(deps: QueueCheckRouteDeps): Route[] {
  const { ops, metadata } = deps;
  const vhost = (name: string): string => {
    if (metadata.vhost(name) === undefined) throw notFound(`no vhost '${name}'`);
    return name;
  };
  const verdict = (ok: boolean, body: Json): ApiResponse => ({ status: ok ? 200 : 503, body });

  const checkAll = async (request: ApiRequest): Promise<ApiResponse> => {
    const named = request.query.get('vhost');
    const vhosts =
      named === null
        ? metadata
            .vhosts()
            .map((v) => v.name)
            .sort()
        : [vhost(named)];
    const records = vhosts.flatMap((v) =>
      metadata
        .queues(v)
        .filter((q) => ops.refusal(q) === undefined)
        .sort(byName),
    );
    const reports = await ops.check(records);
    const status = overallStatus(reports);
    const ok = status === 'ok';
    return verdict(ok, { ok, status, queues: reports.map(queueCheckJson) });
  };

  const checkOne = async (request: ApiRequest): Promise<ApiResponse> => {
    const name = request.params[1] as string;
    const record = metadata.queue(vhost(request.params[0] as string), name);
    if (record === undefined) throw notFound(`no queue '${name}' in vhost '${request.params[0]}'`);
    const refusal = ops.refusal(record);
    if (refusal !== undefined) throw fromQueueReplicaError(refusal);
    const [report] = await ops.check([record]);
    if (report === undefined) throw new Error(`the check left queue '${name}' out`);
    return verdict(report.ok, queueCheckJson(report));
  };

  return [
    { path: ['checks', 'queues'], methods: { GET: checkAll } },
    { path: ['checks', 'queues', ':vhost', ':name'], methods: { GET: checkOne } },
  ];
}
