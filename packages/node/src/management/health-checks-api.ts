/**
 * RabbitMQ's health checks (the HTTP counterparts of `rabbitmq-diagnostics check_*`), for load
 * balancers, Kubernetes probes and monitoring: each answers 200 `{"status":"ok", ...}` when the
 * check passes and 503 `{"status":"failed","reason":..., ...}` when it fails, with RabbitMQ's
 * bodies, so the same probes work against Styx:
 *
 *   GET /api/health/checks/alarms           no resource alarm anywhere in the cluster; failed:
 *        {status, reason: "There are alarms in effect in the cluster", alarms: [{node, resource}]}
 *   GET /api/health/checks/local-alarms     none on the node answering; failed: reason "There are
 *        alarms in effect on the node", alarms
 *   GET /api/health/checks/port-listener/{port}   a listener on that port here: {status, port};
 *        failed: {status, reason: "No active listener", missing: port, ports: [...]}; 400 for a
 *        port that is not a number
 *   GET /api/health/checks/protocol-listener/{protocol}   a listener of that protocol here (styx,
 *        http, clustering; RabbitMQ's aliases such as management or amqp091 accepted):
 *        {status, protocol}; failed: {status, reason: "No active listener", missing, protocols}
 *   GET /api/health/checks/virtual-hosts    every vhost is up: Styx's vhosts are records of the
 *        metadata store, not processes that can fail apart, so this is ok once the node serves
 *        its metadata (kept for probes written against RabbitMQ)
 *   GET /api/health/checks/is-in-service    the node serves clients, i.e. it is not in maintenance
 *        mode (RabbitMQ 4's check); failed: reason "this node is not currently available to serve"
 *   GET /api/health/checks/ready-to-serve-clients   in service and a client listener is active;
 *        failed: the reason which of the two is missing
 *
 * `node-is-quorum-critical` and `quorum-plus-one-online` are in maintenance-api.ts.
 *
 * Access: any management user, as RabbitMQ (`rabbit_mgmt_util:is_authorized`); RabbitMQ's
 * is-in-service needs no credentials at all, Styx's API always does (give a probe a user tagged
 * `monitoring` or `management`).
 */
import type { Broker } from '../broker/broker.ts';
import { CLIENT_PROTOCOLS, normalizeProtocol } from '../broker/node-listeners.ts';
import type { NodeAlarm } from '../broker/resource-alarms.ts';
import { badRequest } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import { nodeNames } from './queue-replicas-api.ts';
import type { Json } from './views.ts';

/** RabbitMQ's status for a failed health check. */
export const HEALTH_CHECK_FAILURE_STATUS = 503;

const OK: ApiResponse = { status: 200, body: { status: 'ok' } };

function failed(reason: string, details: Readonly<Record<string, Json>> = {}): ApiResponse {
  return { status: HEALTH_CHECK_FAILURE_STATUS, body: { status: 'failed', reason, ...details } };
}

export interface HealthCheckDeps {
  readonly broker: Pick<Broker, 'alarms' | 'listeners' | 'maintenance' | 'metadataView'>;
}

export function healthCheckRoutes(deps: HealthCheckDeps): Route[] {
  const { broker } = deps;
  const alarmsJson = (alarms: readonly NodeAlarm[]): Json[] => {
    const nameOf = nodeNames(broker.metadataView);
    return alarms.map((a) => ({ node: nameOf(a.node), resource: a.resource }));
  };

  const alarms = (): ApiResponse => {
    const all = broker.alarms.all();
    return all.length === 0
      ? OK
      : failed('There are alarms in effect in the cluster', { alarms: alarmsJson(all) });
  };

  const localAlarms = (): ApiResponse => {
    const local = broker.alarms.local();
    return local.length === 0
      ? OK
      : failed('There are alarms in effect on the node', { alarms: alarmsJson(local) });
  };

  const portListener = (request: ApiRequest): ApiResponse => {
    const raw = request.params[0] as string;
    const port = /^\d{1,5}$/.test(raw) ? Number(raw) : Number.NaN;
    if (!(port >= 0 && port <= 65_535)) throw badRequest('Invalid port');
    const ports = broker.listeners.list().map((l) => l.port);
    return ports.includes(port)
      ? { status: 200, body: { status: 'ok', port } }
      : failed('No active listener', { missing: port, ports });
  };

  const protocolListener = (request: ApiRequest): ApiResponse => {
    const protocol = normalizeProtocol(request.params[0] as string);
    const protocols = broker.listeners.list().map((l) => l.protocol);
    return protocols.includes(protocol as never)
      ? { status: 200, body: { status: 'ok', protocol } }
      : failed('No active listener', { missing: protocol, protocols: [...new Set(protocols)] });
  };

  const notServing = (): ApiResponse | undefined =>
    broker.maintenance.drained
      ? failed('this node is not currently available to serve: it is in maintenance mode (drained)')
      : undefined;

  const readyToServeClients = (): ApiResponse => {
    const refusal = notServing();
    if (refusal !== undefined) return refusal;
    const listening = broker.listeners.list().some((l) => CLIENT_PROTOCOLS.has(l.protocol));
    return listening ? OK : failed('this node has no active client listener');
  };

  return [
    { path: ['health', 'checks', 'alarms'], methods: { GET: alarms } },
    { path: ['health', 'checks', 'local-alarms'], methods: { GET: localAlarms } },
    { path: ['health', 'checks', 'port-listener', ':port'], methods: { GET: portListener } },
    { path: ['health', 'checks', 'protocol-listener', ':protocol'], methods: { GET: protocolListener } },
    { path: ['health', 'checks', 'virtual-hosts'], methods: { GET: () => OK } },
    { path: ['health', 'checks', 'is-in-service'], methods: { GET: () => notServing() ?? OK } },
    { path: ['health', 'checks', 'ready-to-serve-clients'], methods: { GET: readyToServeClients } },
  ];
}
