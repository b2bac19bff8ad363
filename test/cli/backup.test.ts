// `styx backup` on a real node: a copy taken while the node runs and publishers are confirmed is a
// data dir on which a new node starts with every durable queue and every confirmed message; what
// was published after the copy is not in it. And its refusals: no data dir there, a target that is
// not empty (exit 1), no --to (exit 2).
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import type { Exit } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';

const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');
const NO_MANAGEMENT = ['--management-port', '0'];

function styx(...args: string[]): Promise<Exit> {
  return spawnNode([CLI, ...args], { cwd: REPO_ROOT }).exited();
}

/** Every message of `queue`, in order, as text (basic.get until empty, acked). */
async function drain(channel: amqp.Channel, queue: string): Promise<string[]> {
  const bodies: string[] = [];
  for (;;) {
    const message = await channel.get(queue, { noAck: true });
    if (message === false) return bodies;
    bodies.push(message.content.toString());
  }
}

describe('styx backup', () => {
  const nodes: BrokerProcess[] = [];
  let root: string | undefined;

  afterAll(async () => {
    for (const node of nodes) await node.kill().catch(() => undefined);
    killSpawned();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('copies a running node; a node started on the copy has every durable queue and confirmed message', async () => {
    root = await mkdtemp(join(tmpdir(), 'styx-backup-'));
    const source = await startBroker({ dataDir: join(root, 'node'), extraArgs: NO_MANAGEMENT });
    nodes.push(source);
    const connection = await amqp.connect(source.url);
    connection.on('error', () => undefined);
    const channel = await connection.createConfirmChannel();
    const expected: Record<string, string[]> = { 'orders.new': [], 'orders.dlq': [] };
    await channel.assertQueue('orders.new', { durable: true, arguments: { 'x-message-ttl': 3_600_000 } });
    await channel.assertQueue('orders.dlq', { durable: true });
    await channel.assertExchange('orders', 'direct', { durable: true });
    await channel.bindQueue('orders.new', 'orders', 'new');
    for (let i = 0; i < 200; i++) {
      const body = `order ${i} ${'x'.repeat(i % 7 === 0 ? 20_000 : 10)}`;
      channel.publish('orders', 'new', Buffer.from(body), { persistent: true });
      expected['orders.new']?.push(body);
    }
    for (let i = 0; i < 5; i++) {
      channel.sendToQueue('orders.dlq', Buffer.from(`dead ${i}`), { persistent: true });
      expected['orders.dlq']?.push(`dead ${i}`);
    }
    await channel.waitForConfirms();

    const target = join(root, 'backup');
    const backup = await styx('backup', '--data-dir', source.dataDir, '--to', target);
    expect(backup.stderr).toBe('');
    expect(backup.code).toBe(0);
    expect(backup.stdout).toMatch(
      /^backed up .* to .*backup \(data\.mdb \d+ bytes; node-key, node-name\)\n$/,
    );

    // After the copy: neither this message nor this queue is in it.
    channel.sendToQueue('orders.dlq', Buffer.from('after the backup'), { persistent: true });
    await channel.assertQueue('after.backup', { durable: true });
    await channel.waitForConfirms();
    await connection.close();
    expect(await source.stop()).toBe(0);

    // Restore: the copy is a data dir (here started in place; on a new machine, copied there first).
    const restored = await startBroker({ dataDir: target, extraArgs: NO_MANAGEMENT });
    nodes.push(restored);
    const again = await amqp.connect(restored.url);
    again.on('error', () => undefined);
    const reader = await again.createChannel();
    for (const [queue, bodies] of Object.entries(expected)) {
      const { messageCount } = await reader.checkQueue(queue);
      expect(messageCount).toBe(bodies.length);
      expect(await drain(reader, queue)).toEqual(bodies);
    }
    // The topology came back too: the binding routes.
    reader.publish('orders', 'new', Buffer.from('routed'));
    await expect.poll(async () => (await reader.checkQueue('orders.new')).messageCount).toBe(1);
    const missing = await again.createChannel();
    missing.on('error', () => undefined);
    await expect(missing.checkQueue('after.backup')).rejects.toThrow(/404/);
    await again.close();
    expect(await restored.stop()).toBe(0);
  }, 120_000);

  it('refuses a directory that is no data dir, a target that is not empty, and a missing --to', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'styx-backup-bad-'));
    try {
      const notData = await styx('backup', '--data-dir', dir, '--to', join(dir, 'copy'));
      expect(notData.code).toBe(1);
      expect(notData.stderr).toBe(`styx backup: ${dir} is not a Styx data dir (no lmdb/data.mdb)\n`);
      await mkdir(join(dir, 'data', 'lmdb'), { recursive: true });
      await writeFile(join(dir, 'data', 'lmdb', 'data.mdb'), '');
      await mkdir(join(dir, 'full'));
      await writeFile(join(dir, 'full', 'something'), 'kept');
      const full = await styx('backup', '--data-dir', join(dir, 'data'), '--to', join(dir, 'full'));
      expect(full.code).toBe(1);
      expect(full.stderr).toContain('is not empty: back up into a new or empty directory');
      const noTarget = await styx('backup', '--data-dir', dir);
      expect(noTarget.code).toBe(2);
      expect(noTarget.stderr).toMatch(/^styx backup: --to DIR is required\n\nUsage: styx backup/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
