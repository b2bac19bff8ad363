// RabbitMQ's free disk space alarm on a real `styx server` whose data dir is on a 64 MiB tmpfs with
// --disk-free-limit 32MB: filling the filesystem with a ballast file raises the alarm, publishers
// are blocked (connection.blocked; their publishes wait, unconfirmed, nothing lost) and the health
// checks fail; removing the ballast lifts it, the waiting publishes are confirmed, and every
// confirmed message is in the queue.
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { managementApi } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { Tmpfs } from '../support/tmpfs.ts';
import { mountTmpfs } from '../support/tmpfs.ts';

const LIMIT = 32_000_000;
const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

/** A health check's status and body (managementApi throws on 503). */
async function check(base: string, name: string): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}/api/health/checks/${name}`, {
    headers: { authorization: AUTH },
    signal: AbortSignal.timeout(10_000),
  });
  return { status: response.status, body: await response.json() };
}

describe('the free disk space alarm (data dir on a small tmpfs)', () => {
  let fs: Tmpfs;
  let broker: BrokerProcess;
  let base: string;
  beforeAll(async () => {
    fs = await mountTmpfs(64);
    broker = await startBroker({
      dataDir: join(fs.dir, 'data'),
      management: true,
      extraArgs: ['--disk-free-limit', '32MB'],
    });
    base = broker.managementUrl as string;
  }, 60_000);
  afterAll(async () => {
    await broker?.stop();
    await fs?.unmount();
  });

  it('blocks publishers while the disk is short, loses nothing, and lets them go on when space returns', async () => {
    const connection = await amqp.connect(broker.url);
    const events: string[] = [];
    const blocked = new Promise<string>((resolve) => connection.on('blocked', resolve));
    const unblocked = new Promise<void>((resolve) => connection.on('unblocked', () => resolve()));
    connection.on('blocked', () => events.push('blocked'));
    connection.on('unblocked', () => events.push('unblocked'));
    const ch = await connection.createConfirmChannel();
    await ch.assertQueue('disk.q', { durable: true });
    const confirmed = new Set<number>();
    const publish = (n: number): Promise<void> =>
      new Promise((resolve, reject) =>
        ch.sendToQueue('disk.q', Buffer.from(String(n)), { persistent: true }, (err) => {
          if (err) return reject(err);
          confirmed.add(n);
          resolve();
        }),
      );
    await Promise.all(Array.from({ length: 20 }, (_, i) => publish(i)));
    expect((await check(base, 'alarms')).status).toBe(200);

    // Leave 16 MB free: below the 32 MB limit.
    const ballast = join(fs.dir, 'ballast');
    await writeFile(ballast, Buffer.alloc((await fs.free()) - 16_000_000, 1));
    const reason = await Promise.race([
      blocked,
      new Promise<string>((_, reject) =>
        setTimeout(() => reject(new Error('not blocked within 15 s')), 15_000),
      ),
    ]);
    expect(reason).toMatch(/disk/);
    const nodes = await managementApi<Record<string, unknown>[]>(base, '/api/nodes');
    expect(nodes[0]).toMatchObject({ disk_free_alarm: true, disk_free_limit: LIMIT, mem_alarm: false });
    expect(nodes[0]?.disk_free).toBeLessThan(LIMIT);
    const alarms = [{ node: nodes[0]?.name, resource: 'disk' }];
    expect(await check(base, 'alarms')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'There are alarms in effect in the cluster', alarms },
    });
    expect(await check(base, 'local-alarms')).toEqual({
      status: 503,
      body: { status: 'failed', reason: 'There are alarms in effect on the node', alarms },
    });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^rabbitmq_alarms_free_disk_space_watermark 1$/m);
    expect(metrics).toMatch(/^rabbitmq_disk_space_available_limit_bytes 32000000$/m);

    // Publishes sent while blocked wait: the node does not read them, so none is confirmed.
    const waiting = Array.from({ length: 10 }, (_, i) => publish(20 + i));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(confirmed.size).toBe(20);

    await rm(ballast);
    await Promise.race([
      unblocked,
      new Promise<void>((_, reject) =>
        setTimeout(() => reject(new Error('not unblocked within 15 s')), 15_000),
      ),
    ]);
    await Promise.all(waiting);
    expect(confirmed.size).toBe(30);
    expect(events).toEqual(['blocked', 'unblocked']);
    await eventually(
      'the alarm check to pass',
      async () => (await check(base, 'alarms')).status === 200,
      10_000,
    );

    const bodies: number[] = [];
    for (;;) {
      const message = await ch.get('disk.q', { noAck: true });
      if (message === false) break;
      bodies.push(Number(message.content.toString()));
    }
    expect(bodies.sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i));
    await connection.close();
  }, 90_000);
});
