/**
 * The management API's queue consistency checks (broker/queue-checks.ts), after
 * rabbitmq-diagnostics' checks: the status says whether the check passed, the body says why.
 *
 *   GET /api/checks/queues[?vhost=V]       {ok, queues: [report...]}: every replicated queue (of V)
 *   GET /api/checks/queues/{vhost}/{name}  report: {vhost, name, ok, problems, replicas}
 *
 * 200 when ok, 503 when not (same body): a replica missing bodies, replicas at one applied index
 * that disagree, or a replica that could not be checked. An unknown vhost or queue is 404; a queue
 * that is not replicated (non-durable, exclusive) is 400 on its own and left out of the list.
 *
 * Readers: tags `administrator` or `monitoring`, over every vhost (as RabbitMQ's health checks).
 */
import type { NamedReplicaCheck, QueueCheckReport, QueueChecks } from '../broker/queue-checks.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord } from '../metadata/types.ts';
import { fromQueueReplicaError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './management-api.ts';
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
  };
}

/** One queue's check as JSON (the shape the chaos harness reads: keep it). */
export function queueCheckJson(report: QueueCheckReport): Json {
  return {
    vhost: report.vhost,
    name: report.name,
    ok: report.ok,
    problems: [...report.problems],
    replicas: report.replicas.map(replicaJson),
  };
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
    const ok = reports.every((r) => r.ok);
    return verdict(ok, { ok, queues: reports.map(queueCheckJson) });
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
