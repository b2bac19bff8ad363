import * as amqp from '@styx/client';
import { describe, expect, it } from 'vitest';
import type { CodedError, TrackedConnection } from './messaging-helpers.ts';
import { unique, useBroker, WAIT_MS, waitFor, withTimeout } from './messaging-helpers.ts';

// The client connections an operator sees and closes through the management API, on a real
// `styx server`: /api/connections, /api/channels, /api/consumers (RabbitMQ's shapes), closing one
// with a reason the client receives, who may see and close what, and the closes that follow the
// deletion of a user or a vhost.
const { broker, connectTracked } = useBroker({ management: true });

interface Reply {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Headers;
}

async function api(
  method: string,
  path: string,
  options: { as?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  const credentials = options.as ?? 'guest:guest';
  const response = await withTimeout(
    fetch(`${broker().managementUrl as string}${path}`, {
      method,
      headers: {
        Authorization: `Basic ${Buffer.from(credentials).toString('base64')}`,
        ...(options.body === undefined ? {} : { 'Content-Type': 'application/json' }),
        ...options.headers,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }),
    WAIT_MS,
    `${method} ${path}`,
  );
  const text = await response.text();
  return {
    status: response.status,
    body: text === '' ? undefined : JSON.parse(text),
    headers: response.headers,
  };
}

type Row = Record<string, unknown>;

async function connectionsOf(user: string, as = 'guest:guest'): Promise<Row[]> {
  const reply = await api('GET', '/api/connections', { as });
  expect(reply.status).toBe(200);
  return (reply.body as Row[]).filter((c) => c.user === user);
}

/** Connect as `user` (password `user-pw`) to `vhost`, recording the connection's errors and close. */
async function connectAs(user: string, vhost = '/'): Promise<TrackedConnection> {
  const conn = await withTimeout(
    amqp.connect(`styx://${user}:${user}-pw@127.0.0.1:${broker().port}/${encodeURIComponent(vhost)}`),
    WAIT_MS,
    `connect as ${user}`,
  );
  const errors: CodedError[] = [];
  conn.on('error', (err) => errors.push(err as CodedError));
  const closed = new Promise<Error | undefined>((resolve) => conn.once('close', (err) => resolve(err)));
  return { conn, errors, closed };
}

async function makeUser(name: string, tags: string[], vhost = '/'): Promise<void> {
  expect((await api('PUT', `/api/users/${name}`, { body: { password: `${name}-pw`, tags } })).status).toBe(
    201,
  );
  const all = { configure: '.*', write: '.*', read: '.*' };
  const path = `/api/permissions/${encodeURIComponent(vhost)}/${name}`;
  expect((await api('PUT', path, { body: all })).status).toBe(201);
}

describe('listing connections, channels and consumers', () => {
  it('shows an SDK connection with its channel and consumer, in RabbitMQ shapes', async () => {
    const { conn } = await connectTracked();
    const ch = await conn.createChannel();
    await ch.prefetch(7);
    const { queue } = await ch.assertQueue(unique('q.conns'), { durable: false });
    const { consumerTag } = await ch.consume(queue, () => {});
    const confirm = await conn.createConfirmChannel();
    void confirm;

    const connections = await connectionsOf('guest');
    const mine = connections.find((c) => c.styx_connection_id === conn.connectionName) as Row;
    expect(mine).toMatchObject({
      node: expect.any(String),
      user: 'guest',
      vhost: '/',
      peer_host: '127.0.0.1',
      host: '127.0.0.1',
      port: broker().port,
      state: 'running',
      channels: 2,
      protocol: expect.stringContaining('Styx WebSocket'),
      client_properties: expect.objectContaining({ product: expect.any(String) }),
    });
    expect(mine.name).toBe(`127.0.0.1:${mine.peer_port as number} -> 127.0.0.1:${broker().port}`);
    expect(mine.connected_at).toBeGreaterThan(Date.now() - 60_000);
    expect(mine.recv_oct).toBeGreaterThan(0);
    expect(mine.frame_max).toBeGreaterThan(0);

    const name = mine.name as string;
    const one = await api('GET', `/api/connections/${encodeURIComponent(name)}`);
    expect(one).toMatchObject({ status: 200, body: { name, user: 'guest' } });

    const channels = (await api('GET', `/api/connections/${encodeURIComponent(name)}/channels`))
      .body as Row[];
    expect(channels.map((c) => c.number)).toEqual([1, 2]);
    expect(channels[0]).toMatchObject({
      name: `${name} (1)`,
      connection_details: { name, peer_host: '127.0.0.1', peer_port: mine.peer_port },
      consumer_count: 1,
      prefetch_count: 7,
      confirm: false,
      messages_unacknowledged: 0,
      state: 'running',
    });
    expect(channels[1]).toMatchObject({ confirm: true, consumer_count: 0 });
    const all = (await api('GET', '/api/channels')).body as Row[];
    expect(all.filter((c) => (c.connection_details as Row).name === name)).toHaveLength(2);
    const byName = await api('GET', `/api/channels/${encodeURIComponent(`${name} (1)`)}`);
    expect(byName).toMatchObject({ status: 200, body: { number: 1 } });
    expect((await api('GET', `/api/channels/${encodeURIComponent(`${name} (9)`)}`)).status).toBe(404);
    const inVhost = (await api('GET', '/api/vhosts/%2F/channels')).body as Row[];
    expect(inVhost.some((c) => c.name === `${name} (1)`)).toBe(true);

    const consumers = (await api('GET', '/api/consumers/%2F')).body as Row[];
    expect(consumers.find((c) => c.consumer_tag === consumerTag)).toMatchObject({
      queue: { name: queue, vhost: '/' },
      channel_details: { name: `${name} (1)`, number: 1, connection_name: name },
      ack_required: true,
      prefetch_count: 7,
      exclusive: false,
      arguments: {},
    });

    // Paged as /api/queues.
    const page = await api('GET', '/api/connections?page=1&page_size=1&sort=name');
    expect(page.body).toMatchObject({ page: 1, page_size: 1, item_count: 1, unanswered_nodes: [] });
    const vhostList = (await api('GET', '/api/vhosts/%2F/connections')).body as Row[];
    expect(vhostList.some((c) => c.name === name)).toBe(true);
  });

  it('answers 404 for an unknown connection name', async () => {
    const reply = await api('GET', '/api/connections/no%20such');
    expect(reply).toMatchObject({ status: 404, body: { reason: "no connection 'no such'" } });
    const close = await api('DELETE', '/api/connections/no%20such');
    expect(close.status).toBe(404);
  });
});

describe('closing a connection', () => {
  it('closes with 320 CONNECTION_FORCED and the X-Reason text, which the client receives', async () => {
    const tracked = await connectTracked();
    const [mine] = (await connectionsOf('guest')).filter(
      (c) => c.styx_connection_id === tracked.conn.connectionName,
    );
    const name = (mine as Row).name as string;
    const reply = await api('DELETE', `/api/connections/${encodeURIComponent(name)}`, {
      headers: { 'X-Reason': 'maintenance window' },
    });
    expect(reply.status).toBe(204);
    const closed = (await withTimeout(tracked.closed, WAIT_MS, 'client close')) as CodedError;
    expect(closed.code).toBe(320);
    expect(closed.message).toContain('maintenance window');
    await waitFor(
      async () => (await api('GET', `/api/connections/${encodeURIComponent(name)}`)).status === 404,
      'the closed connection to leave the list',
    );
  });
});

describe('who sees and closes what', () => {
  it('a management user sees only its own connections and cannot close others (403)', async () => {
    const mgmt = unique('mgmt');
    const mon = unique('mon');
    await makeUser(mgmt, ['management']);
    await makeUser(mon, ['monitoring']);
    const guestConn = await connectTracked();
    const own = await connectAs(mgmt);
    try {
      const seen = (await api('GET', '/api/connections', { as: `${mgmt}:${mgmt}-pw` })).body as Row[];
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((c) => c.user === mgmt)).toBe(true);
      const guests = await connectionsOf('guest');
      const guestName = (guests.find((c) => c.styx_connection_id === guestConn.conn.connectionName) as Row)
        .name as string;
      const path = `/api/connections/${encodeURIComponent(guestName)}`;
      expect((await api('GET', path, { as: `${mgmt}:${mgmt}-pw` })).status).toBe(403);
      const refused = await api('DELETE', path, { as: `${mgmt}:${mgmt}-pw` });
      expect(refused.status).toBe(403);
      // Monitoring sees everyone's, but closing another's needs administrator.
      expect((await api('GET', path, { as: `${mon}:${mon}-pw` })).status).toBe(200);
      expect((await api('DELETE', path, { as: `${mon}:${mon}-pw` })).status).toBe(403);
      expect(guestConn.errors).toEqual([]);
      // Its own it may close.
      const ownName = (seen[0] as Row).name as string;
      const done = await api('DELETE', `/api/connections/${encodeURIComponent(ownName)}`, {
        as: `${mgmt}:${mgmt}-pw`,
      });
      expect(done.status).toBe(204);
      expect(((await withTimeout(own.closed, WAIT_MS, 'own close')) as CodedError).code).toBe(320);
    } finally {
      await own.conn.close().catch(() => {});
    }
  });
});

describe('deleting a user or a vhost', () => {
  it("closes that user's connections with 320", async () => {
    const user = unique('doomed');
    await makeUser(user, []);
    const tracked = await connectAs(user);
    expect((await api('DELETE', `/api/users/${user}`)).status).toBe(204);
    const closed = (await withTimeout(tracked.closed, WAIT_MS, 'close after user deletion')) as CodedError;
    expect(closed.code).toBe(320);
    expect(closed.message).toContain('deleted');
  });

  it("closes that vhost's connections with 320", async () => {
    const vhost = unique('vh');
    expect((await api('PUT', `/api/vhosts/${vhost}`)).status).toBe(201);
    const user = unique('vuser');
    await makeUser(user, [], vhost);
    const inVhost = await connectAs(user, vhost);
    const elsewhere = await connectTracked();
    expect((await api('DELETE', `/api/vhosts/${vhost}`)).status).toBe(204);
    const closed = (await withTimeout(inVhost.closed, WAIT_MS, 'close after vhost deletion')) as CodedError;
    expect(closed.code).toBe(320);
    expect(closed.message).toContain(`vhost '${vhost}' deleted`);
    // A connection to another vhost stays open.
    const ch = await elsewhere.conn.createChannel();
    await ch.close();
    expect(elsewhere.errors).toEqual([]);
  });
});
