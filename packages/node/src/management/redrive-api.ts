/**
 * The management API's redrive endpoints (redrive/): moving messages out of a dead-letter queue,
 * back to the queue each died in or to a named exchange, and the audit of every redrive, kept in
 * the metadata group so every node lists the same.
 *
 *   POST   /api/queues/{vhost}/{name}/redrive   body: redrive/redrive-request.ts
 *          dry run: 200 with the finished record (counts per destination, failures, a sample);
 *          otherwise 202 with the record, `running` (poll GET /api/redrives/{id} for progress)
 *   GET    /api/redrives[?vhost=V]              the records, newest first
 *   GET    /api/redrives/{id}                   one record
 *   DELETE /api/redrives/{id}                   cancel: 200 with the record (`cancel_requested`)
 *
 * Authorization: starting and cancelling need the tag `administrator`, `management` or
 * `policymaker` (a `monitoring` user only reads), plus the user's permissions in the vhost (as
 * RabbitMQ's get-messages: tags alone never grant access to messages): read on the dead-letter
 * queue and write on the target exchange (the default exchange '' for a redrive to the source
 * queues). Lists show the records of the vhosts the user may see (all for administrator and
 * monitoring). A vhost, queue or redrive the user may not see is 404, as if missing.
 */
import type { Broker } from '../broker/broker.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { flagNotEnabledText, REDRIVE_FLAG } from '../cluster/feature-flags.ts';
import { canAccess } from '../metadata/permissions.ts';
import type { RedriveRecord } from '../metadata/redrive-types.ts';
import type { UserRecord } from '../metadata/types.ts';
import { brokerRedrivePort } from '../redrive/broker-redrive-port.ts';
import { RedriveJobs, RedriveRefusedError } from '../redrive/redrive-jobs.ts';
import { parseRedriveRequest, RedriveRequestError } from '../redrive/redrive-request.ts';
import { ADMINISTRATOR, seesVhost } from './access.ts';
import { badRequest, forbidden, fromMetadataError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import { isClustered } from './queue-replicas-api.ts';
import type { Json } from './views.ts';

/** One redrive service per broker, however many API objects are made for it. */
const jobsByBroker = new WeakMap<Broker, RedriveJobs>();

/** The node's redrives (started, and watching for redrives to resume, on first use). */
export function redriveJobsFor(broker: Broker, cluster: ClusterView): RedriveJobs {
  let jobs = jobsByBroker.get(broker);
  if (jobs === undefined) {
    jobs = new RedriveJobs(brokerRedrivePort(broker, cluster));
    jobsByBroker.set(broker, jobs);
    jobs.start();
  }
  return jobs;
}

/** A record as the API shows it (RabbitMQ-style snake_case; times in ms since the epoch). */
export function redriveJson(record: RedriveRecord, nodeName: (id: string) => string): Json {
  const p = record.progress;
  const target: Json =
    record.target.kind === 'source'
      ? { kind: 'source' }
      : { kind: 'exchange', exchange: record.target.exchange, routing_key: record.target.routingKey };
  const routed = p.targets.reduce((sum, row) => sum + row.count, 0);
  return {
    id: record.id,
    user: record.user,
    vhost: record.vhost,
    queue: record.queue,
    dry_run: record.dryRun,
    state: record.state,
    cancel_requested: record.cancelRequested,
    node: nodeName(record.owner),
    node_id: record.owner,
    takeovers: record.takeovers,
    target,
    filter: record.filter as Json,
    rate: record.rate,
    max_messages: record.maxMessages,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    finished_at: record.finishedAt,
    error: record.error,
    total: p.total,
    moved: p.moved,
    failed: p.failed,
    remaining: p.total === null || record.dryRun ? null : Math.max(0, p.total - p.moved - p.failed),
    ...(record.dryRun ? { would_move: routed, would_fail: p.failed } : {}),
    targets: p.targets.map((row) => ({
      exchange: row.exchange,
      routing_key: row.routingKey,
      count: row.count,
    })),
    failures: p.failures.map((row) => ({ reason: row.reason, count: row.count })),
    sample: p.sample.map((s) => ({
      id: s.id,
      exchange: s.exchange,
      routing_key: s.routingKey,
      queues: [...s.queues],
      failure: s.failure,
    })),
  };
}

export function redriveRoutes(broker: Broker, cluster: ClusterView): Route[] {
  const metadata = broker.metadataView;
  // Made now, not on the first request: the node must resume its own redrives after a restart and
  // take over those of a node that is gone, whether or not anyone asks it anything.
  const service = redriveJobsFor(broker, cluster);
  const jobs = (): RedriveJobs => service;
  const nodeNames = (): ((id: string) => string) => {
    const names = new Map(cluster.members().map((m) => [m.id, m.name]));
    return (id) => names.get(id) ?? id;
  };
  // Who may call each endpoint, and the read permission on the queue a redrive starts from, are
  // the router's (access-table.ts); the write permission on the target exchange named in the body
  // is checked here.
  const canSee = (user: UserRecord, vhost: string): boolean => seesVhost(metadata, user, vhost);
  const visibleRecord = (user: UserRecord, id: string): RedriveRecord => {
    const record = metadata.redrive(id);
    if (record === undefined || !canSee(user, record.vhost)) throw notFound(`no redrive '${id}'`);
    return record;
  };
  const refused = (user: UserRecord, what: string, vhost: string, permission: string): never => {
    throw forbidden(
      `access to ${what} in vhost '${vhost}' refused for user '${user.name}' (${permission} permission needed)`,
    );
  };

  const start = async (request: ApiRequest): Promise<ApiResponse> => {
    const { user } = request;
    // In a cluster every member must know redrive's commands (a node alone knows its own build).
    if (isClustered(cluster) && !metadata.enabledFeatureFlags().has(REDRIVE_FLAG))
      throw badRequest(flagNotEnabledText(REDRIVE_FLAG, 'a redrive'));
    const [vhost, name] = request.params as [string, string];
    if (!canSee(user, vhost)) throw notFound(`no vhost '${vhost}'`);
    const queue = metadata.queue(vhost, name);
    if (queue === undefined) throw notFound(`no queue '${name}' in vhost '${vhost}'`);
    let parsed: ReturnType<typeof parseRedriveRequest>;
    try {
      parsed = parseRedriveRequest(await request.body());
    } catch (error) {
      if (error instanceof RedriveRequestError) throw badRequest(error.message);
      throw error;
    }
    if (queue.exclusiveOwner !== undefined)
      throw badRequest(
        `queue '${name}' in vhost '${vhost}' is exclusive to a connection: it cannot be redriven`,
      );
    const { target } = parsed.spec;
    const exchange = target.kind === 'exchange' ? target.exchange : '';
    if (metadata.exchange(vhost, exchange) === undefined)
      throw notFound(`no exchange '${exchange}' in vhost '${vhost}'`);
    if (!canAccess(metadata, user.name, vhost, 'write', exchange))
      refused(user, `exchange '${exchange}'`, vhost, 'write');
    let record: RedriveRecord;
    try {
      record = await jobs().create({ user: user.name, queue, spec: parsed.spec, dryRun: parsed.dryRun });
    } catch (error) {
      if (error instanceof RedriveRefusedError) throw fromMetadataError(error.reply);
      throw error;
    }
    return { status: parsed.dryRun ? 200 : 202, body: redriveJson(record, nodeNames()) };
  };

  const list = (request: ApiRequest): ApiResponse => {
    const { user } = request;
    const only = request.query.get('vhost');
    if (only !== null && !canSee(user, only)) throw notFound(`no vhost '${only}'`);
    const names = nodeNames();
    const records = metadata
      .redriveRecords()
      .filter((r) => (only === null || r.vhost === only) && canSee(user, r.vhost));
    return { status: 200, body: records.map((r) => redriveJson(r, names)) };
  };

  const show = (request: ApiRequest): ApiResponse => {
    return {
      status: 200,
      body: redriveJson(visibleRecord(request.user, request.params[0] as string), nodeNames()),
    };
  };

  const cancel = async (request: ApiRequest): Promise<ApiResponse> => {
    const { user } = request;
    const record = visibleRecord(user, request.params[0] as string);
    if (
      !user.tags.includes(ADMINISTRATOR) &&
      record.user !== user.name &&
      !canAccess(metadata, user.name, record.vhost, 'read', record.queue)
    )
      refused(user, `queue '${record.queue}'`, record.vhost, 'read');
    try {
      return { status: 200, body: redriveJson(await jobs().cancel(record.id), nodeNames()) };
    } catch (error) {
      if (error instanceof RedriveRefusedError) throw fromMetadataError(error.reply);
      throw error;
    }
  };

  return [
    { path: ['queues', ':vhost', ':name', 'redrive'], methods: { POST: start } },
    { path: ['redrives'], methods: { GET: list } },
    { path: ['redrives', ':id'], methods: { GET: show, DELETE: cancel } },
  ];
}
