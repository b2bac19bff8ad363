// `styx ctl` against a real `styx server` process, through a shell, as an operator types it: the
// dead-letter guide's rabbitmqctl command with `styx ctl` in its place reconfigures an existing
// queue (no redeclare, no restart), and the node not running is said plainly (exit 69).
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';

/** The guide's command, word for word, with `styx ctl` for `rabbitmqctl`. */
const GUIDE_COMMAND = `styx ctl set_policy DLX ".*" '{"dead-letter-exchange":"my-dlx"}' --apply-to queues`;

/** Longest a ctl run may take, ms (a bound against a hang, not a performance assertion). */
const RUN_TIMEOUT_MS = 20_000;

interface ShellRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

let broker: BrokerProcess;
let binDir: string;

/** Runs `line` in /bin/sh with `styx` on the PATH and STYX_NODE pointing at the node under test. */
function sh(line: string, env: Record<string, string> = {}): Promise<ShellRun> {
  return new Promise((resolve, reject) => {
    execFile(
      '/bin/sh',
      ['-c', line],
      {
        cwd: REPO_ROOT,
        timeout: RUN_TIMEOUT_MS,
        env: {
          ...process.env,
          PATH: `${binDir}:${process.env.PATH ?? ''}`,
          STYX_NODE: broker.managementUrl ?? '',
          ...env,
        },
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}

beforeAll(async () => {
  broker = await startBroker({ management: true });
  // `styx` as an installed binary would be: the CLI under the Node that runs the tests.
  binDir = await mkdtemp(join(tmpdir(), 'styx-bin-'));
  const main = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');
  await writeFile(join(binDir, 'styx'), `#!/bin/sh\nexec '${process.execPath}' '${main}' "$@"\n`);
  await chmod(join(binDir, 'styx'), 0o755);
});

afterAll(async () => {
  await broker?.stop();
  await broker?.cleanup();
  if (binDir !== undefined) await rm(binDir, { recursive: true, force: true });
});

describe('styx ctl against a running node', () => {
  it("the guide's set_policy gives an existing queue its DLX at once, as list_queues shows", async () => {
    expect(broker.managementUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const conn = await amqp.connect(broker.url);
    const ch = await conn.createChannel();
    await ch.assertQueue('orders', { durable: true });

    const before = await sh('styx ctl list_queues name dead_letter_exchange');
    expect(before).toEqual({
      code: 0,
      stdout: 'Listing queues for vhost / ...\nname\tdead_letter_exchange\norders\t\n',
      stderr: '',
    });

    const set = await sh(GUIDE_COMMAND);
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout).toBe(
      'Setting policy "DLX" for pattern ".*" to "{"dead-letter-exchange":"my-dlx"}" with priority "0" for vhost "/" ...\n',
    );

    // No redeclare, no restart: the queue's effective DLX changed.
    const after = await sh('styx ctl list_queues name dead_letter_exchange');
    expect(after.stdout).toBe('Listing queues for vhost / ...\nname\tdead_letter_exchange\norders\tmy-dlx\n');
    expect((await sh('styx ctl list_policies -q')).stdout).toBe(
      'vhost\tname\tpattern\tapply-to\tdefinition\tpriority\n/\tDLX\t.*\tqueues\t{"dead-letter-exchange":"my-dlx"}\t0\n',
    );
    // The client's channel is undisturbed, and an equivalent redeclare is still accepted.
    expect((await ch.checkQueue('orders')).messageCount).toBe(0);
    await ch.assertQueue('orders', { durable: true });

    expect((await sh('styx ctl clear_policy DLX')).code).toBe(0);
    expect((await sh('styx ctl list_queues -s name dead_letter_exchange')).stdout).toBe('orders\t\n');
    await conn.close();
  });

  it('says the node is not reachable, with its URL, and exits 69', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const address = probe.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const r = await sh(`styx ctl list_queues --node http://127.0.0.1:${port}`);
    expect(r.code).toBe(69);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`the node is not reachable at http://127.0.0.1:${port} (ECONNREFUSED)`);
  });

  it('refuses wrong credentials with exit 1 and says so', async () => {
    const r = await sh('styx ctl list_queues --username guest --password wrong');
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("authentication failed for user 'guest'");
  });

  it('a policy and the queue config it gave survive a restart of the node', async () => {
    const first = await startBroker({ management: true });
    let second: BrokerProcess | undefined;
    try {
      const conn = await amqp.connect(first.url);
      const ch = await conn.createChannel();
      await ch.assertQueue('kept', { durable: true });
      await conn.close();
      const node = { STYX_NODE: first.managementUrl ?? '' };
      expect(
        (await sh(`styx ctl set_policy -q KEEP '^kept$' '{"dead-letter-exchange":"dlx-2"}'`, node)).code,
      ).toBe(0);
      expect(await first.stop()).toBe(0);

      second = await startBroker({ dataDir: first.dataDir, management: true });
      const again = { STYX_NODE: second.managementUrl ?? '' };
      expect((await sh('styx ctl list_queues -s name policy dead_letter_exchange', again)).stdout).toBe(
        'kept\tKEEP\tdlx-2\n',
      );
      expect((await sh('styx ctl list_policies -s', again)).stdout).toBe(
        '/\tKEEP\t^kept$\tall\t{"dead-letter-exchange":"dlx-2"}\t0\n',
      );
    } finally {
      await second?.stop();
      await first.stop();
      await first.cleanup();
    }
  });

  it('a node started with --management-port 0 has no management API', async () => {
    const quiet = await startBroker();
    try {
      expect(quiet.managementUrl).toBeUndefined();
      expect(quiet.logs.some((line) => line.includes('managementUrl'))).toBe(false);
    } finally {
      await quiet.stop();
      await quiet.cleanup();
    }
  });
});

describe('styx ctl and the clients of a running node', () => {
  it('list_connections, list_channels and list_consumers show an SDK client, with columns', async () => {
    const conn = await amqp.connect(broker.url);
    try {
      const ch = await conn.createChannel();
      await ch.prefetch(3);
      await ch.assertQueue('ctl-consumed', { durable: false });
      const { consumerTag } = await ch.consume('ctl-consumed', () => {});

      const connections = await sh('styx ctl list_connections');
      expect(connections.code).toBe(0);
      expect(connections.stdout).toMatch(
        /^Listing connections \.\.\.\nuser\tpeer_host\tpeer_port\tstate\nguest\t127\.0\.0\.1\t\d+\trunning\n/,
      );
      const named = await sh('styx ctl list_connections -s name user vhost channels --formatter json');
      const [row] = JSON.parse(named.stdout) as { name: string; channels: number }[];
      expect(row).toMatchObject({ user: 'guest', vhost: '/', channels: 1 });
      expect(row?.name).toMatch(/^127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+$/);

      const channels = await sh('styx ctl list_channels -q name consumer_count prefetch_count');
      expect(channels.stdout).toBe(`name\tconsumer_count\tprefetch_count\n${row?.name} (1)\t1\t3\n`);
      const consumers = await sh('styx ctl list_consumers -s queue_name consumer_tag ack_required');
      expect(consumers.stdout).toBe(`ctl-consumed\t${consumerTag}\ttrue\n`);

      const badColumn = await sh('styx ctl list_connections nonsense');
      expect(badColumn.code).toBe(2);
      expect(badColumn.stderr).toContain("invalid column 'nonsense'");
    } finally {
      await conn.close();
    }
  });

  it('close_connection closes a client with the reason given; an unknown name is a clear 404', async () => {
    const conn = await amqp.connect(broker.url);
    const closed = new Promise<Error | undefined>((resolve) => conn.once('close', resolve));
    conn.on('error', () => {});
    const listed = await sh('styx ctl list_connections -s name');
    const name = listed.stdout.trim().split('\n')[0] as string;
    const r = await sh(`styx ctl close_connection '${name}' 'go away now'`);
    expect(r).toMatchObject({ code: 0, stdout: `Closing connection ${name}, reason: go away now...\n` });
    const error = (await closed) as Error & { code?: number };
    expect(error.code).toBe(320);
    expect(error.message).toContain('go away now');

    const unknown = await sh(`styx ctl close_connection '${name}' again`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`styx ctl: Error: no connection '${name}'\n`);
    const usage = await sh('styx ctl close_connection only-a-name');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('close_connection takes 2 arguments, got 1');
  });

  it("status prints the node's version, listeners, memory, disk, descriptors and connection count", async () => {
    const r = await sh('styx ctl status');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Status of node .+ \.\.\.\nRuntime\n/);
    expect(r.stdout).toMatch(/Styx version: \d+\.\d+\.\d+/);
    expect(r.stdout).toContain(`Interface: 127.0.0.1, port: ${broker.port}, protocol: styx`);
    expect(r.stdout).toMatch(/Memory\n\nUsed: [\d.]+ MiB/);
    expect(r.stdout).toMatch(
      /Free Disk Space\n\nLow free disk space watermark: [\d.]+ MiB\nFree disk space: [\d.]+ MiB/,
    );
    expect(r.stdout).toMatch(/File Descriptors\n\nTotal: \d+, limit: \d+\nSockets: \d+, limit: \d+/);
    expect(r.stdout).toMatch(/Alarms\n\n\(none\)/);
    expect(r.stdout).toMatch(/Connection count: \d+/);
  });

  it('purge_queue and delete_queue, with --if-empty refused while messages are there', async () => {
    const conn = await amqp.connect(broker.url);
    try {
      const ch = await conn.createConfirmChannel();
      await ch.assertQueue('ctl-doomed', { durable: false });
      ch.sendToQueue('ctl-doomed', Buffer.from('x'));
      await ch.waitForConfirms();
      const refused = await sh('styx ctl delete_queue ctl-doomed --if-empty');
      expect(refused.code).toBe(1);
      expect((await sh('styx ctl purge_queue ctl-doomed')).stdout).toBe(
        "Purging queue 'ctl-doomed' in vhost '/' ...\n",
      );
      expect((await sh('styx ctl list_queues -s name messages')).stdout).toContain('ctl-doomed\t0\n');
      expect((await sh('styx ctl delete_queue ctl-doomed --if-empty')).code).toBe(0);
      expect((await sh('styx ctl list_queues -s name')).stdout).not.toContain('ctl-doomed');
      const missing = await sh('styx ctl purge_queue ctl-doomed');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("no queue 'ctl-doomed'");
    } finally {
      await conn.close();
    }
  });
});
