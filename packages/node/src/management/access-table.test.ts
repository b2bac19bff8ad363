import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UserRecord } from '../metadata/types.ts';
import type { AccessRule, ManagementTag } from './access.ts';
import { ACCESS_TABLE, accessTableMarkdown, checkAccessTable } from './access-table.ts';
import { ApiError } from './api-error.ts';
import { ManagementApi } from './management-api.ts';
import type { Credentials } from './test-support/management-harness.ts';
import { ALL, ManagementHarness } from './test-support/management-harness.ts';

/** The vhost every vhost-scoped route is walked in. */
const TARGET = 'walk';

const TAG_SETS: readonly (readonly ManagementTag[])[] = [
  [],
  ['management'],
  ['policymaker'],
  ['monitoring'],
  ['monitoring', 'policymaker'],
  ['administrator'],
];
/** In the target vhost: no permission entry, every permission, or regexes matching none of the walk's names. */
const PERMISSION_STATES = ['none', 'full', 'restricted'] as const;
type PermissionState = (typeof PERMISSION_STATES)[number];
const RESTRICTED = { configure: '^zzz', write: '^zzz', read: '^zzz' };

type Outcome = 'allowed' | 'forbidden' | 'hidden';

/**
 * What the table promises a user with `tags` and `state` in the target vhost, in RabbitMQ's words:
 * without one of the rule's tags, 403; a vhost it does not see (no entry, neither administrator nor
 * monitoring), 404 as if missing; a vhost it sees but the rule does not reach for any of its tags,
 * 403; a permission regex the rule names that the user's entry does not grant, 403.
 */
function promised(rule: AccessRule, tags: readonly ManagementTag[], state: PermissionState): Outcome {
  const granted = tags.filter((tag) => rule.tags[tag] !== undefined);
  if (granted.length === 0) return 'forbidden';
  if (rule.vhost === undefined) return 'allowed';
  const member = state !== 'none';
  const sees = member || tags.includes('administrator') || tags.includes('monitoring');
  if (!sees) return 'hidden';
  if (!granted.some((tag) => rule.tags[tag] === 'all' || member)) return 'forbidden';
  if ((rule.permissions ?? []).length > 0 && state !== 'full') return 'forbidden';
  return 'allowed';
}

/**
 * A request for `key` that touches nothing that exists beyond the target vhost: names that do not
 * exist, a vhost that does not exist where the rule checks none, and a body that is not an object,
 * so an allowed request ends in a 400 or 404 of its own (never a change).
 */
function walkRequest(
  key: string,
  rule: AccessRule,
): { method: string; segments: string[]; query: URLSearchParams } {
  const [method, path] = key.split(' ') as [string, string];
  const segments = path
    .slice(1)
    .split('/')
    .map((segment) => {
      if (!segment.startsWith(':')) return segment;
      if (segment === ':vhost') return rule.vhost === undefined ? 'nowhere' : TARGET;
      return 'missing';
    });
  const query = new URLSearchParams(rule.vhost === 'query' ? { vhost: TARGET } : {});
  return { method, segments, query };
}

describe('the access table, walked over every route with every kind of user', () => {
  let harness: ManagementHarness;
  let api: ManagementApi;
  const users = new Map<
    string,
    { tags: readonly ManagementTag[]; state: PermissionState; record: UserRecord }
  >();

  beforeAll(async () => {
    harness = await ManagementHarness.start();
    api = new ManagementApi(harness.broker);
    expect((await harness.api('PUT', `/api/vhosts/${TARGET}`)).status).toBe(201);
    for (const tags of TAG_SETS) {
      for (const state of PERMISSION_STATES) {
        const name = `${tags.join('+') || 'none'}-${state}`;
        const permissions: Record<string, { configure: string; write: string; read: string }> = {};
        if (state !== 'none') permissions[TARGET] = state === 'full' ? { ...ALL } : RESTRICTED;
        await harness.makeUser(name, tags, permissions);
        const record = harness.broker.metadataView.user(name);
        if (record === undefined) throw new Error(`no user ${name}`);
        users.set(name, { tags, state, record });
      }
    }
  }, 60_000);

  afterAll(async () => {
    await harness?.stop();
  });

  it('has a rule for every registered route and method, and a route for every rule', () => {
    const endpoints = api.endpoints();
    expect(endpoints.length).toBeGreaterThan(60);
    expect(new Set(endpoints)).toEqual(new Set(Object.keys(ACCESS_TABLE)));
  });

  it('refuses to register a route without a rule', () => {
    expect(() =>
      checkAccessTable([{ path: ['new-thing'], methods: { GET: () => ({ status: 200 }) } }]),
    ).toThrow(/route GET \/new-thing has no rule/);
  });

  it('answers every route as its rule says, for every tag set and permission state', async () => {
    const mismatches: string[] = [];
    let walked = 0;
    for (const key of api.endpoints()) {
      const rule = ACCESS_TABLE[key] as AccessRule;
      const { method, segments, query } = walkRequest(key, rule);
      for (const [name, { tags, state, record }] of users) {
        const expected = promised(rule, tags, state);
        let status: number;
        let reason = '';
        try {
          const { handler, params } = api.resolve(method, segments);
          const reply = await handler({
            method,
            params,
            query,
            user: record,
            body: async () => 'not an object',
          });
          status = reply.status;
        } catch (error) {
          if (!(error instanceof ApiError)) throw error;
          status = error.status;
          reason = error.message;
        }
        const hidden = status === 404 && reason === `no vhost '${TARGET}'`;
        const got: Outcome = status === 401 || status === 403 ? 'forbidden' : hidden ? 'hidden' : 'allowed';
        walked++;
        if (got !== expected)
          mismatches.push(`${key} as ${name}: expected ${expected}, got ${status} ${reason}`);
      }
    }
    expect(walked).toBe(api.endpoints().length * TAG_SETS.length * PERMISSION_STATES.length);
    expect(mismatches).toEqual([]);
  });

  it('keeps the table in docs/operations.md equal to the code', async () => {
    const doc = await readFile(new URL('../../../../docs/operations.md', import.meta.url), 'utf8');
    expect(doc).toContain(accessTableMarkdown());
  });

  describe('the findings of issue 25', () => {
    const as = (name: string): Credentials => ({ user: name, password: `${name}-pw` });
    const policy = { pattern: '.*', definition: { 'max-length': 0 } };

    it('a monitoring policymaker cannot set or delete policies in a vhost it has no permissions in', async () => {
      const put = await harness.api(
        'PUT',
        `/api/policies/${TARGET}/drop-all`,
        policy,
        as('monitoring+policymaker-none'),
      );
      expect(put.status).toBe(403);
      const del = await harness.api(
        'DELETE',
        `/api/policies/${TARGET}/drop-all`,
        undefined,
        as('monitoring+policymaker-none'),
      );
      expect(del.status).toBe(403);
      // A policymaker alone does not even see the vhost; with permissions there, it may.
      expect(
        (await harness.api('PUT', `/api/policies/${TARGET}/p`, policy, as('policymaker-none'))).status,
      ).toBe(404);
      expect(
        (await harness.api('PUT', `/api/policies/${TARGET}/p`, policy, as('policymaker-full'))).status,
      ).toBe(201);
      expect(
        (await harness.api('DELETE', `/api/policies/${TARGET}/p`, undefined, as('policymaker-full'))).status,
      ).toBe(204);
      // It lists only the policies of its own vhosts.
      await harness.api('PUT', '/api/policies/%2F/root-only', policy);
      const listed = await harness.api('GET', '/api/policies', undefined, as('monitoring+policymaker-none'));
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual([]);
      await harness.api('DELETE', '/api/policies/%2F/root-only');
    });

    it("an administrator cannot read a queue's messages without the read permission", async () => {
      const admin = await harness.makeUser('admin-no-read', ['administrator'], {
        [TARGET]: { configure: '.*', write: '.*', read: '^nothing$' },
      });
      expect((await harness.api('PUT', `/api/queues/${TARGET}/secrets`, {}, admin)).status).toBe(201);
      const read = await harness.api('GET', `/api/queues/${TARGET}/secrets/messages`, undefined, admin);
      expect(read.status).toBe(403);
      expect((read.body as { reason: string }).reason).toMatch(/read permission needed/);
      // Without any entry in the vhost: refused too. With read: allowed.
      const noEntry = await harness.api(
        'GET',
        `/api/queues/${TARGET}/secrets/messages`,
        undefined,
        as('administrator-none'),
      );
      expect(noEntry.status).toBe(403);
      const full = await harness.api(
        'GET',
        `/api/queues/${TARGET}/secrets/messages`,
        undefined,
        as('administrator-full'),
      );
      expect(full.status).toBe(200);
    });
  });
});
