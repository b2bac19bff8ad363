import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, startBroker } from '../support/broker-process.ts';
import { managementApi } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';

// The cluster, part 1, across real processes on loopback: three nodes form a cluster (the first
// forms it, the others join through it), share one metadata group, route from their own copies,
// survive the metadata leader's SIGKILL, and refuse strangers and forgotten nodes.

interface Member {
  readonly id: string;
  readonly name: string;
  readonly running: boolean;
  readonly metadata_role: string;
  readonly is_metadata_leader: boolean;
}

interface ClusterNode {
  readonly name: string;
  readonly clusterPort: number;
  readonly dataDir: string;
  broker: BrokerProcess;
}

function api<T>(node: ClusterNode, path: string, init: RequestInit = {}): Promise<T> {
  return managementApi<T>(node.broker.managementUrl, path, init);
}

describe('a three-node cluster: membership and metadata', () => {
  let root: string;
  let secretFile: string;
  const nodes: ClusterNode[] = [];
  const extra: BrokerProcess[] = [];

  async function start(node: Omit<ClusterNode, 'broker'>, join: readonly number[]): Promise<ClusterNode> {
    const broker = await startBroker({
      dataDir: node.dataDir,
      management: true,
      startTimeoutMs: 60_000,
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${node.clusterPort}`,
        '--node-name',
        node.name,
        '--cluster-secret-file',
        secretFile,
        ...join.flatMap((port) => ['--join', `127.0.0.1:${port}`]),
      ],
    });
    return { ...node, broker };
  }

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'styx-cluster-'));
    secretFile = join(root, 'secret');
    await writeFile(secretFile, 'a cluster secret for this test only\n', { mode: 0o600 });
    const specs = [];
    for (let i = 1; i <= 3; i++) {
      specs.push({ name: `n${i}`, clusterPort: await freePort(), dataDir: join(root, `n${i}`) });
    }
    const [a, b, c] = specs as [
      Omit<ClusterNode, 'broker'>,
      Omit<ClusterNode, 'broker'>,
      Omit<ClusterNode, 'broker'>,
    ];
    nodes.push(await start(a, []));
    // The others join through the first, at the same time.
    nodes.push(...(await Promise.all([start(b, [a.clusterPort]), start(c, [a.clusterPort])])));
  }, 120_000);

  afterAll(async () => {
    for (const b of [...nodes.map((n) => n.broker), ...extra]) await b.kill();
    await rm(root, { recursive: true, force: true });
  });

  const node = (i: number): ClusterNode => nodes[i] as ClusterNode;

  it('forms: every node lists three members, all online, three voters, one metadata leader', async () => {
    for (const n of nodes) {
      await eventually(`${n.name} to see three online voters`, async () => {
        const members = await api<Member[]>(n, '/api/nodes');
        return (
          members.length === 3 &&
          members.every((m) => m.running && m.metadata_role === 'voter') &&
          members.filter((m) => m.is_metadata_leader).length === 1
        );
      });
    }
    const names = (await api<Member[]>(node(2), '/api/nodes')).map((m) => m.name).sort();
    expect(names).toEqual(['n1', 'n2', 'n3']);
  });

  it('what is declared on one node is visible and routes on the others', async () => {
    // An exchange, a user and a policy made on node 1...
    const conn1 = await amqp.connect(node(0).broker.url);
    const ch1 = await conn1.createChannel();
    await ch1.assertExchange('orders', 'direct', { durable: true });
    await conn1.close();
    await api(node(0), '/api/users/alice', {
      method: 'PUT',
      body: JSON.stringify({ password: 'secret', tags: '' }),
    });
    await api(node(0), '/api/permissions/%2F/alice', {
      method: 'PUT',
      body: JSON.stringify({ configure: '.*', write: '.*', read: '.*' }),
    });
    await api(node(0), '/api/policies/%2F/ttl', {
      method: 'PUT',
      body: JSON.stringify({
        pattern: '^short\\.',
        definition: { 'message-ttl': 60_000 },
        'apply-to': 'queues',
      }),
    });
    // ...are used on node 2: alice logs in, a queue there binds to the exchange and gets a message
    // routed by node 2's own copy of the metadata.
    const url2 = node(1).broker.url.replace('ws://', 'ws://alice:secret@');
    const conn2 = await amqp.connect(url2);
    const ch2 = await conn2.createConfirmChannel();
    const { queue } = await ch2.assertQueue('short.q', { durable: true });
    await ch2.bindQueue(queue, 'orders', 'new');
    ch2.publish('orders', 'new', Buffer.from('hello'));
    await ch2.waitForConfirms();
    const got = await ch2.get(queue, { noAck: true });
    expect(got !== false && got.content.toString()).toBe('hello');
    await conn2.close();
    // Node 3 lists the queue, its binding and the policy applied to it.
    await eventually('node 3 to list the queue with its policy', async () => {
      const queues = await api<{ name: string; policy: string | null }[]>(node(2), '/api/queues/%2F');
      return queues.some((q) => q.name === 'short.q' && q.policy === 'ttl');
    });
    const bindings = await api<{ source: string; destination: string }[]>(node(2), '/api/bindings/%2F');
    expect(bindings.some((b) => b.source === 'orders' && b.destination === 'short.q')).toBe(true);
  });

  it("survives the metadata leader's SIGKILL; the node restarts with its data and catches up", async () => {
    const members = await api<Member[]>(node(0), '/api/nodes');
    const leaderName = members.find((m) => m.is_metadata_leader)?.name;
    const leader = nodes.find((n) => n.name === leaderName) as ClusterNode;
    const survivors = nodes.filter((n) => n !== leader);
    await leader.broker.kill();
    const killedAt = performance.now();
    // Declares on a survivor go on once a new leader is elected.
    const survivor = survivors[0] as ClusterNode;
    await eventually(`a declare on ${survivor.name} to be answered after ${leader.name} died`, async () => {
      const conn = await amqp.connect(survivor.broker.url);
      conn.on('error', () => undefined);
      try {
        const ch = await conn.createChannel();
        await ch.assertExchange('after-failover', 'fanout', { durable: true });
        return true;
      } finally {
        await conn.close().catch(() => undefined);
      }
    }).catch((error: unknown) => {
      const logs = survivors.map((n) => `--- ${n.name}\n${n.broker.logs.slice(-20).join('\n')}`);
      throw new Error(`${String(error)}\n${logs.join('\n')}`);
    });
    const failoverMs = Math.round(performance.now() - killedAt);
    process.stdout.write(`metadata failover (leader SIGKILL -> declares answered): ${failoverMs} ms\n`);
    // The killed node restarts with its data dir and the same flags, and catches up.
    const index = nodes.indexOf(leader);
    nodes[index] = await start(leader, index === 0 ? [] : [node(0).clusterPort]);
    await eventually('the restarted node to see the exchange made while it was down', async () => {
      const exchanges = await api<{ name: string }[]>(nodes[index] as ClusterNode, '/api/exchanges/%2F');
      return exchanges.some((e) => e.name === 'after-failover');
    });
    for (const n of nodes) {
      await eventually(`${n.name} to see three online members again`, async () => {
        const list = await api<Member[]>(n, '/api/nodes');
        return list.length === 3 && list.every((m) => m.running);
      });
    }
  }, 90_000);

  it('goes on while the metadata leader is paused (SIGSTOP), and the paused leader rejoins consistent', async () => {
    const members = await api<Member[]>(node(0), '/api/nodes');
    const leader = nodes.find(
      (n) => n.name === members.find((m) => m.is_metadata_leader)?.name,
    ) as ClusterNode;
    const survivor = nodes.find((n) => n !== leader) as ClusterNode;
    const pid = leader.broker.child.pid as number;
    process.kill(pid, 'SIGSTOP');
    const pausedAt = performance.now();
    try {
      await eventually(`a declare on ${survivor.name} while ${leader.name} is paused`, async () => {
        const conn = await amqp.connect(survivor.broker.url);
        conn.on('error', () => undefined);
        try {
          const ch = await conn.createChannel();
          await ch.assertExchange('while-paused', 'direct', { durable: true });
          return true;
        } finally {
          await conn.close().catch(() => undefined);
        }
      });
      process.stdout.write(
        `metadata failover (leader SIGSTOP -> declares answered): ${Math.round(performance.now() - pausedAt)} ms\n`,
      );
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    for (const n of nodes) {
      await eventually(`${n.name} to list the exchange and one leader`, async () => {
        const exchanges = await api<{ name: string }[]>(n, '/api/exchanges/%2F');
        const list = await api<Member[]>(n, '/api/nodes');
        return (
          exchanges.some((e) => e.name === 'while-paused') &&
          list.filter((m) => m.is_metadata_leader).length === 1 &&
          list.every((m) => m.running)
        );
      });
    }
  }, 90_000);

  it('refuses a node with another secret: it never becomes a member', async () => {
    const otherSecret = join(root, 'other-secret');
    await writeFile(otherSecret, 'not the cluster secret, clearly\n', { mode: 0o600 });
    const strangerPort = await freePort();
    const stranger = await startBroker({
      dataDir: join(root, 'stranger'),
      management: true,
      // It keeps trying to join (the cluster might still be starting), so it never listens.
      startTimeoutMs: 8_000,
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${strangerPort}`,
        '--node-name',
        'stranger',
        '--cluster-secret-file',
        otherSecret,
        '--join',
        `127.0.0.1:${node(0).clusterPort}`,
      ],
    }).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
    // It cannot finish joining (so it never listens), or if it does, not as a member of this cluster.
    if (!(stranger instanceof Error)) extra.push(stranger);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const members = await api<Member[]>(node(0), '/api/nodes');
    expect(members.map((m) => m.name)).not.toContain('stranger');
  }, 90_000);

  it("refuses an empty data dir under a member's name, and a forgotten node", async () => {
    // A node that lost its data dir but kept its name is a different node: refused with a reason.
    const clone = await startBroker({
      dataDir: join(root, 'n2-reset'),
      management: true,
      startTimeoutMs: 60_000,
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${await freePort()}`,
        '--node-name',
        'n2',
        '--cluster-secret-file',
        secretFile,
        '--join',
        `127.0.0.1:${node(0).clusterPort}`,
      ],
    }).catch((error: unknown) => error);
    expect(clone).toBeInstanceOf(Error);
    expect(String(clone)).toMatch(/already a member/);

    // Forget node 3 (stopped first, as rabbitmqctl requires); it is never let back in.
    const third = node(2);
    await third.broker.stop();
    await api(node(0), `/api/cluster/nodes/${third.name}`, { method: 'DELETE' });
    for (const n of nodes.slice(0, 2)) {
      await eventually(
        `${n.name} to list two members`,
        async () => (await api<Member[]>(n, '/api/nodes')).length === 2,
      );
    }
    const again = await startBroker({
      dataDir: third.dataDir,
      management: true,
      startTimeoutMs: 60_000,
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${third.clusterPort}`,
        '--node-name',
        third.name,
        '--cluster-secret-file',
        secretFile,
        '--join',
        `127.0.0.1:${node(0).clusterPort}`,
      ],
    }).catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
    if (!(again instanceof Error)) extra.push(again);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await api<Member[]>(node(0), '/api/nodes')).map((m) => m.name).sort()).toEqual(['n1', 'n2']);
    // The two remaining nodes still make metadata changes.
    const conn = await amqp.connect(node(1).broker.url);
    const ch = await conn.createChannel();
    await ch.assertExchange('after-forget', 'topic', { durable: true });
    await conn.close();
  }, 120_000);
});
