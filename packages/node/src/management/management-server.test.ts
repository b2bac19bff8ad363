import { request as httpRequest } from 'node:http';
import type { FieldTable, FieldValue } from '@styx/client/wire';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Session } from '../broker/broker.ts';
import { Broker } from '../broker/broker.ts';
import { QueueLinkTimeoutError } from '../cluster/queue-link.ts';
import { silentLogger } from '../logging/logger.ts';
import type { StoredMessage } from '../queue/types.ts';
import { ManagementServer } from './management-server.ts';
import { FakeClusterView } from './test-support/fake-cluster-view.ts';
import type { FakeQueueReplicas } from './test-support/fake-queue-replicas.ts';
import { startClusteredManagement } from './test-support/fake-queue-replicas.ts';

const GUEST = { user: 'guest', password: 'guest' };

interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly body: unknown;
}

function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

function message(body: string): StoredMessage {
  return { exchange: '', routingKey: 'q', properties: {}, body: Buffer.from(body), bcc: undefined };
}

let broker: Broker;
let server: ManagementServer;
let base: string;

beforeEach(async () => {
  broker = await Broker.start({ nodeName: 'mgmt-test', logger: silentLogger(), memoryBudgetBytes: 0 });
  server = new ManagementServer({ broker, logger: silentLogger() });
  await server.start('127.0.0.1', 0);
  base = server.url as string;
});

afterEach(async () => {
  await server.close();
  await broker.shutdown();
});

function authHeader(credentials: { user: string; password: string }): string {
  return `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`;
}

async function api(
  method: string,
  path: string,
  body?: unknown,
  credentials: { user: string; password: string } | null = GUEST,
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (credentials !== null) headers.Authorization = authHeader(credentials);
  let payload: string | undefined;
  if (body !== undefined) {
    payload = typeof body === 'string' ? body : JSON.stringify(body);
    headers['Content-Type'] = 'application/json';
  }
  const response = await fetch(`${base}${path}`, { method, headers, body: payload });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: text === '' ? undefined : JSON.parse(text),
  };
}

function session(vhost = '/', connectionId = 'c1'): Session {
  return { user: 'guest', vhost, connectionId };
}

async function declare(name: string, args: FieldTable = { entries: [] }, vhost = '/'): Promise<void> {
  await broker.declareQueue(session(vhost), {
    queue: name,
    passive: false,
    durable: true,
    exclusive: false,
    autoDelete: false,
    arguments: args,
  });
}

/** A user with `tags` and, when `vhost` is given, full permissions there. */
async function makeUser(
  name: string,
  tags: string[],
  vhost?: string,
): Promise<{ user: string; password: string }> {
  expect((await api('PUT', `/api/users/${name}`, { password: `${name}-pw`, tags })).status).toBe(201);
  if (vhost !== undefined) {
    const path = `/api/permissions/${encodeURIComponent(vhost)}/${name}`;
    expect((await api('PUT', path, { configure: '.*', write: '.*', read: '.*' })).status).toBe(201);
  }
  return { user: name, password: `${name}-pw` };
}

describe('authentication', () => {
  it('answers 401 with a basic challenge without credentials, with wrong ones, or for an unknown user', async () => {
    for (const credentials of [
      null,
      { user: 'guest', password: 'nope' },
      { user: 'ghost', password: 'guest' },
    ]) {
      const reply = await api('GET', '/api/overview', undefined, credentials);
      expect(reply.status).toBe(401);
      expect(reply.headers.get('www-authenticate')).toBe('Basic realm="Styx Management"');
      expect((reply.body as { error: string }).error).toBe('not_authorised');
    }
    // Unknown user and wrong password read the same.
    const a = await api('GET', '/api/overview', undefined, { user: 'guest', password: 'nope' });
    const b = await api('GET', '/api/overview', undefined, { user: 'ghost', password: 'nope' });
    expect(a.body).toEqual(b.body);
  });

  it('refuses a malformed Authorization header with 401', async () => {
    for (const header of [
      'Bearer abc',
      'Basic',
      'Basic !!!',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
    ]) {
      const response = await fetch(`${base}/api/overview`, { headers: { Authorization: header } });
      expect(response.status).toBe(401);
    }
  });

  it('takes a password change and a user deletion into account on the next request', async () => {
    const bob = await makeUser('bob', ['administrator']);
    expect((await api('GET', '/api/whoami', undefined, bob)).status).toBe(200);
    expect((await api('PUT', '/api/users/bob', { password: 'new' })).status).toBe(204);
    expect((await api('GET', '/api/whoami', undefined, bob)).status).toBe(401);
    const renewed = { user: 'bob', password: 'new' };
    expect((await api('GET', '/api/whoami', undefined, renewed)).body).toEqual({
      name: 'bob',
      tags: ['administrator'],
    });
    expect((await api('DELETE', '/api/users/bob')).status).toBe(204);
    expect((await api('GET', '/api/whoami', undefined, renewed)).status).toBe(401);
  });
});

describe('requests the API cannot take', () => {
  it('answers bad JSON, non-object bodies and wrong field types with 400, never crashing', async () => {
    for (const body of ['{nope', '[1,2]', '"text"', 'null']) {
      const reply = await api('PUT', '/api/policies/%2F/p', body);
      expect(reply.status).toBe(400);
      expect((reply.body as { error: string }).error).toBe('bad_request');
    }
    const missing = await api('PUT', '/api/policies/%2F/p', { definition: { 'message-ttl': 1 } });
    expect(missing).toMatchObject({
      status: 400,
      body: { error: 'bad_request', reason: "'pattern' must be a string" },
    });
    const priority = await api('PUT', '/api/policies/%2F/p', {
      pattern: '.*',
      definition: {},
      priority: '1',
    });
    expect(priority.status).toBe(400);
    const permissions = await api('PUT', '/api/permissions/%2F/guest', {
      configure: '.*',
      write: 1,
      read: '',
    });
    expect(permissions.status).toBe(400);
    // The node is still fine.
    expect((await api('GET', '/api/overview')).status).toBe(200);
  });

  it('answers 404 for unknown paths, 405 with Allow for unknown methods, 400 for broken percent-encoding', async () => {
    expect((await api('GET', '/api/nothing')).status).toBe(404);
    expect((await api('GET', '/elsewhere')).status).toBe(404);
    const post = await api('POST', '/api/queues');
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
    expect((await api('DELETE', '/api/overview')).status).toBe(405);
    expect((await api('GET', '/api/queues/%E0%A4%A')).status).toBe(400);
  });

  it('answers 413 to a body over the bound', async () => {
    const big = JSON.stringify({
      pattern: '.*',
      definition: { 'dead-letter-exchange': 'x'.repeat(2 * 1024 * 1024) },
    });
    const reply = await api('PUT', '/api/policies/%2F/p', big);
    expect(reply.status).toBe(413);
    expect((await api('GET', '/api/policies')).body).toEqual([]);
  });
});

describe('overview and whoami', () => {
  it('reports the node and totals', async () => {
    await declare('q');
    await broker.queueActor('/', 'q')?.enqueue(message('a'), undefined);
    const reply = await api('GET', '/api/overview');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({
      product_name: 'Styx',
      node: 'mgmt-test',
      object_totals: { queues: 1, exchanges: 6, consumers: 0, connections: 0 },
      queue_totals: { messages: 1, messages_ready: 1, messages_unacknowledged: 0 },
    });
    expect((await api('GET', '/api/whoami')).body).toEqual({ name: 'guest', tags: ['administrator'] });
  });
});

describe('vhosts', () => {
  it('creates (201), re-puts (204), lists, gets and deletes (204, then 404) vhosts', async () => {
    expect((await api('PUT', '/api/vhosts/v1')).status).toBe(201);
    expect((await api('PUT', '/api/vhosts/v1', {})).status).toBe(204);
    expect(((await api('GET', '/api/vhosts')).body as { name: string }[]).map((v) => v.name)).toEqual([
      '/',
      'v1',
    ]);
    expect((await api('GET', '/api/vhosts/v1')).body).toEqual({
      name: 'v1',
      description: '',
      tags: [],
      messages: 0,
      messages_ready: 0,
      messages_unacknowledged: 0,
    });
    expect((await api('DELETE', '/api/vhosts/v1')).status).toBe(204);
    expect((await api('GET', '/api/vhosts/v1')).status).toBe(404);
    expect((await api('DELETE', '/api/vhosts/v1')).status).toBe(404);
  });

  it("deleting a vhost stops its queues' actors and drops their messages", async () => {
    await api('PUT', '/api/vhosts/v1');
    await api('PUT', '/api/permissions/v1/guest', { configure: '.*', write: '.*', read: '.*' });
    await declare('q', undefined, 'v1');
    const actor = broker.queueActor('v1', 'q');
    await actor?.enqueue(message('x'), undefined);
    expect(actor?.counts().ready).toBe(1);
    expect((await api('DELETE', '/api/vhosts/v1')).status).toBe(204);
    expect(broker.queueActor('v1', 'q')).toBeUndefined();
    await expect(actor?.enqueue(message('y'), undefined)).rejects.toThrow();
  });
});

describe('users and permissions', () => {
  it('creates users with tags as a string or an array, and never returns a password hash', async () => {
    expect(
      (await api('PUT', '/api/users/alice', { password: 'pw', tags: 'management, policymaker' })).status,
    ).toBe(201);
    expect((await api('PUT', '/api/users/carol', { password: 'pw', tags: ['monitoring'] })).status).toBe(201);
    expect((await api('PUT', '/api/users/dave', { password: 'pw' })).status).toBe(201);
    const users = await api('GET', '/api/users');
    expect(users.body).toEqual([
      { name: 'alice', tags: ['management', 'policymaker'] },
      { name: 'carol', tags: ['monitoring'] },
      { name: 'dave', tags: [] },
      { name: 'guest', tags: ['administrator'] },
    ]);
    expect(JSON.stringify(users.body)).not.toContain('scrypt');
    expect((await api('GET', '/api/users/alice')).body).toEqual({
      name: 'alice',
      tags: ['management', 'policymaker'],
    });
    // A tags-only update keeps the password; a password-only update keeps the tags.
    expect((await api('PUT', '/api/users/alice', { tags: ['administrator'] })).status).toBe(204);
    expect((await api('GET', '/api/whoami', undefined, { user: 'alice', password: 'pw' })).body).toEqual({
      name: 'alice',
      tags: ['administrator'],
    });
    expect((await api('PUT', '/api/users/alice', { password: 'pw2' })).status).toBe(204);
    expect((await api('GET', '/api/users/alice')).body).toEqual({ name: 'alice', tags: ['administrator'] });
  });

  it('refuses users without a password, with an empty one, or with a password_hash', async () => {
    expect((await api('PUT', '/api/users/erin', { tags: [] })).status).toBe(400);
    expect((await api('PUT', '/api/users/erin', { password: '' })).status).toBe(400);
    expect((await api('PUT', '/api/users/erin', { password_hash: 'abc' })).status).toBe(400);
    expect((await api('PUT', '/api/users/erin', { password: 'x', tags: 5 })).status).toBe(400);
    expect((await api('GET', '/api/users/erin')).status).toBe(404);
    expect((await api('DELETE', '/api/users/erin')).status).toBe(404);
  });

  it('sets, lists, gets and clears permissions', async () => {
    await makeUser('bob', []);
    await api('PUT', '/api/vhosts/v1');
    expect(
      (await api('PUT', '/api/permissions/v1/bob', { configure: '^bob', write: '', read: '.*' })).status,
    ).toBe(201);
    expect(
      (await api('PUT', '/api/permissions/v1/bob', { configure: '', write: '', read: '.*' })).status,
    ).toBe(204);
    const bobV1 = { user: 'bob', vhost: 'v1', configure: '', write: '', read: '.*' };
    expect((await api('GET', '/api/permissions/v1/bob')).body).toEqual(bobV1);
    expect((await api('GET', '/api/permissions')).body).toEqual([
      { user: 'guest', vhost: '/', configure: '.*', write: '.*', read: '.*' },
      bobV1,
    ]);
    expect((await api('GET', '/api/vhosts/v1/permissions')).body).toEqual([bobV1]);
    expect((await api('GET', '/api/users/bob/permissions')).body).toEqual([bobV1]);
    expect(
      (await api('PUT', '/api/permissions/v1/bob', { configure: '(', write: '', read: '' })).status,
    ).toBe(400);
    expect(
      (await api('PUT', '/api/permissions/v1/nobody', { configure: '', write: '', read: '' })).status,
    ).toBe(404);
    expect(
      (await api('PUT', '/api/permissions/nope/bob', { configure: '', write: '', read: '' })).status,
    ).toBe(404);
    expect((await api('DELETE', '/api/permissions/v1/bob')).status).toBe(204);
    expect((await api('DELETE', '/api/permissions/v1/bob')).status).toBe(404);
    expect((await api('GET', '/api/permissions/v1/bob')).status).toBe(404);
  });
});

describe('policies', () => {
  it('sets (201), replaces (204), lists, gets and clears policies, with RabbitMQ field names', async () => {
    const body = { pattern: '.*', definition: { 'dead-letter-exchange': 'my-dlx' }, 'apply-to': 'queues' };
    expect((await api('PUT', '/api/policies/%2F/DLX', body)).status).toBe(201);
    expect((await api('PUT', '/api/policies/%2F/DLX', { ...body, priority: 2 })).status).toBe(204);
    const expected = {
      vhost: '/',
      name: 'DLX',
      pattern: '.*',
      'apply-to': 'queues',
      definition: { 'dead-letter-exchange': 'my-dlx' },
      priority: 2,
    };
    expect((await api('GET', '/api/policies')).body).toEqual([expected]);
    expect((await api('GET', '/api/policies/%2F')).body).toEqual([expected]);
    expect((await api('GET', '/api/policies/%2F/DLX')).body).toEqual(expected);
    expect((await api('DELETE', '/api/policies/%2F/DLX')).status).toBe(204);
    expect((await api('DELETE', '/api/policies/%2F/DLX')).status).toBe(404);
    expect((await api('GET', '/api/policies/%2F/DLX')).status).toBe(404);
  });

  it('defaults apply-to to all and priority to 0', async () => {
    await api('PUT', '/api/policies/%2F/p', { pattern: '^x', definition: { 'message-ttl': 5 } });
    expect((await api('GET', '/api/policies/%2F/p')).body).toMatchObject({ 'apply-to': 'all', priority: 0 });
  });

  it('refuses invalid definitions with 400 and the reason', async () => {
    const unknown = await api('PUT', '/api/policies/%2F/p', {
      pattern: '.*',
      definition: { 'ha-mode': 'all' },
    });
    expect(unknown.status).toBe(400);
    expect((unknown.body as { reason: string }).reason).toContain(
      "'ha-mode' is not a recognised policy setting",
    );
    const badTtl = await api('PUT', '/api/policies/%2F/p', {
      pattern: '.*',
      definition: { 'message-ttl': 'x' },
    });
    expect(badTtl.status).toBe(400);
    expect(
      (await api('PUT', '/api/policies/%2F/p', { pattern: '(', definition: { expires: 1 } })).status,
    ).toBe(400);
    expect(
      (
        await api('PUT', '/api/policies/%2F/p', {
          pattern: '.*',
          definition: { expires: 1 },
          'apply-to': 'x',
        })
      ).status,
    ).toBe(400);
    expect(
      (await api('PUT', '/api/policies/nope/p', { pattern: '.*', definition: { expires: 1 } })).status,
    ).toBe(404);
  });

  it("changes an existing queue's effective config at once, as a command in its log, and reverts on clear", async () => {
    await declare('orders');
    await declare(
      'own-dlx',
      table({ 'x-dead-letter-exchange': { longStr: 'mine' }, 'x-message-ttl': { i32: 100 } }),
    );
    const before = (await api('GET', '/api/queues/%2F/orders')).body;
    expect(before).toMatchObject({
      policy: null,
      dead_letter_exchange: null,
      effective_policy_definition: {},
    });

    const definition = {
      'dead-letter-exchange': 'my-dlx',
      'dead-letter-routing-key': 'dead',
      'message-ttl': 50,
    };
    await api('PUT', '/api/policies/%2F/DLX', { pattern: '.*', definition, 'apply-to': 'queues' });
    // No redeclare: the queue's own state machine holds the new config.
    expect(broker.queueActor('/', 'orders')?.config()).toMatchObject({
      deadLetterExchange: 'my-dlx',
      deadLetterRoutingKey: 'dead',
      messageTtl: 50,
    });
    expect((await api('GET', '/api/queues/%2F/orders')).body).toMatchObject({
      policy: 'DLX',
      effective_policy_definition: definition,
      dead_letter_exchange: 'my-dlx',
      dead_letter_routing_key: 'dead',
      effective_config: { message_ttl: 50, dead_letter_exchange: 'my-dlx' },
    });
    // Precedence: the declared DLX wins; the smaller TTL (the queue's 100 vs 50) applies.
    expect((await api('GET', '/api/queues/%2F/own-dlx')).body).toMatchObject({
      policy: 'DLX',
      dead_letter_exchange: 'mine',
      dead_letter_routing_key: 'dead',
      effective_config: { message_ttl: 50 },
    });

    await api('DELETE', '/api/policies/%2F/DLX');
    expect(broker.queueActor('/', 'orders')?.config()).toMatchObject({
      deadLetterExchange: undefined,
      messageTtl: undefined,
    });
    expect((await api('GET', '/api/queues/%2F/own-dlx')).body).toMatchObject({
      policy: null,
      dead_letter_exchange: 'mine',
      effective_config: { message_ttl: 100 },
    });
  });

  it('starts a queue declared under a policy with the effective config', async () => {
    await api('PUT', '/api/policies/%2F/len', { pattern: '^limited', definition: { 'max-length': 3 } });
    await declare('limited.q');
    await declare('free.q');
    expect(broker.queueActor('/', 'limited.q')?.config().maxLength).toBe(3);
    expect(broker.queueActor('/', 'free.q')?.config().maxLength).toBeUndefined();
  });

  it('follows priority between matching policies', async () => {
    await declare('q');
    await api('PUT', '/api/policies/%2F/low', {
      pattern: '.*',
      definition: { 'dead-letter-exchange': 'low' },
    });
    await api('PUT', '/api/policies/%2F/high', {
      pattern: '^q$',
      priority: 5,
      definition: { 'dead-letter-exchange': 'high' },
    });
    expect((await api('GET', '/api/queues/%2F/q')).body).toMatchObject({
      policy: 'high',
      dead_letter_exchange: 'high',
    });
    await api('DELETE', '/api/policies/%2F/high');
    expect((await api('GET', '/api/queues/%2F/q')).body).toMatchObject({
      policy: 'low',
      dead_letter_exchange: 'low',
    });
  });
});

describe('queues, exchanges and bindings', () => {
  it('lists queues with counts, consumers and dead-letter totals', async () => {
    await declare('b');
    await declare('a', table({ 'x-max-length': { i32: 1 } }));
    const a = broker.queueActor('/', 'a');
    await a?.enqueue(message('one'), undefined);
    await a?.enqueue(message('two'), undefined);
    await a?.get('c1/1', false);
    const list = (await api('GET', '/api/queues')).body as { name: string }[];
    expect(list.map((q) => q.name)).toEqual(['a', 'b']);
    expect((await api('GET', '/api/queues/%2F')).body).toEqual(list);
    expect((await api('GET', '/api/queues/%2F/a')).body).toEqual({
      name: 'a',
      vhost: '/',
      durable: true,
      auto_delete: false,
      exclusive: false,
      arguments: { 'x-max-length': 1 },
      node: 'mgmt-test',
      type: 'quorum',
      replica_bodies: { missing: 0, repaired: 0, lost: 0 },
      state: 'running',
      messages: 1,
      messages_ready: 0,
      messages_unacknowledged: 1,
      message_bytes_ready: 0,
      consumers: 0,
      policy: null,
      effective_policy_definition: {},
      effective_config: {
        message_ttl: null,
        expires: null,
        max_length: 1,
        max_length_bytes: null,
        overflow: 'drop-head',
        delivery_limit: null,
        dead_letter_exchange: null,
        dead_letter_routing_key: null,
        dead_letter_strategy: 'at-least-once',
      },
      dead_letter_exchange: null,
      dead_letter_routing_key: null,
      dead_letter_strategy: 'at-least-once',
      messages_dead_letter_pending: 0,
      message_bytes_dead_letter_pending: 0,
      messages_dead_letter_blocked: 0,
      // Two published (the first then dropped by x-max-length), one got and not acked yet.
      message_stats: { publish: 2, deliver_get: 1, redeliver: 0, ack: 0 },
      // No DLX: the message dropped by x-max-length left the queue, but was not dead-lettered.
      removed: { rejected: 0, expired: 0, maxlen: 1, delivery_limit: 0 },
      dead_lettered: { rejected: 0, expired: 0, maxlen: 0, delivery_limit: 0 },
      dead_letter_dropped: {
        no_dlx: { rejected: 0, expired: 0, maxlen: 1, delivery_limit: 0 },
        cycle: { rejected: 0, expired: 0, maxlen: 0, delivery_limit: 0 },
        at_most_once: { rejected: 0, expired: 0, maxlen: 0, delivery_limit: 0 },
      },
    });
    expect((await api('GET', '/api/queues/%2F/missing')).status).toBe(404);
  });

  it('lists exchanges, the default one included, and gets one by name (amq.default for "")', async () => {
    const list = (await api('GET', '/api/exchanges/%2F')).body as { name: string }[];
    expect(list.map((x) => x.name)).toEqual([
      '',
      'amq.direct',
      'amq.fanout',
      'amq.headers',
      'amq.match',
      'amq.topic',
    ]);
    expect((await api('GET', '/api/exchanges/%2F/amq.default')).body).toEqual({
      name: '',
      vhost: '/',
      type: 'direct',
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: {},
      policy: null,
    });
    await api('PUT', '/api/policies/%2F/xp', {
      pattern: '^amq\\.t',
      definition: { expires: 9 },
      'apply-to': 'exchanges',
    });
    expect((await api('GET', '/api/exchanges/%2F/amq.topic')).body).toMatchObject({ policy: 'xp' });
    expect((await api('GET', '/api/exchanges/%2F/nope')).status).toBe(404);
  });

  it('lists bindings: the default exchange ones, then the explicit ones', async () => {
    await declare('q');
    await broker.bind(session(), 'queue', 'q', 'amq.topic', 'a.#', table({ k: { bool: true } }));
    expect((await api('GET', '/api/bindings/%2F')).body).toEqual([
      {
        source: '',
        vhost: '/',
        destination: 'q',
        destination_type: 'queue',
        routing_key: 'q',
        arguments: {},
        properties_key: 'q',
      },
      {
        source: 'amq.topic',
        vhost: '/',
        destination: 'q',
        destination_type: 'queue',
        routing_key: 'a.#',
        arguments: { k: true },
        properties_key: expect.stringMatching(/^a\.#~[A-Za-z0-9_-]{16}$/),
      },
    ]);
    expect((await api('GET', '/api/bindings')).body).toHaveLength(2);
  });
});

describe('authorization', () => {
  beforeEach(async () => {
    await api('PUT', '/api/vhosts/team');
    await api('PUT', '/api/vhosts/secret');
    await api('PUT', '/api/permissions/team/guest', { configure: '.*', write: '.*', read: '.*' });
    await api('PUT', '/api/permissions/secret/guest', { configure: '.*', write: '.*', read: '.*' });
    await declare('team-q', undefined, 'team');
    await declare('secret-q', undefined, 'secret');
  });

  it('shows a non-administrator only the vhosts it has permissions in', async () => {
    const user = await makeUser('member', ['management'], 'team');
    const vhosts = (await api('GET', '/api/vhosts', undefined, user)).body as { name: string }[];
    expect(vhosts.map((v) => v.name)).toEqual(['team']);
    const queues = (await api('GET', '/api/queues', undefined, user)).body as { name: string }[];
    expect(queues.map((q) => q.name)).toEqual(['team-q']);
    expect((await api('GET', '/api/overview', undefined, user)).body).toMatchObject({
      object_totals: { queues: 1, connections: 0 },
    });
    expect((await api('GET', '/api/queues/team/team-q', undefined, user)).status).toBe(200);
  });

  it('answers 404 for a hidden vhost exactly as for a missing one', async () => {
    const user = await makeUser('member', ['management'], 'team');
    for (const path of [
      '/api/vhosts/secret',
      '/api/queues/secret',
      '/api/queues/secret/secret-q',
      '/api/exchanges/secret',
      '/api/bindings/secret',
    ]) {
      const hidden = await api('GET', path, undefined, user);
      const missing = await api(
        'GET',
        path.replace('secret', 'ghost').replace('secret-q', 'x'),
        undefined,
        user,
      );
      expect(hidden.status).toBe(404);
      expect(missing.status).toBe(404);
      expect((hidden.body as { reason: string }).reason).toBe("no vhost 'secret'");
      expect((missing.body as { reason: string }).reason).toBe("no vhost 'ghost'");
    }
  });

  it('keeps users, vhosts and permissions to administrators (403)', async () => {
    const user = await makeUser('member', ['management', 'policymaker'], 'team');
    for (const [method, path, body] of [
      ['GET', '/api/users', undefined],
      ['GET', '/api/users/guest', undefined],
      ['PUT', '/api/users/x', { password: 'p' }],
      ['DELETE', '/api/users/guest', undefined],
      ['PUT', '/api/vhosts/new', undefined],
      ['DELETE', '/api/vhosts/team', undefined],
      ['GET', '/api/permissions', undefined],
      ['PUT', '/api/permissions/team/member', { configure: '.*', write: '.*', read: '.*' }],
    ] as const) {
      const reply = await api(method, path, body, user);
      expect(reply.status, `${method} ${path}`).toBe(403);
      expect((reply.body as { error: string }).error).toBe('forbidden');
    }
    expect((await api('GET', '/api/vhosts/new')).status).toBe(404);
  });

  it('lets policymakers set policies in their vhosts only; plain users cannot', async () => {
    const maker = await makeUser('maker', ['policymaker'], 'team');
    const plain = await makeUser('plain', [], 'team');
    const body = { pattern: '.*', definition: { 'dead-letter-exchange': 'dlx' } };
    expect((await api('PUT', '/api/policies/team/p', body, maker)).status).toBe(201);
    expect((await api('PUT', '/api/policies/secret/p', body, maker)).status).toBe(404);
    expect((await api('PUT', '/api/policies/team/q', body, plain)).status).toBe(403);
    expect((await api('DELETE', '/api/policies/team/p', undefined, plain)).status).toBe(403);
    // Reading policies is for policymakers too (RabbitMQ's rule), and users without a management
    // tag cannot use the API at all.
    expect((await api('GET', '/api/policies', undefined, plain)).status).toBe(403);
    expect((await api('GET', '/api/policies', undefined, maker)).body).toHaveLength(1);
    expect((await api('DELETE', '/api/policies/team/p', undefined, maker)).status).toBe(204);
  });

  it('loses access as soon as the permission is cleared', async () => {
    const user = await makeUser('member', ['management'], 'team');
    expect((await api('GET', '/api/queues/team', undefined, user)).status).toBe(200);
    await api('DELETE', '/api/permissions/team/member');
    expect((await api('GET', '/api/queues/team', undefined, user)).status).toBe(404);
    expect((await api('GET', '/api/vhosts', undefined, user)).body).toEqual([]);
  });
});

describe('the cluster of a node without clustering', () => {
  it('is the node alone: online, the only voter and the metadata leader', async () => {
    const self = {
      name: 'mgmt-test',
      type: 'disc',
      running: true,
      id: 'mgmt-test',
      peer_id: '',
      cluster_address: '',
      metadata_role: 'voter',
      is_metadata_leader: true,
      is_self: true,
    };
    expect(await api('GET', '/api/nodes')).toMatchObject({ status: 200, body: [self] });
    expect((await api('GET', '/api/nodes/mgmt-test')).body).toMatchObject(self);
    expect((await api('GET', '/api/cluster')).body).toMatchObject({
      self: { id: 'mgmt-test', name: 'mgmt-test' },
      metadata_leader: { id: 'mgmt-test', name: 'mgmt-test' },
      members: [self],
    });
  });

  it('refuses to join or forget with 400, saying clustering is not enabled', async () => {
    const reason = /clustering is not enabled on this node \(start it with --cluster-listen HOST:PORT\)/;
    const join = await api('POST', '/api/cluster/join', { address: '10.0.0.9:25680' });
    expect(join.status).toBe(400);
    expect((join.body as { reason: string }).reason).toMatch(reason);
    const forget = await api('DELETE', '/api/cluster/nodes/other');
    expect(forget).toMatchObject({ status: 400, body: { error: 'bad_request' } });
    expect((forget.body as { reason: string }).reason).toMatch(reason);
  });
});

describe('the cluster', () => {
  let view: FakeClusterView;
  let clustered: ManagementServer;

  beforeEach(async () => {
    view = new FakeClusterView();
    clustered = new ManagementServer({ broker, logger: silentLogger(), cluster: view });
    await clustered.start('127.0.0.1', 0);
    base = clustered.url as string;
  });

  afterEach(async () => {
    await clustered.close();
  });

  it('lists the members as RabbitMQ nodes with Styx fields, and one by name or id', async () => {
    const nodes = (await api('GET', '/api/nodes')).body as Record<string, unknown>[];
    expect(nodes.map((n) => [n.name, n.running, n.metadata_role, n.is_metadata_leader, n.is_self])).toEqual([
      ['styx-1', true, 'voter', true, true],
      ['styx-2', false, 'voter', false, false],
      ['styx-3', true, 'learner', false, false],
    ]);
    expect(nodes[1]).toMatchObject({
      name: 'styx-2',
      type: 'disc',
      running: false,
      id: 'id-2',
      peer_id: 'peer-2',
      cluster_address: '10.0.0.2:25680',
      metadata_role: 'voter',
      is_metadata_leader: false,
      is_self: false,
      // Only the answering node's own figures are known to it.
      uptime: null,
      mem_used: null,
    });
    expect(nodes[0]).toMatchObject({ os_pid: String(process.pid), mem_alarm: false });
    expect((await api('GET', '/api/nodes/id-3')).body).toMatchObject({ name: 'styx-3' });
    expect(await api('GET', '/api/nodes/styx-9')).toMatchObject({
      status: 404,
      body: { error: 'not_found', reason: "no node 'styx-9' in the cluster" },
    });
  });

  it('shows self, leader and members; the leader is null while none is known', async () => {
    const cluster = (await api('GET', '/api/cluster')).body as Record<string, unknown>;
    expect(cluster.self).toEqual({ id: 'id-1', name: 'styx-1' });
    expect(cluster.metadata_leader).toEqual({ id: 'id-1', name: 'styx-1' });
    expect((cluster.members as unknown[]).length).toBe(3);
    view.leader = undefined;
    expect((await api('GET', '/api/cluster')).body).toMatchObject({ metadata_leader: null });
  });

  it('joins through an address and forgets members, answering 204', async () => {
    expect((await api('POST', '/api/cluster/join', { address: '[fd00::7]:25680' })).status).toBe(204);
    expect(view.joined).toEqual(['[fd00::7]:25680']);
    expect((await api('DELETE', '/api/cluster/nodes/styx-2')).status).toBe(204);
    expect((await api('DELETE', '/api/cluster/nodes/id-3')).status).toBe(204);
    expect(view.forgotten).toEqual(['styx-2', 'id-3']);
  });

  it('maps refusals: unknown node 404, last member 400, no leader 503', async () => {
    expect(await api('DELETE', '/api/cluster/nodes/nope')).toMatchObject({
      status: 404,
      body: { error: 'not_found', reason: "no cluster node 'nope'" },
    });
    view.memberList = view.memberList.slice(0, 1);
    expect(await api('DELETE', '/api/cluster/nodes/styx-1')).toMatchObject({
      status: 400,
      body: { reason: "cannot forget node 'styx-1': it is the last member of the cluster" },
    });
    view.unavailable = true;
    expect(await api('POST', '/api/cluster/join', { address: 'node-b:25680' })).toMatchObject({
      status: 503,
      body: { error: 'service_unavailable', reason: 'no metadata leader is reachable' },
    });
  });

  it('refuses a join without a HOST:PORT address with 400', async () => {
    for (const [body, reason] of [
      [undefined, 'the request body must be a JSON object'],
      [{}, "'address' must be a string"],
      [{ address: 'node-b' }, "'address': 'node-b' is not HOST:PORT"],
      [{ address: 'node-b:0' }, "'address': the port of 'node-b:0' must be between 1 and 65535"],
      [{ address: '::1:25680' }, "'address': '::1:25680' is not HOST:PORT"],
    ] as const) {
      const reply = await api('POST', '/api/cluster/join', body);
      expect(reply.status).toBe(400);
      expect((reply.body as { reason: string }).reason).toContain(reason);
    }
    expect(view.joined).toEqual([]);
  });

  it('lets monitoring users read the cluster, and only administrators change it', async () => {
    const monitor = await makeUser('monitor', ['monitoring']);
    const plain = await makeUser('plain', ['management']);
    expect((await api('GET', '/api/nodes', undefined, monitor)).status).toBe(200);
    expect((await api('GET', '/api/cluster', undefined, monitor)).status).toBe(200);
    expect(await api('GET', '/api/nodes', undefined, plain)).toMatchObject({
      status: 403,
      body: { reason: 'Not administrator or monitoring user' },
    });
    expect((await api('POST', '/api/cluster/join', { address: 'b:1' }, monitor)).status).toBe(403);
    expect((await api('DELETE', '/api/cluster/nodes/styx-2', undefined, monitor)).status).toBe(403);
    expect(view.joined).toEqual([]);
    expect(view.forgotten).toEqual([]);
  });

  it('answers 405 with Allow for other methods', async () => {
    const reply = await api('GET', '/api/cluster/join');
    expect(reply.status).toBe(405);
    expect(reply.headers.get('allow')).toBe('POST');
  });
});

describe('queue replicas on a node without clustering', () => {
  it('answers every replica verb 400, saying the node is not in a cluster', async () => {
    await declare('q');
    for (const [method, path, body] of [
      ['GET', '/api/queues/%2F/q/quorum_status', undefined],
      ['POST', '/api/queues/%2F/q/members', { node: 'other' }],
      ['DELETE', '/api/queues/%2F/q/members/other', undefined],
      ['POST', '/api/queues/grow', { node: 'other', strategy: 'all' }],
      ['POST', '/api/queues/shrink', { node: 'other' }],
      ['POST', '/api/rebalance/queues', undefined],
    ] as const) {
      const reply = await api(method, path, body);
      expect(reply, `${method} ${path}`).toMatchObject({ status: 400, body: { error: 'bad_request' } });
      expect((reply.body as { reason: string }).reason).toMatch(/^this node is not in a cluster: /);
    }
  });

  it('keeps them to administrators (403 before anything else)', async () => {
    const monitor = await makeUser('monitor', ['monitoring']);
    expect(await api('POST', '/api/rebalance/queues', undefined, monitor)).toMatchObject({
      status: 403,
      body: { reason: 'Not administrator user' },
    });
  });

  it('still lists the queues of vhosts named like the verbs: grow and shrink are POST only', async () => {
    await api('PUT', '/api/vhosts/grow');
    await api('PUT', '/api/permissions/grow/guest', { configure: '.*', write: '.*', read: '.*' });
    await declare('q', { entries: [] }, 'grow');
    const list = await api('GET', '/api/queues/grow');
    expect(list.status).toBe(200);
    expect((list.body as { name: string }[]).map((q) => q.name)).toEqual(['q']);
    const put = await api('PUT', '/api/queues/grow');
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('POST, GET');
  });
});

describe('queue replicas in a cluster', () => {
  let replicas: FakeQueueReplicas;
  let clustered: ManagementServer;

  beforeEach(async () => {
    ({ server: clustered, replicas } = await startClusteredManagement(broker));
    base = clustered.url as string;
    await declare('orders');
    await declare('events');
    replicas.place('/', 'orders', ['id-1', 'id-2']);
    replicas.place('/', 'events', ['id-2', 'id-3'], 'id-3');
  });

  afterEach(async () => {
    await clustered.close();
  });

  it("shows each queue's leader, members and online members by node name, as RabbitMQ does", async () => {
    expect((await api('GET', '/api/queues/%2F/orders')).body).toMatchObject({
      node: 'mgmt-test',
      leader: 'styx-1',
      members: ['styx-1', 'styx-2'],
      online: ['styx-1'],
    });
    replicas.place('/', 'orders', ['id-1', 'id-9'], null);
    const list = (await api('GET', '/api/queues')).body as Record<string, unknown>[];
    expect(list.map((q) => [q.name, q.leader, q.members, q.online])).toEqual([
      ['events', 'styx-3', ['styx-2', 'styx-3'], ['styx-3']],
      // No leader known: null; a member id no cluster node has (forgotten) shows as itself.
      ['orders', null, ['styx-1', 'id-9'], ['styx-1']],
    ]);
  });

  it("answers quorum_status with the leader's view of each replica", async () => {
    expect(await api('GET', '/api/queues/%2F/events/quorum_status')).toEqual({
      status: 200,
      headers: expect.anything(),
      body: {
        name: 'events',
        vhost: '/',
        leader: 'styx-3',
        term: 4,
        commit_index: 42,
        members: [
          { node: 'styx-2', node_id: 'id-2', role: 'follower', match_index: 40, online: false },
          { node: 'styx-3', node_id: 'id-3', role: 'leader', match_index: 42, online: true },
        ],
      },
    });
  });

  it('maps quorum_status failures: unknown vhost or queue 404, a leader that does not answer 503', async () => {
    expect(await api('GET', '/api/queues/nope/events/quorum_status')).toMatchObject({
      status: 404,
      body: { reason: "no vhost 'nope'" },
    });
    expect(await api('GET', '/api/queues/%2F/nope/quorum_status')).toMatchObject({
      status: 404,
      body: { reason: "no queue 'nope' in vhost '/'" },
    });
    replicas.statusError = new QueueLinkTimeoutError('id-3', 5000);
    expect(await api('GET', '/api/queues/%2F/events/quorum_status')).toMatchObject({
      status: 503,
      body: {
        error: 'service_unavailable',
        reason: 'no replica of the queue answered: no answer from id-3 within 5000 ms',
      },
    });
  });

  it('refuses quorum_status of a queue that is not replicated (400) instead of inventing a status', async () => {
    await broker.declareQueue(session(), {
      queue: 'scratch',
      passive: false,
      durable: false,
      exclusive: false,
      autoDelete: false,
      arguments: { entries: [] },
    });
    replicas.place('/', 'scratch', ['id-1']);
    expect(await api('GET', '/api/queues/%2F/scratch/quorum_status')).toMatchObject({
      status: 400,
      body: {
        error: 'bad_request',
        reason:
          "queue 'scratch' in vhost '/' is not replicated: it is not durable, so it lives in memory on one node",
      },
    });
  });

  it('adds and deletes a member by node name or id, answering the members', async () => {
    expect(await api('POST', '/api/queues/%2F/orders/members', { node: 'styx-3' })).toMatchObject({
      status: 200,
      body: { name: 'orders', vhost: '/', members: ['styx-1', 'styx-2', 'styx-3'] },
    });
    expect(await api('DELETE', '/api/queues/%2F/orders/members/id-2')).toMatchObject({
      status: 200,
      body: { members: ['styx-1', 'styx-3'] },
    });
    expect(replicas.queueReplicas({ vhost: '/', name: 'orders' } as never)?.members).toEqual([
      'id-1',
      'id-3',
    ]);
  });

  it('maps member refusals: unknown node or no replica 404, a replica already there or the last one 400', async () => {
    for (const [method, path, body, status, reason] of [
      ['POST', '/api/queues/%2F/orders/members', { node: 'styx-9' }, 404, "no node 'styx-9' in the cluster"],
      [
        'POST',
        '/api/queues/%2F/orders/members',
        { node: 'styx-2' },
        400,
        "node styx-2 already holds a replica of 'orders'",
      ],
      ['POST', '/api/queues/%2F/orders/members', {}, 400, "'node' must be a string"],
      ['POST', '/api/queues/%2F/nope/members', { node: 'styx-2' }, 404, "no queue 'nope' in vhost '/'"],
      [
        'DELETE',
        '/api/queues/%2F/orders/members/styx-3',
        undefined,
        404,
        "node styx-3 holds no replica of 'orders'",
      ],
      ['DELETE', '/api/queues/%2F/orders/members/styx-9', undefined, 404, "no node 'styx-9' in the cluster"],
    ] as const) {
      expect(await api(method, path, body), `${method} ${path}`).toMatchObject({ status, body: { reason } });
    }
    await api('DELETE', '/api/queues/%2F/orders/members/styx-2');
    expect(await api('DELETE', '/api/queues/%2F/orders/members/styx-1')).toMatchObject({
      status: 400,
      body: { reason: "node styx-1 holds the last replica of 'orders'" },
    });
  });

  it('grows the selected queues onto a node, all or only the even-sized ones', async () => {
    await declare('solo');
    replicas.place('/', 'solo', ['id-2']);
    // Even: orders (2 replicas) grows onto styx-3; solo (1) does not; events has one there already.
    expect(await api('POST', '/api/queues/grow', { node: 'styx-3', strategy: 'even' })).toMatchObject({
      status: 200,
      body: { node: 'styx-3', strategy: 'even', added: 1 },
    });
    const grown = await api('POST', '/api/queues/grow', {
      node: 'id-1',
      strategy: 'all',
      vhost_pattern: '^/$',
      queue_pattern: '^(events|solo)$',
    });
    expect(grown.body).toEqual({ node: 'styx-1', strategy: 'all', added: 2 });
    expect([...replicas.placements.values()].map((p) => p.members)).toEqual([
      ['id-1', 'id-2', 'id-3'],
      ['id-2', 'id-3', 'id-1'],
      ['id-2', 'id-1'],
    ]);
  });

  it('refuses a grow without a node, with an unknown strategy or a broken pattern (400)', async () => {
    for (const [body, reason] of [
      [{ strategy: 'all' }, "'node' must be a string"],
      [{ node: 'styx-3' }, "'strategy' must be a string"],
      [{ node: 'styx-3', strategy: 'odd' }, "'strategy' must be 'all' or 'even', got 'odd'"],
      [
        { node: 'styx-3', strategy: 'all', queue_pattern: '(' },
        "'queue_pattern' is not a valid regular expression",
      ],
      [{ node: 'styx-3', strategy: 'all', vhost_pattern: 7 }, "'vhost_pattern' must be a string"],
    ] as const) {
      const reply = await api('POST', '/api/queues/grow', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect((reply.body as { reason: string }).reason).toContain(reason);
    }
    expect(await api('POST', '/api/queues/grow', { node: 'styx-9', strategy: 'all' })).toMatchObject({
      status: 404,
    });
  });

  it("shrinks a node's replicas away, keeping the queues whose last replica it holds", async () => {
    await declare('solo');
    replicas.place('/', 'solo', ['id-2']);
    expect(await api('POST', '/api/queues/shrink', { node: 'styx-2' })).toMatchObject({
      status: 200,
      body: { node: 'styx-2', removed: 2, skipped: [{ vhost: '/', name: 'solo' }] },
    });
    expect(replicas.queueReplicas({ vhost: '/', name: 'events' } as never)?.members).toEqual(['id-3']);
  });

  it('rebalances queue leaders over the online members, answering the transfers by node name', async () => {
    replicas.online = new Set(['id-1', 'id-2', 'id-3']);
    replicas.place('/', 'events', ['id-1', 'id-2'], 'id-1');
    const reply = await api('POST', '/api/rebalance/queues');
    expect(reply).toMatchObject({
      status: 200,
      body: { transfers: [{ vhost: '/', name: 'events', from: 'styx-1', to: 'styx-2' }] },
    });
    expect(replicas.transferred).toHaveLength(1);
  });

  it('keeps every verb to administrators', async () => {
    const monitor = await makeUser('monitor', ['monitoring']);
    for (const [method, path] of [
      ['GET', '/api/queues/%2F/orders/quorum_status'],
      ['POST', '/api/queues/%2F/orders/members'],
      ['DELETE', '/api/queues/%2F/orders/members/styx-2'],
      ['POST', '/api/queues/grow'],
      ['POST', '/api/queues/shrink'],
      ['POST', '/api/rebalance/queues'],
    ] as const) {
      const body = method === 'GET' ? undefined : { node: 'styx-3', strategy: 'all' };
      expect((await api(method, path, body, monitor)).status).toBe(403);
    }
    expect(replicas.queueReplicas({ vhost: '/', name: 'orders' } as never)?.members).toEqual([
      'id-1',
      'id-2',
    ]);
  });
});

describe('the server', () => {
  it('closes with keep-alive connections open', async () => {
    await new Promise<void>((resolve, reject) => {
      const req = httpRequest(
        `${base}/api/whoami`,
        { headers: { Authorization: authHeader(GUEST), Connection: 'keep-alive' } },
        (res) => {
          res.resume();
          res.on('end', resolve);
        },
      );
      req.on('error', reject);
      req.end();
    });
    await server.close();
    await expect(fetch(`${base}/api/whoami`)).rejects.toThrow();
  });
});

describe('replicas that are not whole (body repair alarms)', () => {
  it('shows a replica missing bodies in the queue view and as an overview alarm', async () => {
    await declare('orders');
    await declare('calm');
    let overview = (await api('GET', '/api/overview')).body as { alarms: unknown[] };
    expect(overview.alarms).toEqual([]);
    const calm = (await api('GET', '/api/queues/%2F/calm')).body as { replica_bodies: unknown };
    expect(calm.replica_bodies).toEqual({ missing: 0, repaired: 0, lost: 0 });

    const actor = broker.queueActor('/', 'orders');
    if (actor === undefined) throw new Error('no actor');
    actor.bodyRepairStatus = () => ({ missing: 3, repaired: 5, lost: 1 });
    overview = (await api('GET', '/api/overview')).body as { alarms: unknown[] };
    expect(overview.alarms).toEqual([
      { type: 'queue_bodies_missing', vhost: '/', queue: 'orders', missing: 3, repaired: 5, lost: 1 },
    ]);
    const orders = (await api('GET', '/api/queues/%2F/orders')).body as { replica_bodies: unknown };
    expect(orders.replica_bodies).toEqual({ missing: 3, repaired: 5, lost: 1 });
  });
});
