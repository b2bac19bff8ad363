// Resource alarms are cluster-wide, as RabbitMQ's: three `styx server` nodes, n3's data dir on a
// 64 MiB tmpfs with --disk-free-limit 32MB. Filling n3's filesystem blocks a publisher connected
// to n1 (nothing of n1's is short), n1's cluster alarm check fails naming n3 while its local one
// passes, and n1's /api/nodes shows n3's disk alarm; space back on n3 unblocks the publisher on
// n1, and every confirmed message is in the queue. And is-in-service fails on a drained node.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestCluster } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { Tmpfs } from '../support/tmpfs.ts';
import { mountTmpfs } from '../support/tmpfs.ts';

const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

function within<T>(what: string, promise: Promise<T>, ms: number): Promise<T> {
  return Promise.race([
    promise,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);
}

describe('resource alarms across a three-node cluster', () => {
  let fs: Tmpfs;
  let cluster: TestCluster;
  /** A health check on a node: status and body. */
  const check = async (node: string, name: string): Promise<{ status: number; body: unknown }> => {
    const response = await fetch(`${cluster.node(node).broker.managementUrl}/api/health/checks/${name}`, {
      headers: { authorization: AUTH },
      signal: AbortSignal.timeout(10_000),
    });
    return { status: response.status, body: await response.json() };
  };

  beforeAll(async () => {
    fs = await mountTmpfs(64);
    cluster = await TestCluster.start(3, {
      dataDirs: { n3: join(fs.dir, 'n3') },
      nodeArgs: { n3: ['--disk-free-limit', '32MB'] },
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await fs?.unmount();
  });

  it("blocks a publisher on n1 while n3's disk is short, and lets it go on when space returns", async () => {
    const connection = await cluster.connect('n1');
    const blocked = new Promise<string>((resolve) => connection.on('blocked', resolve));
    const unblocked = new Promise<void>((resolve) => connection.on('unblocked', () => resolve()));
    const ch = await connection.createConfirmChannel();
    await ch.assertQueue('alarm.q', { durable: true });
    const confirmed = new Set<number>();
    const publish = (n: number): Promise<void> =>
      new Promise((resolve, reject) =>
        ch.sendToQueue('alarm.q', Buffer.from(String(n)), { persistent: true }, (err) => {
          if (err) return reject(err);
          confirmed.add(n);
          resolve();
        }),
      );
    await Promise.all(Array.from({ length: 10 }, (_, i) => publish(i)));

    const ballast = join(fs.dir, 'ballast');
    await writeFile(ballast, Buffer.alloc((await fs.free()) - 16_000_000, 1));
    expect(await within('blocked on n1', blocked, 20_000)).toMatch(/low on disk space on node n3/);
    expect(await check('n1', 'alarms')).toEqual({
      status: 503,
      body: {
        status: 'failed',
        reason: 'There are alarms in effect in the cluster',
        alarms: [{ node: 'n3', resource: 'disk' }],
      },
    });
    expect(await check('n1', 'local-alarms')).toEqual({ status: 200, body: { status: 'ok' } });
    expect((await check('n3', 'local-alarms')).status).toBe(503);
    const nodes = await cluster.api<Record<string, unknown>[]>('n1', '/api/nodes');
    expect(nodes.find((n) => n.name === 'n3')).toMatchObject({
      disk_free_alarm: true,
      disk_free_limit: 32_000_000,
    });
    expect(nodes.find((n) => n.name === 'n2')).toMatchObject({ disk_free_alarm: false, mem_alarm: false });

    // Sent while blocked: not read, not confirmed, not lost.
    const waiting = Array.from({ length: 10 }, (_, i) => publish(10 + i));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(confirmed.size).toBe(10);

    await rm(ballast);
    await within('unblocked on n1', unblocked, 20_000);
    await within('the waiting confirms', Promise.all(waiting), 20_000);
    await eventually(
      'the alarm check on n1 to pass',
      async () => (await check('n1', 'alarms')).status === 200,
      20_000,
    );
    const bodies: number[] = [];
    for (;;) {
      const message = await ch.get('alarm.q', { noAck: true });
      if (message === false) break;
      bodies.push(Number(message.content.toString()));
    }
    expect(bodies.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  }, 120_000);

  it('fails is-in-service on a drained node only, until it is revived', async () => {
    await cluster.api('n1', '/api/nodes/n2/drain?timeout=5', { method: 'POST' });
    await eventually(
      'n2 out of service',
      async () => (await check('n2', 'is-in-service')).status === 503,
      20_000,
    );
    expect((await check('n2', 'is-in-service')).body).toMatchObject({ status: 'failed' });
    expect(await check('n1', 'is-in-service')).toEqual({ status: 200, body: { status: 'ok' } });
    await cluster.api('n1', '/api/nodes/n2/revive', { method: 'POST' });
    await eventually(
      'n2 in service',
      async () => (await check('n2', 'is-in-service')).status === 200,
      20_000,
    );
  }, 60_000);
});
