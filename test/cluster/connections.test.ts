// Client connections across three real `styx server` nodes (issue 26, item 5): every node lists
// every node's connections, channels and consumers; a connection held by another node is closed
// from the node asked, and its client receives 320 CONNECTION_FORCED with the operator's reason;
// deleting a user closes its connections on every node; a member that does not answer (paused) is
// named and the list still comes back with the others' connections.
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managementApi, TestCluster } from '../support/cluster-processes.ts';
import { ctl } from '../support/ctl-process.ts';
import { eventually } from '../support/eventually.ts';

type Row = Record<string, unknown>;
type Connection = Awaited<ReturnType<typeof amqp.connect>>;

interface Tracked {
  readonly conn: Connection;
  readonly closed: Promise<(Error & { code?: number }) | undefined>;
}

describe('connections of a three-node cluster, from any node', () => {
  let cluster: TestCluster;
  const open: Connection[] = [];

  /** A plain (not recovering) client of node `name`, as `user`. */
  async function connect(name: string, user = 'guest', password = 'guest'): Promise<Tracked> {
    const conn = await amqp.connect(`ws://${user}:${password}@127.0.0.1:${cluster.node(name).port}`);
    conn.on('error', () => undefined);
    open.push(conn);
    const closed = new Promise<(Error & { code?: number }) | undefined>((resolve) =>
      conn.once('close', (err) => resolve(err as (Error & { code?: number }) | undefined)),
    );
    return { conn, closed };
  }

  const byId = (rows: readonly Row[], conn: Connection): Row | undefined =>
    rows.find((c) => c.styx_connection_id === conn.connectionName);

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
  }, 180_000);

  afterAll(async () => {
    for (const conn of open) await conn.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('lists the connections, channels and consumers of every node from one node', async () => {
    const clients = { n1: await connect('n1'), n2: await connect('n2'), n3: await connect('n3') };
    const ch = await clients.n3.conn.createChannel();
    await ch.assertQueue('cluster-conns', { durable: true });
    const { consumerTag } = await ch.consume('cluster-conns', () => {});

    for (const via of ['n1', 'n2']) {
      const rows = await managementApi<Row[]>(cluster.node(via).broker.managementUrl, '/api/connections');
      for (const [node, client] of Object.entries(clients)) {
        expect(byId(rows, client.conn), `${node}'s client as ${via} lists it`).toMatchObject({
          node,
          user: 'guest',
          port: cluster.node(node).port,
        });
      }
    }
    const channels = await cluster.api<Row[]>('n1', '/api/channels');
    const n3Name = byId(await cluster.api<Row[]>('n1', '/api/connections'), clients.n3.conn)?.name;
    expect(channels.find((c) => (c.connection_details as Row).name === n3Name)).toMatchObject({
      node: 'n3',
      number: 1,
      consumer_count: 1,
    });
    const consumers = await cluster.api<Row[]>('n1', '/api/consumers');
    expect(consumers.find((c) => c.consumer_tag === consumerTag)).toMatchObject({
      queue: { name: 'cluster-conns', vhost: '/' },
      channel_details: { node: 'n3', connection_name: n3Name },
    });
    const listed = await ctl(cluster, 'n2', 'list_connections', '-s', 'node', 'name');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(`n3\t${n3Name as string}\n`);
  });

  it("closes a connection held by another node; its client receives the operator's reason", async () => {
    const client = await connect('n3');
    const rows = await cluster.api<Row[]>('n1', '/api/connections');
    const name = byId(rows, client.conn)?.name as string;
    const run = await ctl(cluster, 'n1', 'close_connection', name, 'moving you to another node');
    expect(run.code).toBe(0);
    const closed = await client.closed;
    expect(closed?.code).toBe(320);
    expect(closed?.message).toContain('moving you to another node');
    const again = await ctl(cluster, 'n2', 'close_connection', name, 'again');
    expect(again).toMatchObject({ code: 1, stderr: `styx ctl: Error: no connection '${name}'\n` });
  });

  it("deleting a user closes that user's connections on every node", async () => {
    await cluster.api('n1', '/api/users/leaving', {
      method: 'PUT',
      body: JSON.stringify({ password: 'leaving-pw', tags: [] }),
    });
    await cluster.api('n1', '/api/permissions/%2F/leaving', {
      method: 'PUT',
      body: JSON.stringify({ configure: '.*', write: '.*', read: '.*' }),
    });
    // The user is replicated to every node before it can log in there.
    const clients: Tracked[] = [];
    for (const node of ['n2', 'n3']) {
      await eventually(`leaving to log in on ${node}`, async () => {
        try {
          clients.push(await connect(node, 'leaving', 'leaving-pw'));
          return true;
        } catch {
          return false;
        }
      });
    }
    await cluster.api('n1', '/api/users/leaving', { method: 'DELETE' });
    for (const client of clients) {
      const closed = await client.closed;
      expect(closed?.code).toBe(320);
      expect(closed?.message).toContain("user 'leaving' deleted");
    }
  });

  it('names a member that does not answer and still lists the others', async () => {
    const client = await connect('n2');
    cluster.pause('n3');
    try {
      const response = await fetch(`${cluster.node('n1').broker.managementUrl}/api/connections`, {
        headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
        signal: AbortSignal.timeout(15_000),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('x-styx-unanswered-nodes')).toBe('n3');
      expect(byId((await response.json()) as Row[], client.conn)).toMatchObject({ node: 'n2' });
      const listed = await ctl(cluster, 'n1', 'list_connections', '-q');
      expect(listed.code).toBe(0);
      expect(listed.stderr).toContain('nodes that did not answer (their clients are not listed): n3');
    } finally {
      cluster.resume('n3');
    }
  });
});
