import { describe, expect, it } from 'vitest';
import type { FeatureFlagsView } from '../cluster/feature-flags.ts';
import {
  buildOf,
  FEATURE_FLAGS,
  featureFlagStatus,
  flagsToEnable,
  standaloneFeatureFlags,
} from '../cluster/feature-flags.ts';
import { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { UserRecord } from '../metadata/types.ts';
import { checkAccess } from './access.ts';
import { ACCESS_TABLE, accessKey } from './access-table.ts';
import type { ApiResponse, Route, RoutedRequest } from './api-types.ts';
import { featureFlagRoutes } from './feature-flags-api.ts';

const user = (...tags: string[]): UserRecord => ({ name: 'u', passwordHash: '', tags });

function call(routes: Route[], method: 'GET' | 'PUT', path: string[], who: UserRecord): Promise<ApiResponse> {
  const route = routes.find(
    (r) => r.path.length === path.length && r.path.every((p, i) => p.startsWith(':') || p === path[i]),
  );
  const handler = route?.methods[method];
  if (route === undefined || handler === undefined) throw new Error(`no route ${method} ${path.join('/')}`);
  const params = path.filter((_, i) => route.path[i]?.startsWith(':'));
  const query = new URLSearchParams();
  // As the router does: the route's access rule first (access-table.ts).
  const rule = ACCESS_TABLE[accessKey(method, route.path)];
  if (rule === undefined) throw new Error(`no access rule for ${method} ${path.join('/')}`);
  try {
    const access = checkAccess(new MetadataMachine(), rule, who, params, query);
    const request: RoutedRequest = { method, params, query, user: who, body: async () => undefined, access };
    return Promise.resolve(handler(request));
  } catch (error) {
    return Promise.reject(error);
  }
}

/** A cluster of two where n2 runs the previous version: the newest flag is unavailable. */
function mixedCluster(): FeatureFlagsView {
  const members = [
    { id: 'a', name: 'n1', build: buildOf(2) },
    { id: 'b', name: 'n2', build: buildOf(1) },
  ];
  const list = async () => featureFlagStatus(FEATURE_FLAGS, new Set(), members);
  return { list, enable: async (request) => flagsToEnable(request, await list()) };
}

describe('feature flag endpoints', () => {
  it('list every flag with its state and who supports it, for administrators and monitoring users', async () => {
    const routes = featureFlagRoutes(mixedCluster());
    const answer = await call(routes, 'GET', ['feature-flags'], user('monitoring'));
    expect(answer.status).toBe(200);
    expect(answer.body).toContainEqual({
      name: 'queue_body_repair',
      state: 'unavailable',
      since: 2,
      desc: expect.stringContaining('queue.bodies'),
      supported_by: ['n1'],
      lacking: ['n2'],
      nodes: [
        { node: 'n1', version: 2, supported: true },
        { node: 'n2', version: 1, supported: false },
      ],
    });
  });

  it('refuse bad requests with the right status: not allowed 403, unknown 404, unavailable 400', async () => {
    const routes = featureFlagRoutes(mixedCluster());
    await expect(call(routes, 'GET', ['feature-flags'], user('management'))).rejects.toMatchObject({
      status: 403,
    });
    await expect(
      call(routes, 'PUT', ['feature-flags', 'queue_body_repair', 'enable'], user('monitoring')),
    ).rejects.toMatchObject({ status: 403 });
    await expect(
      call(routes, 'PUT', ['feature-flags', 'nope', 'enable'], user('administrator')),
    ).rejects.toMatchObject({ status: 404, code: 'not_found' });
    await expect(
      call(routes, 'PUT', ['feature-flags', 'queue_body_repair', 'enable'], user('administrator')),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/n2 \(cluster protocol version 1\)/),
    });
    const all = await call(routes, 'PUT', ['feature-flags', 'all', 'enable'], user('administrator'));
    expect(all).toEqual({ status: 200, body: { enabled: [] } });
  });

  it('on a node alone, list every flag of the build as enabled', async () => {
    const routes = featureFlagRoutes(standaloneFeatureFlags('solo'));
    const answer = await call(routes, 'GET', ['feature-flags'], user('administrator'));
    expect((answer.body as { state: string }[]).every((f) => f.state === 'enabled')).toBe(true);
  });
});
