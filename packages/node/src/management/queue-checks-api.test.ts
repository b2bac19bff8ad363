import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Session } from '../broker/broker.ts';
import { Broker } from '../broker/broker.ts';
import { silentLogger } from '../logging/logger.ts';
import { liveIdsDigest } from '../queue/replica-check.ts';
import type { StoredMessage } from '../queue/types.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { openNodeStorage } from '../storage/node-storage.ts';
import { tempDir } from '../storage/test-support/storage-fixtures.ts';
import { ManagementServer } from './management-server.ts';

const GUEST = { user: 'guest', password: 'guest' };

interface Reply {
  readonly status: number;
  readonly body: unknown;
}

let dir: ReturnType<typeof tempDir>;
let storage: NodeStorage;
let broker: Broker;
let server: ManagementServer;

async function api(
  method: string,
  path: string,
  credentials: { user: string; password: string } = GUEST,
  body?: unknown,
): Promise<Reply> {
  const headers: Record<string, string> = {
    Authorization: `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`,
  };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(`${server.url}${path}`, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? undefined : JSON.parse(text) };
}

function session(): Session {
  return { user: 'guest', vhost: '/', connectionId: 'c1' };
}

async function declare(name: string, durable = true): Promise<void> {
  await broker.declareQueue(session(), {
    queue: name,
    passive: false,
    durable,
    exclusive: false,
    autoDelete: false,
    arguments: { entries: [] },
  });
}

function message(body: string): StoredMessage {
  return { exchange: '', routingKey: 'q', properties: {}, body: Buffer.from(body), bcc: undefined };
}

/** Publish `bodies` to `queue`; the ids the queue gave them. */
async function publish(queue: string, ...bodies: string[]): Promise<number[]> {
  const actor = broker.queueActor('/', queue);
  for (const body of bodies) await actor?.enqueue(message(body), undefined);
  return [...(actor?.liveIds() ?? [])];
}

beforeEach(async () => {
  dir = tempDir('checks-api');
  storage = await openNodeStorage(dir.path);
  broker = await Broker.start({
    nodeName: 'checks-test',
    logger: silentLogger(),
    memoryBudgetBytes: 0,
    storage,
  });
  server = new ManagementServer({ broker, logger: silentLogger() });
  await server.start('127.0.0.1', 0);
});

afterEach(async () => {
  await server.close();
  await broker.shutdown();
  await storage.close();
  dir.remove();
});

describe('GET /api/checks/queues/{vhost}/{name}', () => {
  it("answers 200 with each replica's report when the queue is consistent", async () => {
    await declare('orders');
    const ids = await publish('orders', 'a', 'b');
    expect(await api('GET', '/api/checks/queues/%2F/orders')).toEqual({
      status: 200,
      body: {
        vhost: '/',
        name: 'orders',
        ok: true,
        status: 'ok',
        problems: [],
        attempts: 1,
        replicas: [
          {
            node: 'checks-test',
            node_id: 'checks-test',
            online: true,
            role: 'leader',
            // A node alone reads no Raft group of its queues: one replica, nothing to compare.
            term: null,
            applied_index: null,
            commit_index: null,
            messages: 2,
            live_ids: 2,
            digest: liveIdsDigest(ids),
            missing_bodies: 0,
            missing_body_ids: [],
            dedupe_window: 1024,
          },
        ],
      },
    });
  });

  it('answers 503 with the same body when a live message has no body on a replica', async () => {
    await declare('orders');
    const [, lost] = await publish('orders', 'a', 'b', 'c');
    const group = broker.metadataView.queue('/', 'orders')?.groupId as string;
    storage.bodyStore.delete(group, lost as number);
    const reply = await api('GET', '/api/checks/queues/%2F/orders');
    expect(reply).toMatchObject({
      status: 503,
      body: {
        ok: false,
        status: 'failed',
        problems: [
          `checks-test holds 1 live message(s) whose body is missing from its body store (first ids: ${lost})`,
        ],
        replicas: [{ node: 'checks-test', missing_bodies: 1, missing_body_ids: [lost] }],
      },
    });
  });

  it('answers bad input without harm: unknown vhost or queue 404, a queue not replicated 400, bad encoding 400', async () => {
    await declare('scratch', false);
    for (const [path, status, reason] of [
      ['/api/checks/queues/nope/orders', 404, "no vhost 'nope'"],
      ['/api/checks/queues/%2F/nope', 404, "no queue 'nope' in vhost '/'"],
      [
        '/api/checks/queues/%2F/scratch',
        400,
        "queue 'scratch' in vhost '/' is not replicated: it is not durable, so it lives in memory on one node",
      ],
      ['/api/checks/queues/%E0%A4%A/orders', 400, "malformed percent-encoding in path segment '%E0%A4%A'"],
    ] as const) {
      expect(await api('GET', path), path).toMatchObject({ status, body: { reason } });
    }
    expect((await api('POST', '/api/checks/queues/%2F/scratch', GUEST, {})).status).toBe(405);
    // Still serving.
    expect((await api('GET', '/api/overview')).status).toBe(200);
  });
});

describe('GET /api/checks/queues', () => {
  it('checks every replicated queue, leaving out those that are not, 503 when any fails', async () => {
    await declare('orders');
    await declare('events');
    await declare('scratch', false);
    const [id] = await publish('events', 'x');
    const healthy = await api('GET', '/api/checks/queues');
    expect(healthy.status).toBe(200);
    expect(healthy.body).toMatchObject({ ok: true });
    expect((healthy.body as { queues: { name: string }[] }).queues.map((q) => q.name)).toEqual([
      'events',
      'orders',
    ]);
    storage.bodyStore.delete(broker.metadataView.queue('/', 'events')?.groupId as string, id as number);
    const broken = await api('GET', '/api/checks/queues?vhost=%2F');
    expect(broken.status).toBe(503);
    expect(broken.body).toMatchObject({
      ok: false,
      status: 'failed',
      queues: [
        { vhost: '/', name: 'events', ok: false, status: 'failed' },
        { vhost: '/', name: 'orders', ok: true, problems: [] },
      ],
    });
  });

  it('answers 404 for an unknown vhost, and an empty vhost is ok', async () => {
    expect(await api('GET', '/api/checks/queues?vhost=nope')).toMatchObject({
      status: 404,
      body: { reason: "no vhost 'nope'" },
    });
    expect(await api('GET', '/api/checks/queues?vhost=%2F')).toEqual({
      status: 200,
      body: { ok: true, status: 'ok', queues: [] },
    });
  });

  it('is for administrator and monitoring users, over every vhost', async () => {
    await declare('orders');
    for (const [user, tags] of [
      ['watcher', ['monitoring']],
      ['manager', ['management']],
    ] as const) {
      expect(
        (await api('PUT', `/api/users/${user}`, GUEST, { password: 'pw', tags: [...tags] })).status,
      ).toBe(201);
    }
    const watched = await api('GET', '/api/checks/queues', { user: 'watcher', password: 'pw' });
    expect(watched).toMatchObject({ status: 200, body: { ok: true, queues: [{ name: 'orders' }] } });
    expect(
      (await api('GET', '/api/checks/queues/%2F/orders', { user: 'manager', password: 'pw' })).status,
    ).toBe(403);
  });
});

describe('checks on a node keeping its queues in memory', () => {
  it('refuses a durable queue with the reason: no data dir, nothing replicated', async () => {
    const memoryBroker = await Broker.start({
      nodeName: 'mem',
      logger: silentLogger(),
      memoryBudgetBytes: 0,
    });
    const memoryServer = new ManagementServer({ broker: memoryBroker, logger: silentLogger() });
    await memoryServer.start('127.0.0.1', 0);
    try {
      await memoryBroker.declareQueue(session(), {
        queue: 'orders',
        passive: false,
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: { entries: [] },
      });
      const auth = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
      const one = await fetch(`${memoryServer.url}/api/checks/queues/%2F/orders`, {
        headers: { Authorization: auth },
      });
      expect(one.status).toBe(400);
      expect(((await one.json()) as { reason: string }).reason).toBe(
        "queue 'orders' in vhost '/' is not replicated: this node keeps every queue in memory (it runs without a data dir)",
      );
      const all = await fetch(`${memoryServer.url}/api/checks/queues`, { headers: { Authorization: auth } });
      expect([all.status, await all.json()]).toEqual([200, { ok: true, status: 'ok', queues: [] }]);
    } finally {
      await memoryServer.close();
      await memoryBroker.shutdown();
    }
  });
});
