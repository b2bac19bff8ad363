// The `styx` command line as an operator meets it: help, usage errors (exit 2; a leading `--`, as
// pnpm 10 hands it on, is not one), a busy port and a data dir already in use (exit 1, with a message
// that says so), clean stops on SIGTERM and SIGINT (exit 0, "stopped" logged, the data dir free
// again), and JSON log lines when stdout is not a TTY.
import { mkdtemp, rm } from 'node:fs/promises';
import type { Server } from 'node:net';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import type { Exit, Spawned } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';

const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');
/**
 * Nodes started here turn the management API off: its default port (15680) is one fixed port, and
 * test files run in parallel.
 */
// Only the WebSocket listener, on the port a test gives: no management, no AMQP (its default 5672
// would clash between tests running side by side).
const WS_ONLY = ['--management-port', '0', '--amqp-port', '0'];

const tempDirs: string[] = [];

/** Starts `styx args…`. Its stdio is piped, so stdout is not a TTY. */
function start(args: readonly string[]): Spawned {
  return spawnNode([CLI, ...args], { cwd: REPO_ROOT });
}

/** Runs `styx args…` to completion (bounded). */
function run(args: readonly string[]): Promise<Exit> {
  return start(args).exited();
}

/** Waits (bounded) until the node has logged its "Styx listening" line; returns the URL. */
async function listening(p: Spawned): Promise<string> {
  const match = await p.waitForOutput(/^.*"msg":"Styx listening on [^"]*".*$/m);
  return String((JSON.parse(match[0]) as { url?: unknown }).url);
}

/** Every complete line of `text` parsed as JSON; throws naming the first line that is not JSON. */
function jsonLines(text: string): Array<Record<string, unknown>> {
  const lines = text.split('\n');
  lines.pop(); // the unfinished last line (or the empty string after the final newline)
  return lines.map((line) => {
    try {
      return JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new Error(`log line is not JSON: ${line}`);
    }
  });
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'styx-cli-'));
  tempDirs.push(dir);
  return dir;
}

afterAll(async () => {
  killSpawned();
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

describe('styx --help and usage errors', () => {
  it('styx --help prints the usage and exits 0', async () => {
    const r = await run(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: styx <command> \[options\]/);
    expect(r.stdout).toMatch(/server\s+run a broker node/);
  });

  it('styx server --help prints every server option and exits 0', async () => {
    const r = await run(['server', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: styx server \[options\]/);
    for (const flag of [
      '--data-dir',
      '--host',
      '--port',
      '--log-level',
      '--log-format',
      '--heartbeat',
      '--cluster-listen',
      '--join',
      '--node-name',
      '--cluster-secret-file',
    ]) {
      expect(r.stdout).toContain(flag);
    }
  });

  it('no command prints the usage and exits 2', async () => {
    const r = await run([]);
    expect(r.code).toBe(2);
    expect(r.stdout).toMatch(/Usage: styx/);
  });

  it('an unknown command exits 2 and names it', async () => {
    const r = await run(['serve']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command 'serve'/);
  });

  it('an unknown flag exits 2, names the flag and shows the usage', async () => {
    const r = await run(['server', '--no-such-flag']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^styx server: .*'--no-such-flag'/);
    expect(r.stderr).toMatch(/Usage: styx server/);
    expect(r.stdout).toBe('');
  });

  it.each([
    [['--', '--help'], /^Usage: styx <command>/],
    [['--', 'server', '--help'], /^Usage: styx server/],
    [['server', '--', '--help'], /^Usage: styx server/],
    [['ctl', '--', '--help'], /^Usage: styx ctl/],
  ])('a leading `--` (pnpm 10 hands it on) is dropped: styx %j exits 0', async (args, usage) => {
    const r = await run(args);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(usage);
  });

  it.each([
    [['server', '--', '--no-such-flag'], /'--no-such-flag'/],
    [['server', '--', 'stray'], /'stray'/],
    [['server', '--', '--port', '0', '--', '--help'], /'--help'/],
    [['server', 'stray'], /'stray'/],
  ])('server %j is still a usage error, exit 2', async (args, message) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/Usage: styx server/);
  });

  it.each([
    [['--port', 'eighty'], /--port must be a whole number, got 'eighty'/],
    [['--port', '70000'], /--port must be between 0 and 65535, got 70000/],
    [['--log-level', 'loud'], /--log-level must be one of .*got 'loud'/],
    [['--log-format', 'xml'], /--log-format must be pretty or json, got 'xml'/],
    [['--heartbeat', '-1'], /--heartbeat/],
    [['--port'], /--port/],
    [['--cluster-listen', 'node-a'], /--cluster-listen: 'node-a' is not HOST:PORT/],
    [['--join', 'node-a:25680'], /--join needs --cluster-listen HOST:PORT/],
  ])('server %j exits 2 with a message', async (args, message) => {
    const r = await run(['server', ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr).toMatch(/Usage: styx server/);
  });
});

describe('styx server refusing to start', () => {
  let busy: Server | undefined;
  afterAll(async () => {
    await new Promise<void>((resolve) => (busy ? busy.close(() => resolve()) : resolve()));
  });

  it('a busy port exits 1 and says the port is in use', async () => {
    busy = createServer();
    const port = await new Promise<number>((resolve, reject) => {
      busy?.once('error', reject);
      busy?.listen(0, '127.0.0.1', () => {
        const address = busy?.address();
        resolve(typeof address === 'object' && address !== null ? address.port : 0);
      });
    });
    const dataDir = await tempDir();
    const r = await run([
      'server',
      '--host',
      '127.0.0.1',
      '--port',
      String(port),
      ...WS_ONLY,
      '--data-dir',
      dataDir,
    ]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`port 127.0.0.1:${port} is already in use`);
  });

  it('a second node on the same data dir is refused, naming the process that holds it', async () => {
    const first = await startBroker();
    try {
      const r = await run([
        'server',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        ...WS_ONLY,
        '--data-dir',
        first.dataDir,
      ]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`data directory ${first.dataDir} is in use by process ${first.child.pid}`);
      // The refused node must not have disturbed the first one.
      const conn = await amqp.connect(first.url);
      await conn.close();
    } finally {
      await first.stop();
      await first.cleanup();
    }
  });
});

describe('styx server stopping', () => {
  it('SIGTERM stops it cleanly: clients are told (320), exit 0, "stopped" logged, data dir free again', async () => {
    const broker: BrokerProcess = await startBroker();
    try {
      const conn = await amqp.connect(broker.url);
      const closed = new Promise<Error | undefined>((resolve) => conn.once('close', resolve));
      expect(await broker.stop()).toBe(0);
      const why = await closed;
      expect(String(why)).toMatch(/320|CONNECTION.FORCED|shutting down/);
      // 'exit' may come before the last lines are read from the pipe: wait for them (bounded).
      const messages = () => broker.logs.map((line) => (JSON.parse(line) as { msg?: string }).msg);
      for (let waited = 0; !messages().includes('stopped') && waited < 5000; waited += 25) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(messages()).toContain('shutting down');
      expect(messages().at(-1)).toBe('stopped');
      // The lock is released: the same data dir starts again.
      const again = await startBroker({ dataDir: broker.dataDir });
      expect(await again.stop()).toBe(0);
    } finally {
      await broker.kill();
      await broker.cleanup();
    }
  });

  it('SIGINT stops it cleanly too; without --log-format and with a piped stdout every log line is JSON', async () => {
    const dataDir = await tempDir();
    const p = start(['server', '--host', '127.0.0.1', '--port', '0', ...WS_ONLY, '--data-dir', dataDir]);
    const url = await listening(p);
    expect(url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    p.child.kill('SIGINT');
    const r = await p.exited();
    expect(r.code).toBe(0);
    expect(r.stdout.endsWith('\n')).toBe(true);
    const lines = jsonLines(r.stdout);
    for (const line of lines) {
      expect(typeof line.level).toBe('number');
      expect(typeof line.time).toBe('number');
      expect(typeof line.msg).toBe('string');
    }
    expect(lines.find((l) => l.msg === 'shutting down')?.signal).toBe('SIGINT');
    expect(lines.at(-1)?.msg).toBe('stopped');
    expect(r.stderr).toBe('');
  });
});
