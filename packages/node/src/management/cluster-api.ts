/**
 * The management API's cluster endpoints, on a ClusterView:
 *
 *   GET    /api/nodes                  every member (nodeJson), oldest first
 *   GET    /api/nodes/{name-or-id}     one member
 *   GET    /api/cluster                {self: {id, name}, metadata_leader: {id, name} | null, members}
 *   POST   /api/cluster/join           {address: "HOST:PORT"}: this node joins that node's cluster
 *   DELETE /api/cluster/nodes/{name-or-id}   forget a member for good (forget_cluster_node)
 *
 * Reads need the tag `administrator` or `monitoring` (RabbitMQ's rule for /api/nodes); changes need
 * `administrator`. Refusals of the view map to HTTP statuses in `fromClusterError`.
 */
import type { ClusterMemberStatus, ClusterView } from '../cluster/cluster-view.ts';
import { clusterAddressProblem } from '../cluster/cluster-view.ts';
import { badRequest, fromClusterError, notFound } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import type { NodeStats } from './node-stats.ts';
import { objectBody, requiredString } from './request-body.ts';
import type { Json } from './views.ts';
import { nodeJson } from './views.ts';

const NO_CONTENT: ApiResponse = { status: 204 };

/** Run a view change, its refusals as ApiErrors. */
async function change(operation: () => Promise<void>): Promise<ApiResponse> {
  try {
    await operation();
  } catch (err) {
    throw fromClusterError(err);
  }
  return NO_CONTENT;
}

/** `statsOf`: RabbitMQ's figures of a member for /api/nodes (node-stats.ts). */
export function clusterRoutes(
  cluster: ClusterView,
  statsOf?: (member: ClusterMemberStatus) => NodeStats,
): Route[] {
  const show = (m: ClusterMemberStatus, leader: string | undefined): Json =>
    nodeJson(m, leader, statsOf?.(m));
  const members = (): ClusterMemberStatus[] => cluster.members();
  const member = (idOrName: string): ClusterMemberStatus => {
    const all = members();
    const found = all.find((m) => m.id === idOrName) ?? all.find((m) => m.name === idOrName);
    if (found === undefined) throw notFound(`no node '${idOrName}' in the cluster`);
    return found;
  };
  const list = (): Json[] => {
    const leader = cluster.metadataLeader();
    return members().map((m) => show(m, leader));
  };
  const read =
    (handler: (request: ApiRequest) => Json) =>
    (request: ApiRequest): ApiResponse => {
      return { status: 200, body: handler(request) };
    };
  return [
    { path: ['nodes'], methods: { GET: read(list) } },
    {
      path: ['nodes', ':node'],
      methods: {
        GET: read((r) => show(member(r.params[0] as string), cluster.metadataLeader())),
      },
    },
    {
      path: ['cluster'],
      methods: {
        GET: read(() => {
          const leader = cluster.metadataLeader();
          const self = cluster.self();
          return {
            self: { id: self.id, name: self.name },
            metadata_leader:
              leader === undefined
                ? null
                : { id: leader, name: members().find((m) => m.id === leader)?.name ?? null },
            members: list(),
          };
        }),
      },
    },
    {
      path: ['cluster', 'join'],
      methods: {
        POST: async (request) => {
          const address = requiredString(objectBody(await request.body()), 'address');
          const problem = clusterAddressProblem(address);
          if (problem !== undefined) throw badRequest(`'address': ${problem}`);
          return change(() => cluster.join(address));
        },
      },
    },
    {
      path: ['cluster', 'nodes', ':node'],
      methods: {
        DELETE: (request) => {
          return change(() => cluster.forget(request.params[0] as string));
        },
      },
    },
  ];
}
