import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../queue/types.ts';
import type { Credentials } from './test-support/management-harness.ts';
import { ALL, ManagementHarness } from './test-support/management-harness.ts';

let h: ManagementHarness;

beforeEach(async () => {
  h = await ManagementHarness.start();
});

afterEach(async () => {
  await h.stop();
});

function message(body: string): StoredMessage {
  return { exchange: '', routingKey: 'q', properties: {}, body: Buffer.from(body), bcc: undefined };
}

interface BindingJson {
  source: string;
  destination: string;
  routing_key: string;
  arguments: Record<string, unknown>;
  properties_key: string;
}

describe('exchanges', () => {
  it('declares (201), redeclares (204), shows and deletes (204, then 404) an exchange', async () => {
    const body = {
      type: 'topic',
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: { 'alternate-exchange': 'ae' },
    };
    expect((await h.api('PUT', '/api/exchanges/%2F/orders', body)).status).toBe(201);
    expect((await h.api('PUT', '/api/exchanges/%2F/orders', body)).status).toBe(204);
    expect((await h.api('GET', '/api/exchanges/%2F/orders')).body).toMatchObject({
      name: 'orders',
      type: 'topic',
      durable: true,
      arguments: { 'alternate-exchange': 'ae' },
    });
    expect((await h.api('DELETE', '/api/exchanges/%2F/orders')).status).toBe(204);
    expect((await h.api('DELETE', '/api/exchanges/%2F/orders')).status).toBe(404);
    expect((await h.api('GET', '/api/exchanges/%2F/orders')).status).toBe(404);
  });

  it('defaults durable to true and auto_delete and internal to false, as RabbitMQ does', async () => {
    expect((await h.api('PUT', '/api/exchanges/%2F/x', { type: 'fanout' })).status).toBe(201);
    expect((await h.api('GET', '/api/exchanges/%2F/x')).body).toMatchObject({
      durable: true,
      auto_delete: false,
      internal: false,
      arguments: {},
    });
  });

  it('refuses bad declares with 400 and the reason', async () => {
    await h.api('PUT', '/api/exchanges/%2F/x', { type: 'direct' });
    for (const [body, reason] of [
      [{ type: 'fanout' }, /inequivalent arg 'type'/],
      [{ type: 'x-delayed-message' }, /x-delayed-message/],
      [{}, /'type' must be a string/],
      [{ type: 'direct', durable: 'yes' }, /'durable' must be true or false/],
      [{ type: 'direct', arguments: [1] }, /'arguments' must be a JSON object/],
      [{ type: 'direct', colour: 'red' }, /unknown field 'colour'/],
      ['{"type": ', /not valid JSON/],
    ] as const) {
      const name = typeof body === 'object' && body.type === 'fanout' ? 'x' : 'y';
      const reply = await h.api('PUT', `/api/exchanges/%2F/${name}`, body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect((reply.body as { reason: string }).reason).toMatch(reason);
    }
    expect((await h.api('GET', '/api/exchanges/%2F/y')).status).toBe(404);
  });

  it('keeps the default and amq.* exchanges (403) and honours if-unused', async () => {
    expect((await h.api('DELETE', '/api/exchanges/%2F/amq.direct')).status).toBe(403);
    expect((await h.api('PUT', '/api/exchanges/%2F/amq.custom', { type: 'direct' })).status).toBe(403);
    await h.api('PUT', '/api/exchanges/%2F/x', { type: 'direct' });
    await h.api('PUT', '/api/queues/%2F/q', {});
    expect((await h.api('POST', '/api/bindings/%2F/e/x/q/q', { routing_key: 'k' })).status).toBe(201);
    const used = await h.api('DELETE', '/api/exchanges/%2F/x?if-unused=true');
    expect(used.status).toBe(400);
    expect((await h.api('DELETE', '/api/exchanges/%2F/x?if-unused=maybe')).status).toBe(400);
    expect((await h.api('DELETE', '/api/exchanges/%2F/x?if-unused=false')).status).toBe(204);
  });
});

describe('queues', () => {
  it('declares (201), redeclares (204), refuses an inequivalent one (400) and deletes', async () => {
    const body = { durable: true, arguments: { 'x-message-ttl': 5000, 'x-dead-letter-exchange': 'dlx' } };
    expect((await h.api('PUT', '/api/queues/%2F/work', body)).status).toBe(201);
    expect((await h.api('PUT', '/api/queues/%2F/work', body)).status).toBe(204);
    const q = (await h.api('GET', '/api/queues/%2F/work')).body;
    expect(q).toMatchObject({ name: 'work', durable: true, state: 'running', dead_letter_exchange: 'dlx' });
    expect(q).toMatchObject({ effective_config: { message_ttl: 5000 } });
    const changed = await h.api('PUT', '/api/queues/%2F/work', {
      arguments: { ...body.arguments, 'x-message-ttl': 1 },
    });
    expect(changed.status).toBe(400);
    expect((changed.body as { reason: string }).reason).toMatch(/inequivalent arg 'x-message-ttl'/);
    expect((await h.api('DELETE', '/api/queues/%2F/work')).status).toBe(204);
    expect((await h.api('DELETE', '/api/queues/%2F/work')).status).toBe(404);
    expect(h.broker.queueActor('/', 'work')).toBeUndefined();
  });

  it('refuses bad queue arguments and fields with 400', async () => {
    for (const [body, reason] of [
      [{ arguments: { 'x-message-ttl': 'soon' } }, /x-message-ttl/],
      [{ arguments: { 'x-queue-type': 'stream' } }, /stream/],
      [{ exclusive: true }, /unknown field 'exclusive'/],
      [{ auto_delete: 1 }, /'auto_delete' must be true or false/],
      [[], /must be a JSON object/],
    ] as const) {
      const reply = await h.api('PUT', '/api/queues/%2F/bad', body);
      expect(reply.status, JSON.stringify(body)).toBe(400);
      expect((reply.body as { reason: string }).reason).toMatch(reason);
    }
    expect((await h.api('GET', '/api/queues/%2F/bad')).status).toBe(404);
  });

  it('purges a queue (DELETE .../contents) and honours if-empty', async () => {
    await h.api('PUT', '/api/queues/%2F/q', {});
    const actor = h.broker.queueActor('/', 'q');
    await actor?.enqueue(message('a'), undefined);
    await actor?.enqueue(message('b'), undefined);
    expect((await h.api('DELETE', '/api/queues/%2F/q?if-empty=true')).status).toBe(400);
    expect((await h.api('DELETE', '/api/queues/%2F/q/contents')).status).toBe(204);
    expect((await h.api('GET', '/api/queues/%2F/q')).body).toMatchObject({ messages: 0 });
    expect((await h.api('DELETE', '/api/queues/%2F/nope/contents')).status).toBe(404);
    expect((await h.api('DELETE', '/api/queues/%2F/q?if-empty=true')).status).toBe(204);
  });
});

describe("RabbitMQ clients' bodies", () => {
  it('takes what rabbitmqadmin sends: booleans as strings, the name, vhost and ends repeated', async () => {
    const exchange = {
      name: 'x',
      vhost: '/',
      type: 'direct',
      durable: 'true',
      auto_delete: 'false',
      internal: 'false',
      arguments: {},
    };
    expect((await h.api('PUT', '/api/exchanges/%2F/x', exchange)).status).toBe(201);
    const queue = {
      name: 'q',
      vhost: '/',
      durable: 'false',
      auto_delete: 'false',
      arguments: {},
      node: null,
      type: null,
    };
    expect((await h.api('PUT', '/api/queues/%2F/q', queue)).status).toBe(201);
    expect((await h.api('GET', '/api/queues/%2F/q')).body).toMatchObject({ durable: false });
    const binding = {
      vhost: '/',
      source: 'x',
      destination: 'q',
      destination_type: 'queue',
      routing_key: 'k',
      arguments: {},
      properties_key: '',
    };
    expect((await h.api('POST', '/api/bindings/%2F/e/x/q/q', binding)).status).toBe(201);
    expect((await h.api('PUT', '/api/queues/%2F/q2', { durable: 'yes' })).status).toBe(400);
  });
});

describe('bindings', () => {
  beforeEach(async () => {
    await h.api('PUT', '/api/exchanges/%2F/orders', { type: 'topic' });
    await h.api('PUT', '/api/exchanges/%2F/audit', { type: 'headers' });
    await h.api('PUT', '/api/queues/%2F/work', {});
  });

  it('binds, lists between, gets and deletes by properties_key', async () => {
    const path = '/api/bindings/%2F/e/orders/q/work';
    const made = await fetch(`${h.server.url as string}${path}`, {
      method: 'POST',
      headers: {
        Authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ routing_key: 'orders.~new%' }),
    });
    expect(made.status).toBe(201);
    // Relative to the URL posted to, as RabbitMQ answers.
    expect(made.headers.get('location')).toBe(`work/${encodeURIComponent('orders.%7Enew%25')}`);
    expect((await h.api('POST', path, { routing_key: 'orders.#', arguments: { n: 1 } })).status).toBe(201);
    const listed = (await h.api('GET', path)).body as BindingJson[];
    expect(listed.map((b) => b.routing_key)).toEqual(['orders.~new%', 'orders.#']);
    expect(listed[0]?.properties_key).toBe('orders.%7Enew%25');
    for (const b of listed) {
      const one = await h.api('GET', `${path}/${encodeURIComponent(b.properties_key)}`);
      expect(one).toMatchObject({
        status: 200,
        body: { routing_key: b.routing_key, arguments: b.arguments },
      });
    }
    const withArgs = listed[1] as BindingJson;
    expect((await h.api('DELETE', `${path}/${encodeURIComponent(withArgs.properties_key)}`)).status).toBe(
      204,
    );
    expect((await h.api('GET', `${path}/${encodeURIComponent(withArgs.properties_key)}`)).status).toBe(404);
    expect(((await h.api('GET', path)).body as BindingJson[]).map((b) => b.routing_key)).toEqual([
      'orders.~new%',
    ]);
    // The same routing key with other arguments is another binding.
    expect((await h.api('GET', `${path}/${encodeURIComponent('orders.#~AAAAAAAAAAAAAAAA')}`)).status).toBe(
      404,
    );
  });

  it('binds exchange to exchange and lists each side', async () => {
    const args = { 'x-match': 'any', region: 'eu' };
    expect((await h.api('POST', '/api/bindings/%2F/e/orders/e/audit', { routing_key: '#' })).status).toBe(
      201,
    );
    expect((await h.api('POST', '/api/bindings/%2F/e/audit/q/work', { arguments: args })).status).toBe(201);
    const source = (await h.api('GET', '/api/exchanges/%2F/orders/bindings/source')).body as BindingJson[];
    expect(source).toMatchObject([{ source: 'orders', destination: 'audit', destination_type: 'exchange' }]);
    const destination = (await h.api('GET', '/api/exchanges/%2F/audit/bindings/destination')).body;
    expect(destination).toEqual(source);
    const ofQueue = (await h.api('GET', '/api/queues/%2F/work/bindings')).body as BindingJson[];
    expect(ofQueue).toMatchObject([
      { source: '', routing_key: 'work', properties_key: 'work' },
      { source: 'audit', arguments: args },
    ]);
    const fromDefault = (await h.api('GET', '/api/exchanges/%2F/amq.default/bindings/source')).body;
    expect(fromDefault).toMatchObject([{ source: '', destination: 'work' }]);
    expect((await h.api('GET', '/api/bindings/%2F/e/amq.default/q/work/work')).status).toBe(200);
  });

  it('refuses bad bindings: missing ends 404, the default exchange 403, bad fields 400', async () => {
    expect((await h.api('POST', '/api/bindings/%2F/e/nope/q/work', {})).status).toBe(404);
    expect((await h.api('POST', '/api/bindings/%2F/e/orders/q/nope', {})).status).toBe(404);
    expect((await h.api('POST', '/api/bindings/%2F/e/amq.default/q/work', { routing_key: 'x' })).status).toBe(
      403,
    );
    expect((await h.api('DELETE', '/api/bindings/%2F/e/amq.default/q/work/work')).status).toBe(403);
    const headers = await h.api('POST', '/api/bindings/%2F/e/audit/q/work', {
      arguments: { 'x-match': 'some' },
    });
    expect(headers.status).toBe(400);
    for (const body of [{ routing_key: 5 }, { key: 'x' }, { arguments: 'a=b' }]) {
      expect(
        (await h.api('POST', '/api/bindings/%2F/e/orders/q/work', body)).status,
        JSON.stringify(body),
      ).toBe(400);
    }
    expect((await h.api('DELETE', '/api/bindings/%2F/e/orders/q/work/~')).status).toBe(404);
    expect((await h.api('GET', '/api/bindings/%2F/e/orders/x/work')).status).toBe(404);
  });
});

describe('authorization of topology changes', () => {
  beforeEach(async () => {
    await h.api('PUT', '/api/vhosts/team');
    await h.api('PUT', '/api/permissions/team/guest', ALL);
    await h.api('PUT', '/api/exchanges/team/orders', { type: 'direct' });
    await h.api('PUT', '/api/queues/team/app.q', {});
  });

  it('needs configure to declare or delete, write and read to bind, read to purge (as AMQP)', async () => {
    const narrow = await h.makeUser('narrow', ['management'], {
      team: { configure: '^app\\.', write: '^app\\.', read: '^orders$' },
    });
    const as = (method: string, path: string, body?: unknown) => h.api(method, path, body, narrow);
    expect((await as('PUT', '/api/queues/team/app.new', {})).status).toBe(201);
    expect((await as('PUT', '/api/queues/team/other', {})).status).toBe(403);
    expect((await as('PUT', '/api/exchanges/team/mine', { type: 'fanout' })).status).toBe(403);
    expect((await as('POST', '/api/bindings/team/e/orders/q/app.q', { routing_key: 'k' })).status).toBe(201);
    // Reading app.q is not allowed: no purge.
    expect((await as('DELETE', '/api/queues/team/app.q/contents')).status).toBe(403);
    expect((await as('DELETE', '/api/exchanges/team/orders')).status).toBe(403);
    expect((await as('DELETE', '/api/queues/team/app.new')).status).toBe(204);
  });

  it('hides other vhosts (404) and refuses users without a management tag anything (403)', async () => {
    const member = await h.makeUser('member', ['management'], { '/': ALL });
    expect((await h.api('PUT', '/api/queues/team/q2', {}, member)).status).toBe(404);
    expect((await h.api('GET', '/api/queues/team/app.q/bindings', undefined, member)).status).toBe(404);
    const amqpOnly = await h.makeUser('amqp-only', [], { team: ALL });
    for (const [method, path] of [
      ['GET', '/api/overview'],
      ['GET', '/api/queues/team'],
      ['PUT', '/api/queues/team/q3'],
      ['GET', '/api/whoami'],
    ] as const) {
      const reply = await h.api(method, path, method === 'PUT' ? {} : undefined, amqpOnly);
      expect(reply.status, `${method} ${path}`).toBe(403);
    }
    expect((await h.api('GET', '/api/queues/team/q3')).status).toBe(404);
  });

  it('needs the permissions from administrators too, and gives monitoring users no writes', async () => {
    const admin = await h.makeUser('admin2', ['administrator']);
    expect((await h.api('PUT', '/api/queues/team/q4', {}, admin)).status).toBe(403);
    const monitor: Credentials = await h.makeUser('monitor', ['monitoring']);
    // Monitoring users see every vhost, read only.
    expect((await h.api('GET', '/api/queues/team/app.q', undefined, monitor)).status).toBe(200);
    expect((await h.api('GET', '/api/queues/team/app.q/bindings', undefined, monitor)).status).toBe(200);
    for (const [method, path] of [
      ['PUT', '/api/queues/team/q5'],
      ['DELETE', '/api/queues/team/app.q'],
      ['DELETE', '/api/queues/team/app.q/contents'],
      ['PUT', '/api/exchanges/team/x5'],
      ['POST', '/api/bindings/team/e/orders/q/app.q'],
    ] as const) {
      const body = path.includes('exchanges') ? { type: 'direct' } : {};
      expect((await h.api(method, path, method === 'DELETE' ? undefined : body, monitor)).status, path).toBe(
        403,
      );
    }
    expect((await h.api('GET', '/api/queues/team/app.q')).status).toBe(200);
  });
});

describe('nodes', () => {
  it("gives RabbitMQ's figures of the answering node", async () => {
    const [self] = (await h.api('GET', '/api/nodes')).body as Record<string, unknown>[];
    expect(self).toMatchObject({
      name: 'mgmt-test',
      running: true,
      mem_alarm: false,
      mem_limit: 0,
      disk_free_alarm: false,
      os_pid: String(process.pid),
      rates_mode: 'none',
      partitions: [],
    });
    expect(self?.uptime).toBeGreaterThan(0);
    expect(self?.mem_used).toBeGreaterThan(1024 * 1024);
    expect(self?.processors).toBeGreaterThan(0);
    expect(self?.being_drained).toBe(false);
    // Maintenance mode is in the metadata: shown as RabbitMQ's being_drained.
    const member = {
      type: 'addClusterNode',
      id: 'mgmt-test',
      peerId: 'p1',
      name: 'mgmt-test',
      address: '127.0.0.1:1',
    } as const;
    expect((await h.broker.manage(member)).type).toBe('ok');
    expect(
      (await h.broker.manage({ type: 'setNodeMaintenance', node: 'mgmt-test', drained: true })).type,
    ).toBe('ok');
    expect((await h.api('GET', '/api/nodes/mgmt-test')).body).toMatchObject({ being_drained: true });
    expect((self?.exchange_types as { name: string }[]).map((t) => t.name).sort()).toEqual([
      'direct',
      'fanout',
      'headers',
      'topic',
    ]);
  });
});
