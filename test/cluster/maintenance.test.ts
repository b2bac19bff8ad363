// Maintenance mode and the rolling-restart checks across real processes (issue 20, item 3): three
// `styx server` nodes; n1 declares the queues, so it leads them (and, the first node, the metadata
// group). `styx ctl drain` against n1 moves every leadership off it, closes its client connection
// with a reason naming maintenance mode (the SDK's recovery reconnects to another node and keeps
// consuming what a confirmed publisher sends), refuses new clients with 320, keeps n1 off leadership
// while a leader dies and across n1's own restart, and check_if_node_is_quorum_critical /
// await_online_quorum_plus_one answer as a stopped node makes them; revive lets clients in again.
import type { RecoveringConnection } from '@styx/client';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { ConfirmedPublisher } from '../support/confirmed-publisher.ts';
import { ctl } from '../support/ctl-process.ts';
import { eventually } from '../support/eventually.ts';

type Connection = Awaited<ReturnType<typeof amqp.connect>>;

/** The queues n1 declares, sorted (the consumer and publisher use the first). */
const QUEUES = ['mm.a', 'mm.b', 'mm.c', 'mm.work'];

interface ClusterJson {
  readonly metadata_leader: { readonly name: string | null } | null;
}

describe('maintenance mode: drain, revive and the quorum checks on a three-node cluster', () => {
  let cluster: TestCluster;
  const open: { close(): Promise<void> }[] = [];
  let consumer: RecoveringConnection;
  let publisher: ConfirmedPublisher;
  const seen = new Set<number>();
  /** When each delivery came (ms), for the consumer's longest gap across the drain. */
  const deliveredAt: number[] = [];
  const disconnects: Error[] = [];
  const recoveredAt: number[] = [];

  const metadataLeader = async (via: string): Promise<string | null | undefined> =>
    (await cluster.api<ClusterJson>(via, '/api/cluster')).metadata_leader?.name;

  beforeAll(async () => {
    cluster = await TestCluster.start(3);
    const c1 = await amqp.connect(cluster.url('n1'));
    c1.on('error', () => undefined);
    const ch = await c1.createChannel();
    for (const queue of QUEUES) await ch.assertQueue(queue, { durable: true });
    await c1.close();
  }, 180_000);

  afterAll(async () => {
    await publisher?.stop().catch(() => undefined);
    for (const c of open) await c.close().catch(() => undefined);
    await cluster?.stop();
  }, 60_000);

  it('drain n1: its leaderships move, its client is closed with the reason and recovers on another node, new clients are refused', async () => {
    // n1 declared them, so it led them; on a loaded machine an election may have moved one or two.
    const led: string[] = [];
    for (const queue of QUEUES) if ((await cluster.leaderOf(queue)) === 'n1') led.push(queue);
    expect(led.length).toBeGreaterThan(0);

    // A consumer connected to n1 first (the other nodes to recover on), a publisher on n2.
    consumer = (await amqp.connect([cluster.url('n1'), cluster.url('n2'), cluster.url('n3')], {
      recover: {
        minDelayMs: 50,
        maxDelayMs: 500,
        setup: async (conn: Connection) => {
          const ch = await conn.createChannel();
          await ch.prefetch(50);
          await ch.consume('mm.work', (m) => {
            if (m === null) return;
            seen.add(Number(m.content.toString()));
            deliveredAt.push(performance.now());
            ch.ack(m);
          });
        },
      },
    })) as RecoveringConnection;
    open.push(consumer);
    expect(consumer.urlIndex).toBe(0);
    consumer.on('disconnected', (err) => disconnects.push(err));
    consumer.on('recovered', (_conn, index) => recoveredAt.push(index));
    const c2 = await amqp.connect(cluster.url('n2'));
    c2.on('error', () => undefined);
    open.push(c2);
    publisher = new ConfirmedPublisher(await c2.createConfirmChannel(), 'mm.work');
    await eventually('traffic through n1', async () => seen.size > 300);

    const drainStart = performance.now();
    const drained = await ctl(cluster, 'n1', 'drain', '--timeout', '30');
    const drainMs = performance.now() - drainStart;
    expect(drained.stderr).toBe('');
    expect(drained.code).toBe(0);
    expect(drained.stdout).toContain('Node n1 is now in maintenance mode');

    // Every leadership left n1, the metadata group's too.
    for (const queue of QUEUES) expect((await cluster.queue('n1', queue)).leader).not.toBe('n1');
    expect(await metadataLeader('n1')).not.toBe('n1');

    // The client was told why, reconnected to another node and goes on consuming.
    await eventually('the consumer to recover on another node', async () => recoveredAt.length > 0);
    expect(disconnects[0]).toMatchObject({ code: 320 });
    expect(disconnects[0]?.message).toMatch(/node 'n1' was put into maintenance mode/);
    expect(recoveredAt[0]).not.toBe(0);
    const before = seen.size;
    await eventually('deliveries again after the drain', async () => seen.size > before + 300);
    const around = deliveredAt.filter((t) => t >= drainStart - 1_000);
    const gapMs = Math.max(...around.slice(1).map((t, i) => t - (around[i] as number)));
    // Figures, not assertions (the ctl process's start is in the command's time; the node logs how
    // long after the drain applied there it led nothing).
    const handedOver = cluster.logsOf('n1').find((line) => line.includes('leads no group any more'));
    const nodeMs = handedOver === undefined ? undefined : /"ms":(\d+)/.exec(handedOver)?.[1];
    console.log(
      `drain of n1 (${led.length} queue leader(s)): n1 led nothing ${nodeMs} ms after the drain applied; ` +
        `styx ctl drain returned in ${Math.round(drainMs)} ms; ` +
        `the consumer's longest gap between deliveries across it: ${Math.round(gapMs)} ms`,
    );
    // Nothing confirmed was lost or refused across the hand-over.
    await publisher.stop();
    expect(publisher.failed.size).toBe(0);
    await eventually(
      'every confirmed message consumed',
      async () => [...publisher.confirmed].every((n) => seen.has(n)),
      20_000,
    );

    // A new client to n1 alone is refused with 320 (not a 403/530 refusal: the SDK tries another node).
    const refused = await amqp.connect(cluster.url('n1')).then(
      (c) => {
        c.on('error', () => undefined);
        open.push(c);
        return undefined;
      },
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ code: 320 });
    expect((refused as Error).message).toMatch(/node 'n1' is in maintenance mode \(drained\)/);
    expect(await cluster.api('n2', '/api/nodes/n1/maintenance')).toEqual({ node: 'n1', being_drained: true });
  }, 60_000);

  it('a drained node takes no leadership back: not from a rebalance, nor when the leader dies; the checks see the stopped node', async () => {
    await cluster.api('n2', '/api/rebalance/queues', { method: 'POST' });
    const leader = await cluster.leaderOf('mm.work', ['n1']);
    const other = leader === 'n2' ? 'n3' : 'n2';

    // Nothing is critical with every node up, once the rebalance's transfers are over (a replica
    // catching up from a transfer counts as not online for the check until it has the log).
    let healthy = await ctl(cluster, 'n1', 'check_if_node_is_quorum_critical');
    await eventually('n1 not quorum critical with every node up', async () => {
      healthy = await ctl(cluster, 'n1', 'check_if_node_is_quorum_critical');
      return healthy.code === 0;
    });
    expect(healthy.code).toBe(0);
    expect(healthy.stdout).toContain('Node n1 is not quorum critical');

    await cluster.kill(leader);
    // n1 and `other` remain: n1 may win an election, but it hands over: `other` ends up leading.
    await eventually(
      `${other} to lead every queue with ${leader} down`,
      async () => {
        for (const queue of QUEUES) if ((await cluster.queue(other, queue)).leader !== other) return false;
        return true;
      },
      30_000,
    );
    await eventually(
      `${other} to lead the metadata group`,
      async () => (await metadataLeader(other)) === other,
      30_000,
    );

    // With one node stopped, stopping n1 too would leave every group without a quorum.
    await eventually(`n1 to see ${leader} down`, async () => {
      const nodes = await cluster.api<{ name: string; running: boolean }[]>('n1', '/api/nodes');
      return nodes.find((n) => n.name === leader)?.running === false;
    });
    const critical = await ctl(cluster, 'n1', 'check_if_node_is_quorum_critical');
    expect(critical.code).toBe(1);
    for (const queue of QUEUES) expect(critical.stdout).toContain(queue);
    expect(critical.stdout).toContain('metadata');
    expect(critical.stderr).toMatch(
      /stopping node 'n1' would leave 4 queue\(s\) and the metadata group without a quorum/,
    );
    // The same check through another node's API, naming n1; and the leader's absence reported as
    // under-replicated queues.
    const viaOther = await fetch(
      `${cluster.node(other).broker.managementUrl}/api/health/checks/node-is-quorum-critical?node=n1`,
      { headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` } },
    );
    expect(viaOther.status).toBe(503);
    expect(await viaOther.json()).toMatchObject({
      status: 'failed',
      node: 'n1',
      queues: QUEUES.map((name) => ({ name })),
      metadata_group: { type: 'metadata', online_count: 2, needed: 3 },
    });
    const queues = await ctl(cluster, 'n1', 'list_queues', 'name', 'leader', 'under_replicated', '-q');
    expect(queues.stdout).toContain(`mm.work\t${other}\ttrue`);
  }, 60_000);

  it('await_online_quorum_plus_one waits while a node is stopped, with a progress line, then gives up', async () => {
    // (--timeout also bounds each request: a loaded machine answers slowly.)
    const waitedOut = await ctl(cluster, 'n1', 'await_online_quorum_plus_one', '--timeout', '8');
    expect(waitedOut.stderr).toMatch(/timed out after 8 s; below a quorum \+ 1 online: /);
    expect(waitedOut.code).toBe(1);
    expect(waitedOut.stdout).toMatch(
      /Waiting for 5 group\(s\): queue 'mm.a' in vhost '\/' \(2\/3 online, needs 3\)/,
    );
  }, 60_000);

  it('await_online_quorum_plus_one ends once the node is back; n1 still leads nothing', async () => {
    const down = cluster.nodes.find((n) => !cluster.isRunning(n.name))?.name as string;
    await cluster.restart(down);
    const waited = await ctl(cluster, 'n1', 'await_online_quorum_plus_one', '--timeout', '40');
    expect(waited.code).toBe(0);
    expect(waited.stdout).toContain('have a quorum + 1 of members online');
    for (const queue of QUEUES) expect((await cluster.queue('n1', queue)).leader).not.toBe('n1');
  }, 60_000);

  it('n1 stays drained across its restart until revive, which lets clients in again', async () => {
    await cluster.restart('n1');
    await cluster.waitFormed();
    const refused = await amqp.connect(cluster.url('n1')).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ code: 320 });
    for (const queue of QUEUES) expect((await cluster.queue('n1', queue)).leader).not.toBe('n1');

    const revived = await ctl(cluster, 'n2', 'revive', 'n1');
    expect(revived.code).toBe(0);
    // The revive went through n2: n1 reads its own metadata replica, which applies it a moment later.
    await eventually('n1 to apply the revive', async () => {
      const state = (await cluster.api('n1', '/api/nodes/n1/maintenance')) as { being_drained?: boolean };
      return state.being_drained === false;
    });
    expect(await cluster.api('n1', '/api/nodes/n1/maintenance')).toEqual({
      node: 'n1',
      being_drained: false,
    });
    const welcome = await amqp.connect(cluster.url('n1'));
    welcome.on('error', () => undefined);
    open.push(welcome);
    await (await welcome.createChannel()).checkQueue('mm.work');
  }, 60_000);

  it('refuses bad input: an unknown node, a bad timeout, a caller without the administrator tag', async () => {
    const unknown = await ctl(cluster, 'n2', 'drain', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no cluster member 'nope'");
    const badTimeout = await fetch(
      `${cluster.node('n2').broker.managementUrl}/api/nodes/n1/drain?timeout=0`,
      {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
      },
    );
    expect(badTimeout.status).toBe(400);
    expect(await badTimeout.json()).toMatchObject({ reason: expect.stringMatching(/'timeout' must be/) });
    expect((await ctl(cluster, 'n2', 'check_if_node_is_quorum_critical', 'nope')).code).toBe(1);
    await cluster.api('n2', '/api/users/watcher', {
      method: 'PUT',
      body: JSON.stringify({ password: 'pw', tags: ['monitoring'] }),
    });
    const watcher = `Basic ${Buffer.from('watcher:pw').toString('base64')}`;
    const base = cluster.node('n2').broker.managementUrl;
    const forbidden = await fetch(`${base}/api/nodes/n1/drain`, {
      method: 'POST',
      headers: { authorization: watcher },
    });
    expect(forbidden.status).toBe(403);
    const read = await fetch(`${base}/api/health/checks/node-is-quorum-critical`, {
      headers: { authorization: watcher },
    });
    // Allowed (monitoring reads): 200 or 503 is the check's verdict, not a refusal.
    expect([200, 503]).toContain(read.status);
    expect(await read.json()).toMatchObject({ node: 'n2' });
    expect(await cluster.api('n2', '/api/nodes/n1/maintenance')).toEqual({
      node: 'n1',
      being_drained: false,
    });
  }, 60_000);
});
