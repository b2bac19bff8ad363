import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../broker/broker.ts';
import { silentLogger } from '../logging/logger.ts';
import { ManagementServer } from '../management/management-server.ts';
import { liveIdsDigest } from '../queue/replica-check.ts';
import type { NodeStorage } from '../storage/node-storage.ts';
import { openNodeStorage } from '../storage/node-storage.ts';
import { tempDir } from '../storage/test-support/storage-fixtures.ts';
import { ctlCommand } from './ctl-command.ts';

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let dir: ReturnType<typeof tempDir>;
let storage: NodeStorage;
let broker: Broker;
let server: ManagementServer;

beforeEach(async () => {
  dir = tempDir('ctl-checks');
  storage = await openNodeStorage(dir.path);
  broker = await Broker.start({
    nodeName: 'ctl-check',
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

async function ctl(...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const code = await ctlCommand(argv, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: { STYX_NODE: server.url },
  });
  return { code, stdout, stderr };
}

async function declare(name: string, vhost = '/', durable = true): Promise<void> {
  await broker.declareQueue(
    { user: 'guest', vhost, connectionId: 'c1' },
    { queue: name, passive: false, durable, exclusive: false, autoDelete: false, arguments: { entries: [] } },
  );
}

/** Publish `count` messages to `queue` in `vhost`; the queue's live ids. */
async function publish(queue: string, count: number, vhost = '/'): Promise<number[]> {
  const actor = broker.queueActor(vhost, queue);
  for (let i = 0; i < count; i++) {
    const message = {
      exchange: '',
      routingKey: queue,
      properties: {},
      body: Buffer.from(`m${i}`),
      bcc: undefined,
    };
    await actor?.enqueue(message, undefined);
  }
  return [...(actor?.liveIds() ?? [])];
}

function loseBody(queue: string, id: number, vhost = '/'): void {
  storage.bodyStore.delete(broker.metadataView.queue(vhost, queue)?.groupId as string, id);
}

const HEADER =
  'Node Name\tOnline\tRaft State\tTerm\tApplied Index\tCommit Index\tMessages\tLive Ids\tDigest\tMissing Bodies\tError';

describe('check_queue', () => {
  it('prints a row per replica and exits 0 when the queue is consistent', async () => {
    await declare('orders');
    const ids = await publish('orders', 2);
    expect(await ctl('check_queue', 'orders')).toEqual({
      code: 0,
      stdout:
        'Checking the replicas of queue orders in vhost / ...\n' +
        `${HEADER}\n` +
        `ctl-check\ttrue\tleader\t\t\t\t2\t2\t${liveIdsDigest(ids)}\t0\t\n`,
      stderr: '',
    });
  });

  it('exits 1 and prints the problems when a replica misses a body', async () => {
    await declare('orders');
    const [id] = await publish('orders', 2);
    loseBody('orders', id as number);
    const run = await ctl('check_queue', '-q', 'orders');
    expect(run.code).toBe(1);
    expect(run.stdout.split('\n')[1]).toMatch(/^ctl-check\ttrue\tleader\t\t\t\t2\t2\t[0-9a-f]{16}\t1\t$/);
    expect(run.stderr).toBe(
      'styx ctl: Error: queue orders in vhost / is not consistent:\n' +
        `  - ctl-check holds 1 live message(s) whose body is missing from its body store (first ids: ${id})\n`,
    );
  });

  it("prints the node's report as JSON with --formatter json, still exiting 1 when it failed", async () => {
    await declare('orders', '/');
    const [id] = await publish('orders', 1);
    loseBody('orders', id as number);
    const run = await ctl('check_queue', '-p', '/', 'orders', '--formatter', 'json');
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      vhost: '/',
      name: 'orders',
      ok: false,
      replicas: [{ node: 'ctl-check', missing_bodies: 1, missing_body_ids: [id] }],
    });
  });

  it('exits 1 with the reason for an unknown or non-replicated queue, 2 on bad usage', async () => {
    await declare('scratch', '/', false);
    expect(await ctl('check_queue', 'nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: "styx ctl: Error: no queue 'nope' in vhost '/'\n",
    });
    expect((await ctl('check_queue', 'scratch')).stderr).toBe(
      "styx ctl: Error: queue 'scratch' in vhost '/' is not replicated: it is not durable, so it lives in memory on one node\n",
    );
    const usage = await ctl('check_queue');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('check_queue takes 1 argument, got 0');
    expect((await ctl('check_queues', 'extra')).code).toBe(2);
  });

  it('explains itself with --help', async () => {
    const help = await ctl('check_queue', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: styx ctl check_queue [-p vhost] QUEUE');
    expect(help.stdout).toContain('could not be checked');
    expect((await ctl('--help')).stdout).toContain('  check_queues [-p vhost]\n');
  });
});

describe('check_queues', () => {
  it('checks every replicated queue of every vhost, or of the vhost given, exiting 1 when any fails', async () => {
    await declare('orders');
    await declare('events');
    await declare('scratch', '/', false);
    await publish('events', 1);
    const all = await ctl('check_queues', '-s');
    expect(all.code).toBe(0);
    expect(all.stdout.split('\n').map((line) => line.split('\t').slice(0, 3))).toEqual([
      ['/', 'events', 'ctl-check'],
      ['/', 'orders', 'ctl-check'],
      [''],
    ]);
    const [id] = await publish('orders', 1);
    loseBody('orders', id as number);
    const failed = await ctl('check_queues', '-p', '/');
    expect(failed.code).toBe(1);
    expect(failed.stdout.split('\n')[0]).toBe('Checking the replicas of 2 queue(s) in vhost / ...');
    expect(failed.stderr).toContain('queue orders in vhost / is not consistent:\n  - ctl-check holds 1 live');
    expect(failed.stderr).not.toContain('events');
  });

  it('answers for an unknown vhost with the reason (exit 1)', async () => {
    expect(await ctl('check_queues', '-p', 'nope')).toEqual({
      code: 1,
      stdout: '',
      stderr: "styx ctl: Error: no vhost 'nope'\n",
    });
  });
});
