/**
 * The management API's feature flag endpoints (cluster/feature-flags.ts), as RabbitMQ's:
 *
 *   GET /api/feature-flags                  every flag: [{name, state, since, desc, supported_by,
 *                                           lacking, nodes: [{node, version, supported}]}]
 *   PUT /api/feature-flags/{name}/enable    enable a flag, or every flag that can be with 'all':
 *                                           {enabled: [names enabled now]}
 *
 * `state` is enabled, disabled (every member supports it: it can be enabled) or unavailable (a member
 * lacks it, or its support is not known: `lacking` names them). Reads need `administrator` or
 * `monitoring`; enabling needs `administrator`. An unknown flag is 404; one some member lacks 400
 * with the reason; no reachable metadata leader 503.
 */
import type { FeatureFlagStatus, FeatureFlagsView } from '../cluster/feature-flags.ts';
import { badRequest, fromClusterError, notFound } from './api-error.ts';
import type { Route } from './api-types.ts';
import type { Json } from './views.ts';

function flagJson(flag: FeatureFlagStatus): Json {
  return {
    name: flag.name,
    state: flag.state,
    since: flag.since ?? null,
    desc: flag.description,
    supported_by: flag.nodes.filter((n) => n.supported === true).map((n) => n.node),
    lacking: flag.nodes.filter((n) => n.supported !== true).map((n) => n.node),
    nodes: flag.nodes.map((n) => ({
      node: n.node,
      version: n.version ?? null,
      supported: n.supported ?? null,
    })),
  };
}

/** A refusal of the view as an HTTP error. */
function fromFeatureFlagError(error: unknown): unknown {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === 'FEATURE_FLAG_UNKNOWN') return notFound((error as Error).message);
  if (code === 'FEATURE_FLAG_UNAVAILABLE') return badRequest((error as Error).message);
  return fromClusterError(error);
}

export function featureFlagRoutes(flags: FeatureFlagsView): Route[] {
  return [
    {
      path: ['feature-flags'],
      methods: {
        GET: async () => {
          try {
            return { status: 200, body: (await flags.list()).map(flagJson) };
          } catch (error) {
            throw fromFeatureFlagError(error);
          }
        },
      },
    },
    {
      path: ['feature-flags', ':name', 'enable'],
      methods: {
        PUT: async (request) => {
          try {
            return { status: 200, body: { enabled: await flags.enable(request.params[0] as string) } };
          } catch (error) {
            throw fromFeatureFlagError(error);
          }
        },
      },
    },
  ];
}
