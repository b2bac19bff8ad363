// The README's commands, read from README.md and run as written where a test can: the start command
// of "Two commands" and the CLI section's `npx -y pnpm@10 start -- --port 5690 …` example go through
// npx and pnpm exactly as a user's shell would (pnpm 10 hands the `--` on to `styx server`), with
// flags after `--` as the README says to pass them: a loopback port, a management port and a temporary
// data dir of the test's own. Each broker must take a WebSocket client and answer the management
// API, then stop cleanly on SIGTERM, the whole npx → pnpm → styx chain exiting 0. The install command
// is not run (it would rewrite the shared node_modules under the other tests), nor the test command
// (it is the run this test is part of): their text is checked, and the step the test command runs
// before vitest is run, and its branches checked against a fake machine.
//
// "Use it from TypeScript": its example, taken from the README, runs against a real broker with the
// README's command (the install's Node 24 from inside the repository), then the README's inspector,
// explain and redrive commands run on the queues it made; and the application path: the SDK packed
// with the README's command, installed with npm into a scratch project outside the repository, and
// the same example run there as example.mjs by the machine's own Node (v20 here, not node_modules'),
// with a CommonJS script reading x-death. The only change to any command or example is the
// broker's address (and a temporary directory for /tmp): the test's broker runs on free ports.
import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, REPO_ROOT, startBroker } from '../support/broker-process.ts';
import type { System } from '../support/ensure-test-deps.ts';
import {
  CHROMIUM,
  DNSMASQ,
  ensureChromium,
  ensureDnsmasq,
  ensureOpenssl,
  INSTALL_CHROMIUM,
  INSTALL_DNSMASQ,
  INSTALL_OPENSSL,
  JAVA_CLIENT,
  JDK,
  MISSING_CHROMIUM,
  MISSING_DNSMASQ,
  MISSING_OPENSSL,
  OPENSSL,
  PIKA,
} from '../support/ensure-test-deps.ts';
import { killSpawned, spawnCommand, spawnNode } from '../support/spawned.ts';

/** How the README runs pnpm, on a machine with only Node and npm. */
const PNPM = 'npx -y pnpm@10';
/** npx may have to fetch pnpm, and pnpm starts Node 24: more than a bare `node` start. */
const START_WAIT_MS = 60_000;
const DEPS_SCRIPT = join(REPO_ROOT, 'test', 'support', 'ensure-test-deps.ts');

const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
const rootScripts = (
  JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts;

/** The text of the README section under `## title`, up to the next `## `. */
function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  if (start < 0) throw new Error(`README.md has no section '## ${title}'`);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** The commands in the ```sh blocks of `text`, one per line. */
function shellCommands(text: string): string[] {
  return [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].flatMap((m) =>
    (m[1] as string).split('\n').filter((line) => line.trim() !== ''),
  );
}

const twoCommands = shellCommands(section('Two commands'));
const [installAndStart = '', testCommand = ''] = twoCommands;
/** The CLI section's example of flags passed after `--`. */
const flagsExample = /`(npx -y pnpm@10 start -- [^`]*)`/.exec(section('The CLI'))?.[1] ?? '';

/** The environment of a plain shell: without what an outer `pnpm test` set for its scripts. */
function shellEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(npm|pnpm)_/i.test(key) && key !== 'NODE'),
  );
}

const tempDirs: string[] = [];

afterAll(async () => {
  killSpawned();
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

/**
 * Runs `command` (a README line, split on spaces: none of them quotes anything) plus `extra` from the
 * repository root, in a process group of its own; waits until the broker says it listens, checks a
 * WebSocket client and the management API against it, SIGTERMs the broker and expects the whole
 * chain to exit 0 after the broker logged "stopped". Returns the broker's JSON log lines.
 */
async function runBrokerCommand(
  command: string,
  extra: (ports: { port: number; managementPort: number; dataDir: string }) => string[],
): Promise<Array<Record<string, unknown>>> {
  const dataDir = await mkdtemp(join(tmpdir(), 'styx-readme-'));
  tempDirs.push(dataDir);
  const port = await freePort();
  const managementPort = await freePort();
  const [program = '', ...words] = command.split(' ');
  const p = spawnCommand(program, [...words, ...extra({ port, managementPort, dataDir })], {
    cwd: REPO_ROOT,
    env: shellEnv(),
    group: true,
  });
  const listening = await p.waitForOutput(/^\{.*"msg":"Styx listening on [^"]*".*$/m, START_WAIT_MS);
  const announced = JSON.parse(listening[0]) as { url: string; pid: number; dataDir: string };
  expect(announced.url).toBe(`ws://127.0.0.1:${port}`);
  expect(announced.dataDir).toBe(dataDir);

  const conn = await amqp.connect(announced.url);
  const ch = await conn.createChannel();
  expect((await ch.assertQueue('readme', { durable: true })).queue).toBe('readme');
  await conn.close();
  const overview = await fetch(`http://127.0.0.1:${managementPort}/api/overview`, {
    headers: { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` },
  });
  expect(overview.status).toBe(200);
  expect(((await overview.json()) as { product_name?: unknown }).product_name).toBe('Styx');

  // The broker itself, as a supervisor would signal it: its pid is in every log line.
  process.kill(announced.pid, 'SIGTERM');
  const exit = await p.exited();
  const logs = exit.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(logs.at(-1)?.msg, exit.stdout + exit.stderr).toBe('stopped');
  expect({ code: exit.code, signal: exit.signal }, exit.stderr).toEqual({ code: 0, signal: null });
  return logs;
}

describe('README "Two commands"', () => {
  it('are the install-and-start line and the test line, both through npx and pnpm 10', () => {
    expect(twoCommands).toEqual([installAndStart, testCommand]);
    expect(installAndStart).toBe(`${PNPM} install && ${PNPM} start`);
    expect(testCommand).toBe(`${PNPM} test`);
  });

  it(
    'the start command, with flags after `--` as the README says, serves clients and the management API and stops cleanly',
    { timeout: START_WAIT_MS + 30_000 },
    async () => {
      const start = installAndStart.split(' && ')[1] ?? '';
      expect(start).toBe(`${PNPM} start`);
      await runBrokerCommand(start, ({ port, managementPort, dataDir }) => [
        '--',
        '--port',
        String(port),
        '--management-port',
        String(managementPort),
        '--data-dir',
        dataDir,
        // No AMQP listener: its default 5672 would clash with another test's node.
        '--amqp-port',
        '0',
      ]);
    },
  );
});

describe('README "The CLI": passing flags after `--`', () => {
  it(
    `${flagsExample}, on a free port, runs a broker at that log level`,
    { timeout: START_WAIT_MS + 30_000 },
    async () => {
      expect(flagsExample).toMatch(/^npx -y pnpm@10 start -- --port 5690 --log-level debug$/);
      const logs = await runBrokerCommand(flagsExample, ({ port, managementPort, dataDir }) => [
        '--management-port',
        String(managementPort),
        '--data-dir',
        dataDir,
        // The README's --port 5690 stays; a later --port wins, so the test does not take 5690.
        '--port',
        String(port),
        '--amqp-port',
        '0',
      ]);
      // pino's debug level is 20: the node logged at debug, as --log-level debug asked.
      expect(logs.some((line) => line.level === 20)).toBe(true);
    },
  );
});

describe('the test command brings what the tests need beyond npm', () => {
  it('runs test/support/ensure-test-deps.ts, then `vitest run` (pnpm appends the arguments to it)', () => {
    expect(rootScripts.test).toBe(`node ${relative(REPO_ROOT, DEPS_SCRIPT)} && vitest run`);
  });

  it('that step, with Chromium, dnsmasq, openssl, pika, the Java client and a JDK installed, does nothing and exits 0', async () => {
    // `npx -y pnpm@10 test` ran the step before vitest, so both are there; vitest run on its own
    // fails here without them (installing packages is not this test's job).
    expect(existsSync(CHROMIUM), MISSING_CHROMIUM).toBe(true);
    expect(existsSync(DNSMASQ), MISSING_DNSMASQ).toBe(true);
    expect(existsSync(OPENSSL), MISSING_OPENSSL).toBe(true);
    for (const wanted of [PIKA, JAVA_CLIENT, JDK]) expect(existsSync(wanted.path), wanted.missing).toBe(true);
    const exit = await spawnNode([DEPS_SCRIPT], { cwd: REPO_ROOT }).exited();
    expect(exit).toEqual({ code: 0, signal: null, stdout: '', stderr: '' });
  });

  /** A machine where Chromium is `present` (or appears once apt-get installs it). */
  function fakeMachine(options: { present: boolean; isRoot: boolean; aptWorks?: boolean; path?: string }) {
    let installed = options.present;
    const ran: string[] = [];
    const said: string[] = [];
    const system: System = {
      exists: (path) => path === (options.path ?? CHROMIUM) && installed,
      isRoot: options.isRoot,
      run(command, args, env) {
        ran.push(`${env.DEBIAN_FRONTEND}: ${command} ${args.join(' ')}`);
        if (options.aptWorks === false) return 100;
        if (args[0] === 'install') installed = true;
        return 0;
      },
      say: (text) => said.push(text),
    };
    return { system, ran, said };
  }

  it('does nothing when Chromium is there', () => {
    for (const isRoot of [true, false]) {
      const m = fakeMachine({ present: true, isRoot });
      expect(ensureChromium(m.system)).toBe(0);
      expect([...m.ran, ...m.said]).toEqual([]);
    }
  });

  it("as root, installs Debian's chromium with apt-get (update first, non-interactive)", () => {
    const m = fakeMachine({ present: false, isRoot: true });
    expect(ensureChromium(m.system)).toBe(0);
    expect(m.ran).toEqual([
      'noninteractive: apt-get update -qq',
      'noninteractive: apt-get install -y -qq chromium',
    ]);
  });

  it('as anyone else, says exactly what to install and fails, so the tests do not start', () => {
    const m = fakeMachine({ present: false, isRoot: false });
    expect(ensureChromium(m.system)).toBe(1);
    expect(m.ran).toEqual([]);
    expect(m.said.join('\n')).toContain(`\n  ${INSTALL_CHROMIUM}\n`);
    expect(INSTALL_CHROMIUM).toBe('sudo apt-get install chromium');
  });

  for (const [name, path, ensure, install] of [
    ['dnsmasq', DNSMASQ, ensureDnsmasq, INSTALL_DNSMASQ],
    ['openssl', OPENSSL, ensureOpenssl, INSTALL_OPENSSL],
    ...[PIKA, JAVA_CLIENT, JDK].map((p) => [p.name, p.path, p.ensure, p.install] as const),
  ] as const) {
    it(`installs Debian's ${name} the same way, or says what to install`, () => {
      const root = fakeMachine({ present: false, isRoot: true, path });
      expect(ensure(root.system)).toBe(0);
      expect(root.ran).toEqual([
        'noninteractive: apt-get update -qq',
        `noninteractive: apt-get install -y -qq ${name}`,
      ]);
      const user = fakeMachine({ present: false, isRoot: false, path });
      expect(ensure(user.system)).toBe(1);
      expect(user.said.join('\n')).toContain(`\n  ${install}\n`);
      const there = fakeMachine({ present: true, isRoot: false, path });
      expect(ensure(there.system)).toBe(0);
    });
  }

  it('fails, saying so, when apt-get does not install it', () => {
    const m = fakeMachine({ present: false, isRoot: true, aptWorks: false });
    expect(ensureChromium(m.system)).toBe(1);
    expect(m.ran).toEqual(['noninteractive: apt-get update -qq']);
    expect(m.said.join('\n')).toMatch(
      /apt-get could not install chromium[\s\S]*sudo apt-get install chromium/,
    );
  });
});

/** The README's TypeScript example (the first ```ts block of "Use it from TypeScript"). */
const example = /^```ts\n([\s\S]*?)^```$/m.exec(section('Use it from TypeScript'))?.[1] ?? '';
const [runExample = '', packCommand = '', installCommand = '', runApp = ''] = shellCommands(
  section('Use it from TypeScript'),
);

/** `text` talking to `url` where the README says the default port. */
function atBroker(text: string, url: string): string {
  expect(text).toContain("'ws://127.0.0.1:5680'");
  return text.replaceAll("'ws://127.0.0.1:5680'", `'${url}'`);
}

/** The machine's own `node`: the first on the PATH outside any node_modules. */
function machineNodeDirs(): string[] {
  return (process.env.PATH ?? '').split(':').filter((dir) => dir !== '' && !dir.includes('node_modules'));
}

describe('README "Use it from TypeScript"', () => {
  let broker: BrokerProcess;
  const EXPECTED_OUTPUT = 'order 1\ndead-lettered not an order rejected in orders.new\n';

  afterAll(async () => {
    await broker?.stop();
    await broker?.cleanup();
  });

  it(
    'the example runs as printed with the README command, dead-lettering into orders.dlq; the inspector, explain and redrive commands then work on it',
    { timeout: START_WAIT_MS + 60_000 },
    async () => {
      broker = await startBroker({ management: true });
      expect(runExample).toBe(`${PNPM} exec node example.ts`);
      // Inside the repository (its node_modules has @styx/client), in a directory of the test's own.
      const dir = await mkdtemp(join(REPO_ROOT, '.readme-example-'));
      tempDirs.push(dir);
      await writeFile(join(dir, 'example.ts'), atBroker(example, broker.url));
      const [program = '', ...words] = runExample.split(' ');
      const exit = await spawnCommand(program, words, { cwd: dir, env: shellEnv() }).exited(START_WAIT_MS);
      expect(exit.stdout, exit.stderr).toBe(EXPECTED_OUTPUT);
      expect(exit.code).toBe(0);

      // The queues the example made are the ones the later sections name.
      const lines = [
        ...shellCommands(
          readme.slice(readme.indexOf('### Dead-letter inspector'), readme.indexOf('## The web console')),
        ),
      ].filter((line) => !/\bID\b/.test(line)); // cancel_redrive ID: a placeholder
      expect(lines.length).toBeGreaterThanOrEqual(6);
      const management = broker.managementUrl as string;
      // The redrive example's `--exchange retry` names an exchange of the reader's own.
      const conn = await amqp.connect(broker.url);
      await (await conn.createChannel()).assertExchange('retry', 'direct', { durable: true });
      await conn.close();
      for (const line of lines) {
        const command = line.replaceAll('http://127.0.0.1:15680', management);
        const run = await shell(command, { STYX_NODE: management });
        expect({ line, code: run.code }, run.stdout + run.stderr).toEqual({ line, code: 0 });
        if (line.startsWith('curl')) expect(JSON.parse(run.stdout)).toMatchObject({ queue: 'orders.dlq' });
      }
    },
  );

  it(
    "an application installs the packed SDK with npm and runs the example on the machine's Node, ESM and CommonJS",
    { timeout: 240_000 },
    async () => {
      broker ??= await startBroker({ management: true });
      expect(packCommand).toBe(`${PNPM} --filter @styx/client pack --pack-destination /tmp`);
      expect(installCommand).toBe('npm install /tmp/styx-client-0.1.0.tgz');
      expect(runApp).toBe('node example.mjs');
      const packs = await mkdtemp(join(tmpdir(), 'styx-pack-'));
      const app = await mkdtemp(join(tmpdir(), 'styx-app-'));
      tempDirs.push(packs, app);
      const env = { ...shellEnv(), PATH: machineNodeDirs().join(':') };
      const run = async (line: string, cwd: string) => {
        const [program = '', ...words] = line.replaceAll('/tmp', packs).split(' ');
        const exit = await spawnCommand(program, words, { cwd, env }).exited(180_000);
        expect(exit.code, `${line}\n${exit.stdout}${exit.stderr}`).toBe(0);
        return exit;
      };
      await run(packCommand, REPO_ROOT);
      expect(existsSync(join(packs, 'styx-client-0.1.0.tgz'))).toBe(true);

      await writeFile(join(app, 'package.json'), '{ "name": "my-app", "private": true }\n');
      await run(installCommand, app);
      await writeFile(join(app, 'example.mjs'), atBroker(example, broker.url));
      const machineNode = execFileSync('sh', ['-c', 'command -v node'], { env, encoding: 'utf8' }).trim();
      expect(machineNode).not.toContain('node_modules');
      const machineVersion = execFileSync(machineNode, ['-v'], { encoding: 'utf8' }).trim();
      const ran = await run(runApp, app);
      expect(ran.stdout).toBe(EXPECTED_OUTPUT);

      await writeFile(
        join(app, 'x-death.cjs'),
        `const amqp = require('@styx/client');
(async () => {
  const conn = await amqp.connect('${broker.url}');
  const ch = await conn.createConfirmChannel();
  await ch.assertExchange('app.dlx', 'fanout', { durable: true });
  await ch.assertQueue('app.dlq', { durable: true });
  await ch.bindQueue('app.dlq', 'app.dlx', '');
  await ch.assertQueue('app.work', { durable: true, arguments: { 'x-dead-letter-exchange': 'app.dlx' } });
  ch.sendToQueue('app.work', Buffer.from('bad'), { persistent: true });
  await ch.waitForConfirms();
  ch.reject(await ch.get('app.work'), false);
  let dead = false;
  for (let i = 0; i < 200 && dead === false; i++) {
    dead = await ch.get('app.dlq', { noAck: true });
    if (dead === false) await new Promise((r) => setTimeout(r, 50));
  }
  const [death] = dead.properties.headers['x-death'];
  console.log(JSON.stringify({ node: process.version, body: dead.content.toString(), reason: death.reason, queue: death.queue, count: death.count }));
  await conn.close();
})();
`,
      );
      const cjs = await run('node x-death.cjs', app);
      expect(JSON.parse(cjs.stdout)).toEqual({
        node: machineVersion,
        body: 'bad',
        reason: 'rejected',
        queue: 'app.work',
        count: 1,
      });
    },
  );
});

/** Runs `line` in /bin/sh from the repository root with its bin/ (the styx launcher) on the PATH. */
function shell(
  line: string,
  extraEnv: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      '/bin/sh',
      ['-c', line],
      {
        cwd: REPO_ROOT,
        timeout: 60_000,
        env: { ...shellEnv(), PATH: `${join(REPO_ROOT, 'bin')}:${process.env.PATH ?? ''}`, ...extraEnv },
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}
