/**
 * The management API's access rules, one per endpoint and method: the single source of truth for
 * who may call what (access.ts says what a rule means). The router refuses to start with a route
 * that has no rule here, or a rule for no route, so a new endpoint cannot ship unguarded; the
 * route × user walk in access-table.test.ts checks every rule against real requests, and the
 * table in docs/operations.md is generated from this one (`accessTableMarkdown`).
 */
import type { AccessRule, ManagementTag, Reach } from './access.ts';
import type { Route } from './api-types.ts';

type Tags = Readonly<Partial<Record<ManagementTag, Reach>>>;

/** Reading objects: every management user in its vhosts; administrators and monitoring everywhere. */
const READ: Tags = { administrator: 'all', monitoring: 'all', policymaker: 'member', management: 'member' };
/** Acting in a vhost: every management user in its vhosts (administrators see all, then need the regexes). */
const ACT: Tags = { administrator: 'all', monitoring: 'member', policymaker: 'member', management: 'member' };
/** Policies: administrators anywhere, policymakers in their vhosts. */
const POLICY: Tags = { administrator: 'all', policymaker: 'member' };
/** Node-level state and health. */
const NODE_READ: Tags = { administrator: 'all', monitoring: 'all' };
const ADMIN: Tags = { administrator: 'all' };
/** RabbitMQ's health checks: any management user (`rabbit_mgmt_util:is_authorized`), for probes. */
const HEALTH: Tags = { administrator: 'all', monitoring: 'all', policymaker: 'all', management: 'all' };

const read = (vhost?: number | 'query'): AccessRule =>
  vhost === undefined ? { tags: READ } : { tags: READ, vhost };
const configure = (exchange = false): AccessRule => ({
  tags: ACT,
  vhost: 0,
  permissions: [{ kind: 'configure', param: 1, exchange }],
});
/** Binding or unbinding: write on the destination, read on the source exchange. */
const binding = (destinationIsExchange: boolean): AccessRule => ({
  tags: ACT,
  vhost: 0,
  permissions: [
    { kind: 'write', param: 2, exchange: destinationIsExchange },
    { kind: 'read', param: 1, exchange: true },
  ],
});

/** `METHOD /path` (the route's path after /api/, ':param' placeholders) → its rule. */
export const ACCESS_TABLE: Readonly<Record<string, AccessRule>> = {
  'GET /overview': read(),
  'GET /whoami': read(),
  'GET /vhosts': read(),
  'GET /vhosts/:vhost': read(0),
  'PUT /vhosts/:vhost': { tags: ADMIN },
  'DELETE /vhosts/:vhost': { tags: ADMIN },
  'GET /vhosts/:vhost/permissions': { tags: ADMIN, vhost: 0 },
  'GET /users': { tags: ADMIN },
  'GET /users/:user': { tags: ADMIN },
  'PUT /users/:user': { tags: ADMIN },
  'DELETE /users/:user': { tags: ADMIN },
  'GET /users/:user/permissions': { tags: ADMIN },
  'GET /permissions': { tags: ADMIN },
  'GET /permissions/:vhost/:user': { tags: ADMIN },
  'PUT /permissions/:vhost/:user': { tags: ADMIN },
  'DELETE /permissions/:vhost/:user': { tags: ADMIN },
  'GET /policies': { tags: POLICY },
  'GET /policies/:vhost': { tags: POLICY, vhost: 0 },
  'GET /policies/:vhost/:name': { tags: POLICY, vhost: 0 },
  'PUT /policies/:vhost/:name': { tags: POLICY, vhost: 0 },
  'DELETE /policies/:vhost/:name': { tags: POLICY, vhost: 0 },
  'GET /queues': read(),
  'GET /queues/:vhost': read(0),
  'GET /queues/:vhost/:name': read(0),
  'PUT /queues/:vhost/:name': configure(),
  'DELETE /queues/:vhost/:name': configure(),
  'DELETE /queues/:vhost/:name/contents': { tags: ACT, vhost: 0, permissions: [{ kind: 'read', param: 1 }] },
  'GET /queues/:vhost/:name/bindings': read(0),
  'GET /queues/:vhost/:name/messages': { tags: READ, vhost: 0, permissions: [{ kind: 'read', param: 1 }] },
  'GET /queues/:vhost/:name/dead-lettering': read(0),
  'POST /queues/:vhost/:name/redrive': { tags: ACT, vhost: 0, permissions: [{ kind: 'read', param: 1 }] },
  'GET /queues/:vhost/:name/quorum_status': { tags: ADMIN, vhost: 0 },
  'POST /queues/:vhost/:name/members': { tags: ADMIN, vhost: 0 },
  'DELETE /queues/:vhost/:name/members/:node': { tags: ADMIN, vhost: 0 },
  'POST /queues/grow': { tags: ADMIN },
  'POST /queues/shrink': { tags: ADMIN },
  'POST /rebalance/queues': { tags: ADMIN },
  'GET /exchanges': read(),
  'GET /exchanges/:vhost': read(0),
  'GET /exchanges/:vhost/:name': read(0),
  'PUT /exchanges/:vhost/:name': configure(true),
  'DELETE /exchanges/:vhost/:name': configure(true),
  'GET /exchanges/:vhost/:name/bindings/source': read(0),
  'GET /exchanges/:vhost/:name/bindings/destination': read(0),
  'GET /bindings': read(),
  'GET /bindings/:vhost': read(0),
  'GET /bindings/:vhost/e/:source/q/:destination': read(0),
  'POST /bindings/:vhost/e/:source/q/:destination': binding(false),
  'GET /bindings/:vhost/e/:source/q/:destination/:props': read(0),
  'DELETE /bindings/:vhost/e/:source/q/:destination/:props': binding(false),
  'GET /bindings/:vhost/e/:source/e/:destination': read(0),
  'POST /bindings/:vhost/e/:source/e/:destination': binding(true),
  'GET /bindings/:vhost/e/:source/e/:destination/:props': read(0),
  'DELETE /bindings/:vhost/e/:source/e/:destination/:props': binding(true),
  'GET /definitions': { tags: ADMIN },
  'POST /definitions': { tags: ADMIN },
  'GET /definitions/:vhost': { tags: ADMIN, vhost: 0 },
  'POST /definitions/:vhost': { tags: ADMIN, vhost: 0 },
  'GET /nodes': { tags: NODE_READ },
  'GET /nodes/:node': { tags: NODE_READ },
  'GET /cluster': { tags: NODE_READ },
  'POST /cluster/join': { tags: ADMIN },
  'DELETE /cluster/nodes/:node': { tags: ADMIN },
  'GET /checks/queues': { tags: NODE_READ, vhost: 'query' },
  'GET /checks/queues/:vhost/:name': { tags: NODE_READ, vhost: 0 },
  'GET /feature-flags': { tags: NODE_READ },
  'PUT /feature-flags/:name/enable': { tags: ADMIN },
  'GET /redrives': read('query'),
  'GET /redrives/:id': read(),
  'DELETE /redrives/:id': { tags: ACT },
  'POST /nodes/:node/drain': { tags: ADMIN },
  'POST /nodes/:node/revive': { tags: ADMIN },
  'GET /nodes/:node/maintenance': { tags: NODE_READ },
  'GET /health/checks/node-is-quorum-critical': { tags: NODE_READ },
  'GET /health/checks/quorum-plus-one-online': { tags: NODE_READ },
  // Connections, channels and consumers: administrator and monitoring see everyone's, the others
  // only their own (connections-api.ts narrows the list; closing another's needs administrator).
  'GET /connections': read(),
  'GET /connections/:name': read(),
  'DELETE /connections/:name': { tags: READ },
  'GET /connections/:name/channels': read(),
  'GET /vhosts/:vhost/connections': read(0),
  'GET /channels': read(),
  'GET /channels/:name': read(),
  'GET /vhosts/:vhost/channels': read(0),
  'GET /consumers': read(),
  'GET /consumers/:vhost': read(0),
  'GET /health/checks/alarms': { tags: HEALTH },
  'GET /health/checks/local-alarms': { tags: HEALTH },
  'GET /health/checks/port-listener/:port': { tags: HEALTH },
  'GET /health/checks/protocol-listener/:protocol': { tags: HEALTH },
  'GET /health/checks/virtual-hosts': { tags: HEALTH },
  'GET /health/checks/is-in-service': { tags: HEALTH },
  'GET /health/checks/ready-to-serve-clients': { tags: HEALTH },
};

/**
 * Refuse to serve routes whose access is not written down: every route's method needs its rule in
 * ACCESS_TABLE, and every rule its route (a rule left behind by a removed route would mislead).
 */
export function checkAccessTable(routes: readonly Route[]): void {
  const keys = new Set<string>();
  for (const route of routes) {
    for (const method of Object.keys(route.methods)) {
      const key = accessKey(method, route.path);
      if (ACCESS_TABLE[key] === undefined) throw new Error(`route ${key} has no rule in access-table.ts`);
      keys.add(key);
    }
  }
  const orphans = Object.keys(ACCESS_TABLE).filter((key) => !keys.has(key));
  if (orphans.length > 0) throw new Error(`access-table.ts has rules for no route: ${orphans.join(', ')}`);
}

/** The key of a route's method in ACCESS_TABLE. */
export function accessKey(method: string, path: readonly string[]): string {
  return `${method} /${path.join('/')}`;
}

const TAG_ORDER: readonly ManagementTag[] = ['management', 'policymaker', 'monitoring', 'administrator'];

/** Who may call, in words: "management (own vhosts), monitoring (any vhost)". */
function whoText(rule: AccessRule): string {
  const tags = TAG_ORDER.filter((tag) => rule.tags[tag] !== undefined);
  const vhostWise = rule.vhost !== undefined || tags.some((tag) => rule.tags[tag] === 'member');
  return tags
    .map((tag) => (vhostWise ? `${tag} (${rule.tags[tag] === 'all' ? 'any vhost' : 'own vhosts'})` : tag))
    .join(', ');
}

/** The permission regexes a rule checks, naming the path parameters: "configure on :name". */
function permissionText(key: string, rule: AccessRule): string {
  const params = key.split('/').filter((segment) => segment.startsWith(':'));
  return (rule.permissions ?? []).map((p) => `${p.kind} on ${params[p.param] ?? '?'}`).join(', ');
}

/** The table as Markdown (docs/operations.md embeds it; a test keeps the two equal). */
export function accessTableMarkdown(): string {
  const rows = Object.entries(ACCESS_TABLE).map(
    ([key, rule]) => `| \`${key}\` | ${whoText(rule)} | ${permissionText(key, rule) || '—'} |`,
  );
  return [
    '| endpoint | tags (vhosts they reach) | permission regexes (every user) |',
    '| --- | --- | --- |',
    ...rows,
  ].join('\n');
}
