/**
 * The node's management HTTP server (node:http, no framework), on its own port, loopback by
 * default. Every request under /api/ is authenticated against the metadata store's users, with
 * HTTP basic auth or a web console session (console/console-auth.ts), then dispatched to
 * ManagementApi; every other path is the web console's (console/console-routes.ts). API replies
 * are JSON; errors are `{error, reason}` with the HTTP status. Nothing a client sends can crash
 * the node: a handler's unexpected exception is a logged 500.
 *
 * Before any of that, in this order: a `Host` that is not one of the listener's names is refused
 * with 421 (host-names.ts: DNS rebinding); then a state-changing request that comes from another
 * origin is refused with 403 and one whose body is not JSON with 415 (cross-site-guard.ts: forged
 * cross-site requests). A 401 to a browser carries no basic-auth challenge (the same module says why).
 *
 * Logging: one debug line per request (method, path, status, user). Never the Authorization
 * header, never a body (a PUT /api/users body carries a password).
 */
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Broker } from '../broker/broker.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { singleNodeClusterView } from '../cluster/cluster-view.ts';
import type { Logger } from '../logging/logger.ts';
import type { UserRecord } from '../metadata/types.ts';
import type { TlsContext } from '../transport/tls/tls-context.ts';
import { ADMINISTRATOR, MONITORING, requireTag } from './access.ts';
import { ApiError, badRequest, misdirectedRequest, notFound } from './api-error.ts';
import { BasicAuthenticator } from './basic-auth.ts';
import { ConsoleAssets } from './console/console-assets.ts';
import { ConsoleAuth } from './console/console-auth.ts';
import { ConsoleRoutes, isConsolePath } from './console/console-routes.ts';
import { SessionStore } from './console/session-store.ts';
import { checkJsonBody, checkSameOrigin, isBrowserRequest, isStateChanging } from './cross-site-guard.ts';
import type { MachineNames } from './host-names.ts';
import { HostAllowList } from './host-names.ts';
import { ManagementApi } from './management-api.ts';
import { isMetricsPath, MetricsEndpoint } from './metrics-endpoint.ts';
import type { QueueReplicaOps } from './queue-replicas-api.ts';
import { readJsonBody } from './request-body.ts';
import type { Json } from './views.ts';

/** The default management port (RabbitMQ's is 15672; Styx's client port is 5680). */
export const DEFAULT_MANAGEMENT_PORT = 15680;

/** Most time to receive a request's headers, ms (slow-loris bound). */
const HEADERS_TIMEOUT_MS = 10_000;
/** Most time to receive a whole request, ms. */
const REQUEST_TIMEOUT_MS = 30_000;

export interface ManagementServerOptions {
  readonly broker: Broker;
  readonly logger: Logger;
  /**
   * The cluster the node belongs to, for /api/nodes and /api/cluster (default: the node alone,
   * `singleNodeClusterView`, which refuses to join or forget).
   */
  readonly cluster?: ClusterView | undefined;
  /**
   * The operations on queue replicas behind the quorum_status, member, grow, shrink and rebalance
   * endpoints (default: the broker's own; tests of a node alone give a fake cluster's).
   */
  readonly queueReplicas?: QueueReplicaOps | undefined;
  /**
   * Names the listener answers to besides its own addresses (`--management-hostname`: a DNS name,
   * a proxy's); see host-names.ts.
   */
  readonly hostnames?: readonly string[] | undefined;
  /** The machine's host name and interface addresses (default: node:os), for a wildcard bind. */
  readonly machine?: MachineNames | undefined;
  /** Whether /metrics asks for basic auth of a monitoring or administrator user (`--metrics-auth`). */
  readonly metricsAuth?: boolean | undefined;
  /** How long a /metrics render is served again, ms (`--metrics-cache-seconds`; default 5 s). */
  readonly metricsCacheMs?: number | undefined;
  /**
   * Serve https with the node's certificate (`--management-tls-port`), not http. Client
   * certificates are not asked for: a browser opening the console has none.
   */
  readonly tls?: TlsContext | undefined;
}

/** The management server could not listen (port in use, address not available, ...). */
export class ManagementListenError extends Error {
  readonly code = 'MANAGEMENT_LISTEN_FAILED';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ManagementListenError';
  }
}

export class ManagementServer {
  private readonly api: ManagementApi;
  private readonly auth: ConsoleAuth;
  private readonly console: ConsoleRoutes;
  private readonly metrics: MetricsEndpoint;
  private readonly logger: Logger;
  private readonly server: Server | HttpsServer;
  private readonly scheme: 'http' | 'https';
  private readonly hostnames: readonly string[];
  private readonly machine: MachineNames | undefined;
  private readonly metricsAuth: boolean;
  private address: AddressInfo | undefined;
  /** The node's listener registry (the listener health checks), and how to leave it at close. */
  private readonly nodeListeners: Broker['listeners'];
  private unlist: (() => void) | undefined;
  /** Set once listening, from the bound address: no request arrives before. */
  private hosts: HostAllowList | undefined;

  constructor(options: ManagementServerOptions) {
    const { broker } = options;
    this.nodeListeners = broker.listeners;
    this.logger = options.logger.child({ component: 'management' });
    this.api = new ManagementApi(broker, options.cluster, options.queueReplicas);
    const lookup = (name: string) => broker.metadataView.user(name);
    // Tools authenticate with basic auth; the web console (served at '/') with a session cookie.
    this.auth = new ConsoleAuth({
      basic: new BasicAuthenticator({
        lookup,
        loopbackOnly: (name) => broker.isLoopbackOnly(name),
        logins: broker.logins,
      }),
      lookup,
      sessions: new SessionStore(),
    });
    this.console = new ConsoleRoutes(this.auth, new ConsoleAssets(this.logger));
    this.metrics = new MetricsEndpoint({
      broker,
      cluster: options.cluster ?? singleNodeClusterView({ nodeName: broker.nodeName }),
      logger: this.logger,
      cacheMs: options.metricsCacheMs,
    });
    this.hostnames = options.hostnames ?? [];
    this.machine = options.machine;
    this.metricsAuth = options.metricsAuth ?? false;
    const handler: RequestListener = (request, response) => {
      this.handle(request, response).catch((err: unknown) => {
        this.logger.error({ err }, 'management request failed while replying');
        response.destroy();
      });
    };
    this.scheme = options.tls === undefined ? 'http' : 'https';
    this.server =
      options.tls === undefined ? createServer(handler) : options.tls.httpsServer('management', handler);
    this.server.headersTimeout = HEADERS_TIMEOUT_MS;
    this.server.requestTimeout = REQUEST_TIMEOUT_MS;
  }

  /** Listen on `host`:`port` (0 = any free port); resolves with the bound address. */
  async start(host: string, port: number): Promise<AddressInfo> {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        reject(
          new ManagementListenError(
            `management API cannot listen on ${host}:${port}: ${err.code ?? err.message}`,
            { cause: err },
          ),
        );
      };
      this.server.once('error', onError);
      this.server.listen(port, host, () => {
        this.server.off('error', onError);
        resolve();
      });
    });
    this.address = this.server.address() as AddressInfo;
    this.hosts = new HostAllowList(this.address.address, this.hostnames, this.machine);
    this.unlist = this.nodeListeners.add({
      protocol: this.scheme,
      host: this.address.address,
      port: this.address.port,
    });
    return this.address;
  }

  /** The base URL clients use (`http://127.0.0.1:15680`, `https://...`); undefined before start. */
  get url(): string | undefined {
    const a = this.address;
    if (a === undefined) return undefined;
    return `${this.scheme}://${a.address.includes(':') ? `[${a.address}]` : a.address}:${a.port}`;
  }

  /** Stop listening and drop every open connection (keep-alive ones included). */
  async close(): Promise<void> {
    if (!this.server.listening) return;
    this.unlist?.();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const method = request.method ?? 'GET';
    const url = request.url ?? '/';
    const queryAt = url.indexOf('?');
    const path = queryAt < 0 ? url : url.slice(0, queryAt);
    const query = new URLSearchParams(queryAt < 0 ? '' : url.slice(queryAt + 1));
    let status = 500;
    let user: string | undefined;
    try {
      const host = request.headers.host;
      if (this.hosts !== undefined && !this.hosts.allows(host)) {
        throw misdirectedRequest(
          `'${host}' is not a name of this management listener (a name it is reached by through DNS or a proxy must be given with --management-hostname)`,
        );
      }
      // Prometheus' scrape: unauthenticated unless --metrics-auth, as RabbitMQ's (metrics-endpoint.ts).
      if (isMetricsPath(path)) {
        if (this.metricsAuth && (method === 'GET' || method === 'HEAD'))
          user = (await this.metricsUser(request)).name;
        status = await this.metrics.serve(method, response, path, query);
        this.logger.debug({ method, path, status, user }, 'management request');
        return;
      }
      if (isStateChanging(method)) {
        checkSameOrigin(request);
        checkJsonBody(request);
      }
      if (isConsolePath(path)) {
        ({ status, user } = await this.console.handle(request, response, path));
        this.logger.debug({ method, path, status, user }, 'management request');
        return;
      }
      const segments = apiSegments(path);
      // Resolve before authenticating: an unknown path is 404 for anyone, and a 405 says which
      // methods exist; neither reveals anything about the data.
      const { handler, params } = this.api.resolve(method, segments);
      const record = await this.auth.authenticate(request);
      user = record.name;
      const result = await handler({
        method,
        params,
        query,
        user: record,
        body: () => readJsonBody(request),
        header: (name) => {
          const value = request.headers[name];
          return Array.isArray(value) ? value.join(', ') : value;
        },
      });
      status = result.status;
      send(response, status, result.body, { ...result.headers });
    } catch (err) {
      const error = err instanceof ApiError ? err : undefined;
      if (error === undefined) this.logger.error({ err, method, path }, 'management request failed');
      status = error?.status ?? 500;
      const headers: Record<string, string> = { ...error?.headers };
      // The unread rest of an oversized or refused body is not drained: close the connection instead.
      if (status === 413 || status === 415) headers.Connection = 'close';
      // No challenge to a browser: it would prompt, then attach the credentials to every request
      // to this origin, forged ones included (cross-site-guard.ts).
      if (status === 401 && isBrowserRequest(request)) delete headers['WWW-Authenticate'];
      send(
        response,
        status,
        { error: error?.code ?? 'internal_error', reason: error?.message ?? 'internal error' },
        headers,
      );
    }
    this.logger.debug({ method, path, status, user }, 'management request');
  }

  /**
   * The user of a /metrics scrape under --metrics-auth: basic auth (or a console session) of a user
   * tagged `monitoring` or `administrator`, the tags that see every vhost in the API, as the
   * figures do.
   */
  private async metricsUser(request: IncomingMessage): Promise<UserRecord> {
    const user = await this.auth.authenticate(request);
    requireTag(user, [MONITORING, ADMINISTRATOR]);
    return user;
  }
}

/** The decoded segments of an /api/ path ('/api/queues/%2F/q' → ['queues', '/', 'q']). */
function apiSegments(path: string): string[] {
  const parts = path.split('/');
  if (parts[0] !== '' || parts[1] !== 'api') throw notFound('no such API endpoint');
  const rest = parts.slice(2);
  // '/api/queues/' is '/api/queues'.
  if (rest.length > 0 && rest[rest.length - 1] === '') rest.pop();
  return rest.map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      throw badRequest(`malformed percent-encoding in path segment '${segment}'`);
    }
  });
}

function send(
  response: ServerResponse,
  status: number,
  body: Json | undefined,
  headers: Record<string, string> = {},
): void {
  if (body === undefined) {
    response.writeHead(status, headers);
    response.end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
    'Cache-Control': 'no-cache',
  });
  response.end(text);
}
