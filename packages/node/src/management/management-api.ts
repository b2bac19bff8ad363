/**
 * The management API's endpoints, shaped like RabbitMQ's where they cover the same ground:
 *
 *   GET                 /api/overview, /api/whoami
 *   GET                 /api/vhosts                       GET PUT DELETE /api/vhosts/{vhost}
 *   GET                 /api/users                        GET PUT DELETE /api/users/{name}
 *   GET                 /api/permissions                  GET PUT DELETE /api/permissions/{vhost}/{user}
 *   GET                 /api/vhosts/{vhost}/permissions   GET            /api/users/{user}/permissions
 *   GET                 /api/policies[/{vhost}]           GET PUT DELETE /api/policies/{vhost}/{name}
 *   GET                 /api/queues[/{vhost}[/{name}]]   (lists page with ?page=: pagination.ts)
 *   GET                 /api/exchanges[/{vhost}[/{name}]] (the default exchange is 'amq.default' in a path)
 *   GET                 /api/bindings[/{vhost}]
 *   PUT DELETE          /api/exchanges/{vhost}/{name}, /api/queues/{vhost}/{name}
 *   DELETE              /api/queues/{vhost}/{name}/contents (purge)
 *   GET                 /api/exchanges/{vhost}/{name}/bindings/source|destination, /api/queues/{vhost}/{name}/bindings
 *   GET POST            /api/bindings/{vhost}/e/{source}/q|e/{destination}
 *   GET DELETE          /api/bindings/{vhost}/e/{source}/q|e/{destination}/{props}
 *                       (topology changes, as the user's AMQP permissions allow: topology-api.ts)
 *   GET POST            /api/definitions[/{vhost}] (export and import, RabbitMQ's JSON: definitions-api.ts)
 *   GET                 /api/nodes[/{node}], /api/cluster
 *   POST                /api/cluster/join                 DELETE         /api/cluster/nodes/{node}
 *                       (the cluster endpoints: cluster-api.ts)
 *   GET                 /api/queues/{vhost}/{name}/quorum_status
 *   POST                /api/queues/{vhost}/{name}/members
 *   DELETE              /api/queues/{vhost}/{name}/members/{node}
 *   POST                /api/queues/grow, /api/queues/shrink, /api/rebalance/queues
 *                       (the queue replica endpoints: queue-replicas-api.ts)
 *   GET                 /api/checks/queues[?vhost=], /api/checks/queues/{vhost}/{name}
 *                       (the queue consistency checks: queue-checks-api.ts)
 *   GET                 /api/feature-flags; PUT /api/feature-flags/{name}/enable
 *                       (rolling upgrades: feature-flags-api.ts)
 *   POST                /api/queues/{vhost}/{name}/redrive; GET /api/redrives[/{id}]; DELETE /api/redrives/{id}
 *                       (moving dead letters back, and the redrive audit: redrive-api.ts)
 *   POST                /api/nodes/{node}/drain, /api/nodes/{node}/revive; GET /api/nodes/{node}/maintenance
 *   GET                 /api/health/checks/node-is-quorum-critical, /api/health/checks/quorum-plus-one-online
 *   GET                 /api/health/checks/{alarms, local-alarms, port-listener/{port},
 *                       protocol-listener/{protocol}, virtual-hosts, is-in-service,
 *                       ready-to-serve-clients} (health-checks-api.ts)
 *                       (maintenance mode and the rolling-restart checks: maintenance-api.ts)
 *   GET                 /api/queues/{vhost}/{name}/messages, /api/queues/{vhost}/{name}/dead-lettering
 *                       (the dead-letter inspector and explain: dead-letter-api.ts)
 *   GET                 /api/connections, /api/channels, /api/consumers (and per vhost, per name)
 *   DELETE              /api/connections/{name} (X-Reason: the client's close text)
 *                       (the cluster's client connections: connections-api.ts)
 *
 * Authorization (the user is already authenticated), RabbitMQ's rules:
 * - a user without one of the tags `administrator`, `monitoring`, `policymaker`, `management`
 *   cannot use the API at all (403 on every endpoint; it may still use AMQP);
 * - `administrator` and `monitoring` see every vhost; anyone else reads in the vhosts where it has
 *   a permission entry, and other vhosts answer exactly as if they did not exist (404, same text),
 *   so their names cannot be probed;
 * - users, vhosts, permissions and definitions are administrator-only (403 for others, before any
 *   lookup); policies, read or changed, need `policymaker` or `administrator`;
 * - declaring, deleting, binding and purging need the user's permission regexes in the vhost,
 *   exactly as over AMQP, administrators included (topology-api.ts).
 *
 * Writes go through `Broker.manage`, so their consequences (queues reconfigured by a policy, actors
 * of a deleted vhost stopped) have happened when the reply is sent. PUT answers 201 when it
 * created something and 204 when it replaced it; DELETE answers 204, or 404 when nothing was there.
 * Lists are sorted by vhost, then name, so output is stable. In a cluster, queue objects carry
 * RabbitMQ's `leader`, `members` and `online` (node names).
 */
import { tableGet } from '@styx/client/wire';
import type { Broker } from '../broker/broker.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import { singleNodeClusterView } from '../cluster/cluster-view.ts';
import { standaloneFeatureFlags } from '../cluster/feature-flags.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { hashPassword } from '../metadata/passwords.ts';
import type { MetadataCommand, MetadataOk, QueueRecord, UserRecord } from '../metadata/types.ts';
import { ADMINISTRATOR, checkAccess, MONITORING, seesVhost } from './access.ts';
import { ACCESS_TABLE, accessKey, checkAccessTable } from './access-table.ts';
import { ApiError, badRequest, fromMetadataError, methodNotAllowed, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Handler, Method, Route, RoutedRequest } from './api-types.ts';
import { clusterRoutes } from './cluster-api.ts';
import { connectionRoutes } from './connections-api.ts';
import { deadLetterRoutes } from './dead-letter-api.ts';
import { definitionsRoutes } from './definitions-api.ts';
import { exchangeFromPath } from './exchange-path.ts';
import { featureFlagRoutes } from './feature-flags-api.ts';
import { healthCheckRoutes } from './health-checks-api.ts';
import { maintenanceRoutes } from './maintenance-api.ts';
import { nodeStats } from './node-stats.ts';
import { pageOf, wantsPage } from './pagination.ts';
import type { QueueCheckOps } from './queue-checks-api.ts';
import { queueCheckRoutes } from './queue-checks-api.ts';
import { queueListPaging } from './queue-list.ts';
import type { QueueReplicaOps } from './queue-replicas-api.ts';
import { nodeNames, queueReplicaRoutes, replicaNames } from './queue-replicas-api.ts';
import { redriveRoutes } from './redrive-api.ts';
import type { BodyObject } from './request-body.ts';
import { objectBody, optionalString, requiredString } from './request-body.ts';
import { topologyRoutes } from './topology-api.ts';
import type { Json } from './views.ts';
import {
  bindingJson,
  defaultBindingJson,
  exchangeJson,
  permissionJson,
  policyJson,
  queueJson,
  userJson,
} from './views.ts';

// The shared shapes live in api-types.ts (route modules import them from there).
export type { ApiRequest, ApiResponse, Handler, Method, Route, RoutedRequest } from './api-types.ts';

const CREATED: ApiResponse = { status: 201 };
const NO_CONTENT: ApiResponse = { status: 204 };

function ok(body: Json): ApiResponse {
  return { status: 200, body };
}

function byName<T extends { readonly name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/** Tags from a body: RabbitMQ's comma-separated string or (3.9+) an array of strings. */
function parseTags(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const list = typeof value === 'string' ? value.split(',') : value;
  if (!Array.isArray(list) || !list.every((t) => typeof t === 'string')) {
    throw badRequest("'tags' must be a comma-separated string or an array of strings");
  }
  return [...new Set(list.map((t) => t.trim()).filter((t) => t !== ''))];
}

export class ManagementApi {
  private readonly broker: Broker;
  private readonly replicas: QueueReplicaOps;
  private readonly routes: readonly Route[];

  /**
   * `cluster` defaults to the node alone (`singleNodeClusterView`); `replicas`, the operations on
   * queue replicas, to the broker's own; `checks`, the queue consistency checks, too.
   */
  constructor(
    broker: Broker,
    cluster: ClusterView = singleNodeClusterView({ nodeName: broker.nodeName }),
    replicas: QueueReplicaOps = broker.replicaOps,
    checks: QueueCheckOps = broker.queueChecks,
  ) {
    this.broker = broker;
    this.replicas = replicas;
    this.routes = [
      ...clusterRoutes(cluster, (member) => nodeStats(broker, member)),
      // Before the queue routes: '/api/queues/grow' is also the shape of '/api/queues/{vhost}'.
      ...queueReplicaRoutes({
        ops: replicas,
        metadata: broker.metadataView,
        cluster,
        requireQueue: (user, vhost, name) => this.requireQueue(user, vhost, name),
      }),
      ...queueCheckRoutes({ ops: checks, metadata: broker.metadataView }),
      ...featureFlagRoutes(cluster.featureFlags ?? standaloneFeatureFlags(broker.nodeName)),
      ...redriveRoutes(broker, cluster),
      ...maintenanceRoutes({ broker, cluster, replicas }),
      ...healthCheckRoutes({ broker }),
      ...deadLetterRoutes({
        browser: broker.queueBrowser,
        metadata: broker.metadataView,
        requireQueue: (user, vhost, name) => this.requireQueue(user, vhost, name),
      }),
      ...topologyRoutes({
        broker,
        requireVhost: (user, vhost) => this.requireVhost(user, vhost),
        requireQueue: (user, vhost, name) => this.requireQueue(user, vhost, name),
      }),
      ...definitionsRoutes(broker),
      ...connectionRoutes(broker),
      { path: ['overview'], methods: { GET: (r) => this.overview(r) } },
      { path: ['whoami'], methods: { GET: (r) => ok({ name: r.user.name, tags: [...r.user.tags] }) } },
      { path: ['vhosts'], methods: { GET: (r) => this.listVhosts(r) } },
      {
        path: ['vhosts', ':vhost'],
        methods: {
          GET: (r) => this.getVhost(r),
          PUT: (r) => this.putVhost(r),
          DELETE: (r) => this.deleteVhost(r),
        },
      },
      { path: ['vhosts', ':vhost', 'permissions'], methods: { GET: (r) => this.vhostPermissions(r) } },
      { path: ['users'], methods: { GET: () => this.listUsers() } },
      {
        path: ['users', ':user'],
        methods: {
          GET: (r) => this.getUser(r),
          PUT: (r) => this.putUser(r),
          DELETE: (r) => this.deleteUser(r),
        },
      },
      { path: ['users', ':user', 'permissions'], methods: { GET: (r) => this.userPermissions(r) } },
      { path: ['permissions'], methods: { GET: () => this.listPermissions() } },
      {
        path: ['permissions', ':vhost', ':user'],
        methods: {
          GET: (r) => this.getPermission(r),
          PUT: (r) => this.putPermission(r),
          DELETE: (r) => this.deletePermission(r),
        },
      },
      { path: ['policies'], methods: { GET: (r) => this.listPolicies(r) } },
      { path: ['policies', ':vhost'], methods: { GET: (r) => this.listPolicies(r) } },
      {
        path: ['policies', ':vhost', ':name'],
        methods: {
          GET: (r) => this.getPolicy(r),
          PUT: (r) => this.putPolicy(r),
          DELETE: (r) => this.deletePolicy(r),
        },
      },
      { path: ['queues'], methods: { GET: (r) => this.listQueues(r) } },
      { path: ['queues', ':vhost'], methods: { GET: (r) => this.listQueues(r) } },
      { path: ['queues', ':vhost', ':name'], methods: { GET: (r) => this.getQueue(r) } },
      { path: ['exchanges'], methods: { GET: (r) => this.listExchanges(r) } },
      { path: ['exchanges', ':vhost'], methods: { GET: (r) => this.listExchanges(r) } },
      { path: ['exchanges', ':vhost', ':name'], methods: { GET: (r) => this.getExchange(r) } },
      { path: ['bindings'], methods: { GET: (r) => this.listBindings(r) } },
      { path: ['bindings', ':vhost'], methods: { GET: (r) => this.listBindings(r) } },
    ];
    checkAccessTable(this.routes);
  }

  /** Every endpoint and method, as `METHOD /path` (the keys of ACCESS_TABLE). */
  endpoints(): string[] {
    return this.routes.flatMap((route) => Object.keys(route.methods).map((m) => accessKey(m, route.path)));
  }

  /**
   * The route for `segments` (the decoded path after '/api/') and `method`: the handler with its
   * parameters, or a 404 / 405 ApiError. The first route whose path matches and that has the method
   * wins, so a literal path shadows a parameter only for its own methods: `POST /api/queues/grow`
   * grows queues while `GET /api/queues/grow` still lists the queues of a vhost named 'grow'.
   */
  resolve(
    method: string,
    segments: readonly string[],
  ): { handler: (request: ApiRequest) => Promise<ApiResponse> | ApiResponse; params: string[] } {
    const allowed = new Set<string>();
    for (const route of this.routes) {
      const params = matchPath(route.path, segments);
      if (params === undefined) continue;
      const handler = route.methods[method as Method];
      if (handler !== undefined) {
        return { handler: this.guarded(accessKey(method, route.path), handler), params };
      }
      for (const other of Object.keys(route.methods)) allowed.add(other);
    }
    if (allowed.size > 0) throw methodNotAllowed(method, [...allowed]);
    throw notFound('no such API endpoint');
  }

  // ------------------------------------------------------------------------------ access

  /** `handler` behind its access rule (access-table.ts): checked before it runs, its reach handed on. */
  private guarded(
    key: string,
    handler: Handler,
  ): (request: ApiRequest) => Promise<ApiResponse> | ApiResponse {
    const rule = ACCESS_TABLE[key];
    // checkAccessTable made sure at construction that every route has its rule.
    if (rule === undefined) throw new Error(`no access rule for ${key}`);
    return (request) => {
      const run = () => {
        const access = checkAccess(this.metadata, rule, request.user, request.params, request.query);
        return handler({ ...request, access });
      };
      return repeatableAfterNotFound(request.method, key) ? this.readYourWrites(key, run) : run();
    };
  }

  /**
   * A request answered 404 is asked again once this node caught up with the metadata leader's
   * commit index (`Broker.catchUpBeforeNotFound`): a vhost, user, queue, exchange or binding created
   * through another node a moment ago is found here too — read, bound, purged or deleted. A 404
   * means the request changed nothing (a name is looked up before anything is proposed, and a
   * command the metadata machine refuses applies as nothing), so there is no effect to repeat.
   */
  private async readYourWrites(
    key: string,
    run: () => Promise<ApiResponse> | ApiResponse,
  ): Promise<ApiResponse> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
      const waiting = this.broker.catchUpBeforeNotFound(() => `${key} (${error.message})`);
      if (waiting === undefined) throw error;
      await waiting;
      return run();
    }
  }

  private get metadata(): MetadataMachine {
    return this.broker.metadataView;
  }

  private seesAll(user: UserRecord): boolean {
    return user.tags.includes(ADMINISTRATOR) || user.tags.includes(MONITORING);
  }

  /** `vhost` if `user` may see it; the same 404 whether it is missing or hidden. */
  private requireVhost(user: UserRecord, vhost: string): string {
    if (!seesVhost(this.metadata, user, vhost)) throw notFound(`no vhost '${vhost}'`);
    return vhost;
  }

  /**
   * The vhost named by the first parameter (the router checked it), or every vhost the request's
   * rule reaches (sorted): a policymaker lists the policies of its own vhosts only.
   */
  private vhostsOf(request: RoutedRequest): string[] {
    const named = request.params[0];
    if (named !== undefined) return [this.requireVhost(request.user, named)];
    return this.metadata
      .vhosts()
      .map((v) => v.name)
      .filter((v) => request.access.reaches(v))
      .sort();
  }

  private async run(command: MetadataCommand): Promise<MetadataOk> {
    const reply = await this.broker.manage(command);
    if (reply.type === 'error') throw fromMetadataError(reply);
    return reply;
  }

  private async body(request: ApiRequest, optional = false): Promise<BodyObject> {
    return objectBody(await request.body(), optional);
  }

  // ------------------------------------------------------------------------------ overview

  private overview(request: RoutedRequest): ApiResponse {
    let queues = 0;
    let exchanges = 0;
    let consumers = 0;
    let ready = 0;
    let unacked = 0;
    // The message counters of the queues with a replica here (the console charts their rates).
    const stats = { publish: 0, deliver_get: 0, redeliver: 0, ack: 0 };
    const alarms: Json[] = [];
    for (const vhost of this.vhostsOf(request)) {
      exchanges += this.metadata.exchanges(vhost).length;
      for (const q of this.metadata.queues(vhost)) {
        queues++;
        const actor = this.broker.queueActor(vhost, q.name);
        const repair = actor?.bodyRepairStatus();
        if (repair !== undefined && (repair.missing > 0 || repair.lost > 0)) {
          // A replica here is not whole: bodies being fetched from the others, or lost everywhere.
          alarms.push({ type: 'queue_bodies_missing', vhost, queue: q.name, ...repair });
        }
        const counts = actor?.counts();
        if (counts === undefined) continue;
        consumers += counts.consumers;
        ready += counts.ready;
        unacked += counts.unacked;
        const flow = actor?.flowTotals();
        if (flow === undefined) continue;
        stats.publish += flow.published;
        stats.deliver_get += flow.delivered;
        stats.redeliver += flow.redelivered;
        stats.ack += flow.acked;
      }
    }
    const version = tableGet(this.broker.serverProperties, 'version')?.longStr ?? null;
    return ok({
      product_name: 'Styx',
      product_version: version,
      management_version: version,
      node: this.broker.nodeName,
      cluster_name: this.broker.nodeName,
      object_totals: {
        connections: this.seesAll(request.user) ? this.broker.connectionCount() : 0,
        exchanges,
        queues,
        consumers,
      },
      queue_totals: { messages: ready + unacked, messages_ready: ready, messages_unacknowledged: unacked },
      message_stats: stats,
      alarms,
      listeners: this.broker.listeners.list().map((l) => ({
        node: this.broker.nodeName,
        protocol: l.protocol,
        ip_address: l.host,
        port: l.port,
      })),
    });
  }

  // ------------------------------------------------------------------------------ vhosts

  private vhostJson(vhost: string): Json {
    let ready = 0;
    let unacked = 0;
    for (const q of this.metadata.queues(vhost)) {
      const counts = this.broker.queueActor(vhost, q.name)?.counts();
      ready += counts?.ready ?? 0;
      unacked += counts?.unacked ?? 0;
    }
    return {
      name: vhost,
      description: '',
      tags: [],
      messages: ready + unacked,
      messages_ready: ready,
      messages_unacknowledged: unacked,
    };
  }

  private listVhosts(request: RoutedRequest): ApiResponse {
    return ok(this.vhostsOf(request).map((v) => this.vhostJson(v)));
  }

  private getVhost(request: RoutedRequest): ApiResponse {
    return ok(this.vhostJson(this.requireVhost(request.user, request.params[0] as string)));
  }

  private async putVhost(request: RoutedRequest): Promise<ApiResponse> {
    const name = request.params[0] as string;
    if (name === '') throw badRequest('a vhost needs a name');
    await this.body(request, true);
    const reply = await this.run({ type: 'addVhost', name });
    return reply.created ? CREATED : NO_CONTENT;
  }

  private async deleteVhost(request: RoutedRequest): Promise<ApiResponse> {
    await this.run({ type: 'deleteVhost', name: request.params[0] as string });
    return NO_CONTENT;
  }

  // ------------------------------------------------------------------------------ users

  private listUsers(): ApiResponse {
    return ok(this.metadata.users().sort(byName).map(userJson));
  }

  private getUser(request: RoutedRequest): ApiResponse {
    const name = request.params[0] as string;
    const user = this.metadata.user(name);
    if (user === undefined) throw notFound(`no user '${name}'`);
    return ok(userJson(user));
  }

  /**
   * Create or update a user. `password` is required for a new user; without it an existing
   * user keeps its password (a tags-only update). `tags` absent keeps the existing tags.
   */
  private async putUser(request: RoutedRequest): Promise<ApiResponse> {
    const name = request.params[0] as string;
    if (name === '') throw badRequest('a user needs a name');
    const body = await this.body(request);
    if (body.password_hash !== undefined) {
      throw badRequest("Styx does not accept 'password_hash': send 'password' (it is hashed with scrypt)");
    }
    const password = optionalString(body, 'password');
    const tags = parseTags(body.tags);
    const existing = this.metadata.user(name);
    if (password === undefined && existing === undefined)
      throw badRequest("'password' must be set for a new user");
    if (password === '') throw badRequest("'password' must not be empty");
    const passwordHash =
      password === undefined ? (existing as UserRecord).passwordHash : await hashPassword(password);
    const reply = await this.run({
      type: 'putUser',
      name,
      passwordHash,
      tags: tags ?? existing?.tags ?? [],
    });
    return reply.created ? CREATED : NO_CONTENT;
  }

  private async deleteUser(request: RoutedRequest): Promise<ApiResponse> {
    await this.run({ type: 'deleteUser', name: request.params[0] as string });
    return NO_CONTENT;
  }

  // ------------------------------------------------------------------------------ permissions

  private listPermissions(): ApiResponse {
    return ok(this.sortedPermissions(() => true));
  }

  private vhostPermissions(request: RoutedRequest): ApiResponse {
    const vhost = this.requireVhost(request.user, request.params[0] as string);
    return ok(this.sortedPermissions((p) => p.vhost === vhost));
  }

  private userPermissions(request: RoutedRequest): ApiResponse {
    const user = request.params[0] as string;
    if (this.metadata.user(user) === undefined) throw notFound(`no user '${user}'`);
    return ok(this.sortedPermissions((p) => p.user === user));
  }

  private sortedPermissions(keep: (p: { vhost: string; user: string }) => boolean): Json {
    return this.metadata
      .allPermissions()
      .filter(keep)
      .sort((a, b) => (a.vhost < b.vhost ? -1 : a.vhost > b.vhost ? 1 : a.user < b.user ? -1 : 1))
      .map(permissionJson);
  }

  private getPermission(request: RoutedRequest): ApiResponse {
    const [vhost, user] = request.params as [string, string];
    const record = this.metadata.permissions(user, vhost);
    if (record === undefined) throw notFound(`no permissions for user '${user}' in vhost '${vhost}'`);
    return ok(permissionJson(record));
  }

  private async putPermission(request: RoutedRequest): Promise<ApiResponse> {
    const [vhost, user] = request.params as [string, string];
    const body = await this.body(request);
    const reply = await this.run({
      type: 'setPermissions',
      user,
      vhost,
      configure: requiredString(body, 'configure'),
      write: requiredString(body, 'write'),
      read: requiredString(body, 'read'),
    });
    return reply.created ? CREATED : NO_CONTENT;
  }

  private async deletePermission(request: RoutedRequest): Promise<ApiResponse> {
    const [vhost, user] = request.params as [string, string];
    const reply = await this.run({ type: 'clearPermissions', user, vhost });
    if (!reply.removed) throw notFound(`no permissions for user '${user}' in vhost '${vhost}'`);
    return NO_CONTENT;
  }

  // ------------------------------------------------------------------------------ policies

  private listPolicies(request: RoutedRequest): ApiResponse {
    const out: Json[] = [];
    for (const vhost of this.vhostsOf(request)) {
      for (const p of this.metadata.policies(vhost).sort(byName)) out.push(policyJson(p));
    }
    return ok(out);
  }

  private getPolicy(request: RoutedRequest): ApiResponse {
    const vhost = this.requireVhost(request.user, request.params[0] as string);
    const name = request.params[1] as string;
    const policy = this.metadata.policy(vhost, name);
    if (policy === undefined) throw notFound(`no policy '${name}' in vhost '${vhost}'`);
    return ok(policyJson(policy));
  }

  /** `{pattern, definition, priority?, apply-to?}`; priority defaults to 0 and apply-to to 'all'. */
  private async putPolicy(request: RoutedRequest): Promise<ApiResponse> {
    const vhost = this.requireVhost(request.user, request.params[0] as string);
    const body = await this.body(request);
    const definition = body.definition;
    if (typeof definition !== 'object' || definition === null || Array.isArray(definition)) {
      throw badRequest("'definition' must be a JSON object");
    }
    const priority = body.priority ?? 0;
    if (typeof priority !== 'number' || !Number.isSafeInteger(priority)) {
      throw badRequest("'priority' must be an integer");
    }
    const reply = await this.run({
      type: 'setPolicy',
      vhost,
      name: request.params[1] as string,
      pattern: requiredString(body, 'pattern'),
      applyTo: optionalString(body, 'apply-to') ?? 'all',
      priority,
      definition: definition as Record<string, unknown>,
    });
    return reply.created ? CREATED : NO_CONTENT;
  }

  private async deletePolicy(request: RoutedRequest): Promise<ApiResponse> {
    const vhost = this.requireVhost(request.user, request.params[0] as string);
    await this.run({ type: 'clearPolicy', vhost, name: request.params[1] as string });
    return NO_CONTENT;
  }

  // ------------------------------------------------------------------------------ queues

  /** The queue `user` asks for; 404 if it does not exist, or its vhost is missing or hidden (same text). */
  private requireQueue(user: UserRecord, vhost: string, name: string): QueueRecord {
    const q = this.metadata.queue(this.requireVhost(user, vhost), name);
    if (q === undefined) throw notFound(`no queue '${name}' in vhost '${vhost}'`);
    return q;
  }

  /** `nameOf` maps node ids to names (`nodeNames`, made once per request). */
  private queueJson(q: QueueRecord, nameOf: (id: string) => string): Json {
    const actor = this.broker.queueActor(q.vhost, q.name);
    const running = actor !== undefined && actor.groupId === q.groupId ? actor : undefined;
    return queueJson(
      q,
      {
        counts: running?.counts(),
        config: running?.config() ?? this.broker.effectiveConfig(q).config,
        policy: this.metadata.policyFor(q.vhost, 'queue', q.name),
        removalTotals: running?.removalTotals(),
        deadLetterTotals: running?.deadLetterTotals(),
        bodyRepair: running?.bodyRepairStatus(),
        flow: running?.flowTotals(),
        handOffsBlocked: running?.blockedHandOffs(),
        replicas: replicaNames(this.replicas, q, nameOf),
      },
      this.broker.nodeName,
    );
  }

  /** Every queue, or with `?page=` one page of them (pagination.ts: only that page is rendered). */
  private async listQueues(request: RoutedRequest): Promise<ApiResponse> {
    const nameOf = nodeNames(this.metadata);
    const records = this.vhostsOf(request).flatMap((vhost) => this.metadata.queues(vhost).sort(byName));
    const json = (q: QueueRecord): Json => this.queueJson(q, nameOf);
    if (wantsPage(request.query))
      return ok(await pageOf(records, request.query, queueListPaging(this.broker, json)));
    return ok(records.map(json));
  }

  private getQueue(request: RoutedRequest): ApiResponse {
    const q = this.requireQueue(request.user, request.params[0] as string, request.params[1] as string);
    return ok(this.queueJson(q, nodeNames(this.metadata)));
  }

  // ------------------------------------------------------------------------------ exchanges & bindings

  private listExchanges(request: RoutedRequest): ApiResponse {
    const out: Json[] = [];
    for (const vhost of this.vhostsOf(request)) {
      for (const x of this.metadata.exchanges(vhost).sort(byName)) {
        out.push(exchangeJson(x, this.metadata.policyFor(vhost, 'exchange', x.name)));
      }
    }
    return ok(out);
  }

  private getExchange(request: RoutedRequest): ApiResponse {
    const vhost = this.requireVhost(request.user, request.params[0] as string);
    const name = exchangeFromPath(request.params[1] as string);
    const x = this.metadata.exchange(vhost, name);
    if (x === undefined) throw notFound(`no exchange '${name}' in vhost '${vhost}'`);
    return ok(exchangeJson(x, this.metadata.policyFor(vhost, 'exchange', name)));
  }

  /** Per vhost: the default exchange's implicit binding of each queue, then the explicit ones. */
  private listBindings(request: RoutedRequest): ApiResponse {
    const out: Json[] = [];
    for (const vhost of this.vhostsOf(request)) {
      for (const q of this.metadata.queues(vhost).sort(byName)) out.push(defaultBindingJson(q));
      for (const b of this.metadata.bindings(vhost)) out.push(bindingJson(b));
    }
    return ok(out);
  }
}

/** The parameters of `segments` if they follow `path` (literals and ':param' placeholders). */
function matchPath(path: readonly string[], segments: readonly string[]): string[] | undefined {
  if (path.length !== segments.length) return undefined;
  const params: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const part = path[i] as string;
    const segment = segments[i] as string;
    if (part.startsWith(':')) params.push(segment);
    else if (part !== segment) return undefined;
  }
  return params;
}

/**
 * Whether a request answered 404 may run again after the catch-up (`readYourWrites`): every one
 * but a definitions import, which applies its items one by one, so a 404 part-way through may
 * follow changes already made.
 */
function repeatableAfterNotFound(method: string, key: string): boolean {
  return method === 'GET' || !key.startsWith('POST /definitions');
}
