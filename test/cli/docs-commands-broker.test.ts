// The documentation's commands for one node (the table's `run: 'broker'`), run as written in a
// reader's shell (test/support/reader-shell.ts): `npm install -g .` puts `styx` on the PATH (npm's
// prefix is the test's own, through npm_config_prefix), a cluster secret is made with the docs'
// pipeline, `styx server --config /etc/styx/styx.conf` starts the node, the ctl, connection and
// backup commands run against it, and `npm uninstall -g styx` removes the command again.
//
// What the test changes, and only that: machine paths (/etc/styx, /var/lib/styx, /backup) are rooted
// in its temporary directory; the config file there is the test's (free ports, that data dir);
// commands without `--config` or `--node` get $STYX_NODE (the reader's node would be the default
// ports' or ./styx-data's); a connection name in an example is the name of a connection the test
// opened. Each step's check is next to its command.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, REPO_ROOT } from '../support/broker-process.ts';
import { readDocCommands } from '../support/doc-commands.ts';
import { eventually } from '../support/eventually.ts';
import type { ShellRun } from '../support/reader-shell.ts';
import { readerEnv, runInShell } from '../support/reader-shell.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnCommand } from '../support/spawned.ts';
import { ruleFor } from './docs-commands-table.ts';

const root = await mkdtemp(join(tmpdir(), 'styx-docs-broker-'));
const prefix = join(root, 'global');
const port = await freePort();
const managementPort = await freePort();
const management = `http://127.0.0.1:${managementPort}`;
const dataDir = join(root, 'var', 'lib', 'styx');
const backupDir = join(root, 'backup', `styx-${new Date().toISOString().slice(0, 10)}`);

/** The machine paths of the docs, rooted in the test's directory. */
function rooted(command: string): string {
  return command.replace(/(?<![\w.])\/(etc\/styx|var\/lib\/styx|backup)(?=\/|\s|$)/g, `${root}/$1`);
}

// The machine's directories the steps before the commands make (/etc/styx: "The config file").
await mkdir(join(root, 'etc', 'styx'), { recursive: true });
await mkdir(join(root, 'backup'), { recursive: true });
const clusterPort = await freePort();

const env = readerEnv([join(prefix, 'bin')], { npm_config_prefix: prefix });

/** Runs a documented command as the module comment says; `npx … styx` ones from the repository. */
function run(command: string, extra: NodeJS.ProcessEnv = {}): Promise<ShellRun> {
  const cwd = command.startsWith('npx ') || command.startsWith('npm install -g') ? REPO_ROOT : root;
  const needsNode = !/--(config|node) /.test(command);
  return runInShell(rooted(command), cwd, {
    ...env,
    ...(needsNode ? { STYX_NODE: management } : {}),
    ...extra,
  });
}

async function ok(command: string): Promise<ShellRun> {
  const ran = await run(command);
  expect({ command, code: ran.code }, ran.stdout + ran.stderr).toEqual({ command, code: 0 });
  return ran;
}

let server: Spawned | undefined;
let serverPid = 0;
let conn: amqp.Connection | undefined;
let closedWith: Error | undefined;

afterAll(async () => {
  await conn?.close().catch(() => {});
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

interface Step {
  readonly command: string;
  readonly check: (ran: ShellRun) => void | Promise<void>;
}

/** The group's commands in the order they run, each with what it must do. */
const STEPS: readonly Step[] = [
  {
    command: 'npm install -g .',
    check: () => expect(existsSync(join(prefix, 'bin', 'styx'))).toBe(true),
  },
  {
    command: "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /etc/styx/cluster-secret",
    check: async () => {
      expect(await readFile(join(root, 'etc', 'styx', 'cluster-secret'), 'utf8')).toMatch(/^[0-9a-f]{64}$/);
    },
  },
  {
    command: 'styx server --config /etc/styx/styx.conf',
    check: () => {}, // started by its own test below: it does not exit
  },
  {
    command: 'styx ctl --config /etc/styx/styx.conf cluster_status',
    check: (ran) => expect(ran.stdout).toMatch(/Running Nodes\n\n\S+/),
  },
  {
    command: `npx -y pnpm@10 styx ctl set_policy DLX ".*" '{"dead-letter-exchange":"my-dlx"}' --apply-to queues`,
    check: () => {},
  },
  {
    command:
      'npx -y pnpm@10 styx ctl list_queues name messages dead_letter_pending dead_letter_exchange policy',
    // orders.new, declared by the test, has the policy's DLX.
    check: (ran) => expect(ran.stdout).toMatch(/^orders\.new\t0\t0\tmy-dlx\tDLX$/m),
  },
  { command: 'styx ctl alarms', check: (ran) => expect(ran.stdout).toContain('Node\tResource') },
  { command: 'styx ctl list_redrives', check: (ran) => expect(ran.stdout).toContain('Listing redrives') },
  {
    command: 'styx ctl status',
    check: (ran) => expect(ran.stdout).toContain(`port: ${port}, protocol: styx`),
  },
  {
    command: 'npx -y pnpm@10 styx ctl status',
    check: (ran) => expect(ran.stdout).toContain(`OS PID: ${serverPid}`),
  },
  {
    command: 'styx ctl list_connections',
    check: (ran) => expect(ran.stdout).toMatch(/^guest\t127\.0\.0\.1\t\d+\trunning$/m),
  },
  {
    command: 'npx -y pnpm@10 styx ctl list_connections name node user vhost peer_host state channels',
    check: (ran) =>
      expect(ran.stdout).toMatch(/ -> 127\.0\.0\.1:\d+\t\S+\tguest\t\/\t127\.0\.0\.1\trunning\t1$/m),
  },
  {
    command:
      'npx -y pnpm@10 styx ctl list_channels name consumer_count messages_unacknowledged prefetch_count',
    check: (ran) => expect(ran.stdout).toMatch(/ \(1\)\t0\t0\t0$/m),
  },
  {
    command:
      'npx -y pnpm@10 styx ctl close_connection "127.0.0.1:54321 -> 127.0.0.1:5680" "moving you to another node"',
    check: async () => {
      await eventually('the connection closed', async () => closedWith !== undefined, 10_000);
      expect(String(closedWith)).toContain('moving you to another node');
    },
  },
  {
    command: 'styx backup --config /etc/styx/styx.conf --to /backup/styx-$(date +%F)',
    check: async () => {
      expect(existsSync(join(backupDir, 'lmdb', 'data.mdb'))).toBe(true);
      expect(existsSync(join(backupDir, 'node-key'))).toBe(true);
      // The next step ("Stopped: copy the data dir") names the same directory: it starts afresh.
      await rm(backupDir, { recursive: true });
      // The node itself, as systemd signals it; the shell around it then exits with its code.
      process.kill(serverPid, 'SIGTERM');
      expect((await server?.exited(30_000))?.code).toBe(0);
    },
  },
  {
    command: 'cp -a /var/lib/styx /backup/styx-$(date +%F)',
    check: async () => {
      expect((await readdir(backupDir)).sort()).toEqual(expect.arrayContaining(['lmdb', 'node-key']));
    },
  },
  {
    command: 'npm uninstall -g styx',
    check: () => expect(existsSync(join(prefix, 'bin', 'styx'))).toBe(false),
  },
];

describe('the one-node commands of the docs, run as written', () => {
  it('are the commands the table says this test runs', async () => {
    const documented = new Set(
      (await readDocCommands(REPO_ROOT))
        .filter((c) => {
          const how = ruleFor(c.command)?.how;
          return how !== undefined && 'run' in how && how.run === 'broker';
        })
        .map((c) => c.command),
    );
    expect(STEPS.map((s) => s.command).sort()).toEqual([...documented].sort());
  });

  for (const step of STEPS) {
    it(step.command, { timeout: 180_000 }, async () => {
      if (step.command.startsWith('styx server ')) {
        await startServer(step.command);
        return;
      }
      if (step.command.includes('close_connection')) {
        // The example's connection name is a placeholder: the test's connection's name goes there.
        const [name] = (await (await fetchApi('/api/connections')).json()) as { name: string }[];
        expect(name?.name).toMatch(/^127\.0\.0\.1:\d+ -> 127\.0\.0\.1:\d+$/);
        const line = step.command.replace('127.0.0.1:54321 -> 127.0.0.1:5680', name?.name as string);
        const ran = await run(line);
        expect(ran.code, ran.stdout + ran.stderr).toBe(0);
        await step.check(ran);
        return;
      }
      await step.check(await ok(step.command));
    });
  }
});

function fetchApi(path: string): Promise<Response> {
  return fetch(`${management}${path}`, {
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
  });
}

/** Writes the node's config file and starts `command` (the docs' server line) until it listens. */
async function startServer(command: string): Promise<void> {
  await writeFile(
    join(root, 'etc', 'styx', 'styx.conf'),
    [
      `data_dir = ${dataDir}`,
      `listeners.port = ${port}`,
      `management.port = ${managementPort}`,
      // No AMQP listener: its default 5672 would clash with another test's node.
      'listeners.amqp.port = 0',
      'log.format = json',
      // The secret the docs' pipeline made: the node must take it.
      `cluster.listen = 127.0.0.1:${clusterPort}`,
      `cluster.secret_file = ${join(root, 'etc', 'styx', 'cluster-secret')}`,
      '',
    ].join('\n'),
  );
  server = spawnCommand('/bin/sh', ['-c', rooted(command)], { cwd: root, env, group: true });
  const [line] = await server.waitForOutput(/^\{.*"msg":"Styx listening on [^"]*".*$/m, 60_000);
  serverPid = (JSON.parse(line) as { pid: number }).pid;
  // What the later commands look at: a queue for the policy, a connection with a channel.
  conn = await amqp.connect(`ws://127.0.0.1:${port}`);
  conn.on('close', (error?: Error) => {
    closedWith = error ?? new Error('closed without an error');
  });
  const ch = await conn.createChannel();
  await ch.assertQueue('orders.new', { durable: true });
}
