// amqplib (the npm package, a dependency of test/) against a real `styx server`'s AMQP 0-9-1 port.
// First amqplib's own tutorial programs (examples/tutorials/, the RabbitMQ tutorials as amqplib ships
// them), copied with only their broker URL changed: `amqp://localhost` becomes the test node's
// `amqp://guest:guest@127.0.0.1:PORT`. Two of them load amqplib as `require('../..')`, the package
// they ship in (their package.json names it "amqplib": "../.."): the copies say `require('amqplib')`,
// the same package, found through NODE_PATH. rpc_client.js requires `uuid`, not installed here:
// test/support/uuid-shim.ts gives the same v4(). (test/integration/amqplib-examples.test.ts runs
// these programs through the WebSocket SDK; here they are real amqplib over AMQP.)
// Then programs of ours in test/clients/node/ (plain amqplib): dead-lettering with x-death over TCP
// and TLS, and a publisher with a retry list across a 3-node cluster that loses node 2 mid-run.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';
import {
  CLIENTS_DIR,
  expectDeadLetters,
  failoverJsonEvents,
  jsonLines,
  runFailover,
  useAmqpCluster,
  useAmqpNode,
} from './client-programs.ts';

const TUTORIALS = join(REPO_ROOT, 'test', 'node_modules', 'amqplib', 'examples', 'tutorials');
const NODE_MODULES = join(REPO_ROOT, 'test', 'node_modules');
const UUID_SHIM = join(REPO_ROOT, 'test', 'support', 'uuid-shim.ts');
const PROGRAMS = join(CLIENTS_DIR, 'node');
const RUN_MS = 30_000;

afterAll(() => killSpawned());

/** Runs one of our programs (test/clients/node/) to its end; checks it exited 0; its JSON lines. */
async function runOurs(program: string, args: readonly string[]): Promise<Record<string, unknown>[]> {
  const exit = await spawnNode([join(PROGRAMS, program), ...args], { cwd: PROGRAMS }).exited(RUN_MS);
  expect(exit.code, `${program} failed:\n${exit.stdout}\n${exit.stderr}`).toBe(0);
  return jsonLines(exit.stdout);
}

/** Checks dead-letter.cjs's output, and amqplib's own form of the x-death time. */
function expectAmqplibDeadLetters(lines: Record<string, unknown>[], prefix: string): void {
  expectDeadLetters(lines, prefix, 'routingKey');
  // amqplib decodes an AMQP timestamp (T) as {"!": "timestamp", value: seconds}.
  const [rejected] = lines.filter((l) => 'dead' in l) as [Record<string, unknown>];
  const [death] = (rejected.headers as { 'x-death': Record<string, unknown>[] })['x-death'];
  expect(death?.time).toMatchObject({ '!': 'timestamp', value: expect.any(Number) });
}

describe("amqplib's tutorial programs against one node", () => {
  const node = useAmqpNode();
  let workDir: string;

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'styx-amqplib-tutorials-'));
  });

  afterAll(async () => {
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  /** Starts tutorials/<file> with only its URL changed (and the two loads described above). */
  async function tutorial(file: string, ...args: string[]): Promise<Spawned> {
    const source = await readFile(join(TUTORIALS, file), 'utf8');
    expect(source.match(/'amqp:\/\/localhost'/g), `${file} connects once to amqp://localhost`).toHaveLength(
      1,
    );
    const copy = source
      .replace("'amqp://localhost'", `'${node().url}'`)
      .replace("require('../..')", "require('amqplib')")
      .replace("require('uuid')", `require(${JSON.stringify(UUID_SHIM)})`);
    const target = join(workDir, file.replace(/\.js$/, '.cjs'));
    await writeFile(target, copy);
    return spawnNode([target, ...args], { cwd: workDir, env: { ...process.env, NODE_PATH: NODE_MODULES } });
  }

  /** Runs a tutorial that ends by itself; it must print exactly `expected` and nothing on stderr. */
  async function runToEnd(file: string, args: readonly string[], expected: string): Promise<void> {
    const exit = await (await tutorial(file, ...args)).exited(RUN_MS);
    // The tutorials catch their errors and print them with console.warn (stderr), exiting 0.
    expect(exit.stderr, `${file} printed to stderr`).toBe('');
    expect(exit.code).toBe(0);
    expect(exit.stdout).toBe(expected);
  }

  /** Starts a long-running tutorial and waits for its ready line. */
  async function startWaiting(file: string, args: readonly string[], ready: RegExp): Promise<Spawned> {
    const program = await tutorial(file, ...args);
    await program.waitForOutput(ready, RUN_MS);
    return program;
  }

  /** Stops a long-running tutorial as its README says (Ctrl+C): it closes and exits 0; its output. */
  async function interrupt(program: Spawned): Promise<string> {
    const exit = await program.stop('SIGINT', RUN_MS);
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    return exit.stdout;
  }

  it('1 "Hello World!": send.js to receive.js', { timeout: RUN_MS }, async () => {
    const receiver = await startWaiting('receive.js', [], /Waiting for messages/);
    await runToEnd('send.js', [], " [x] Sent 'Hello World!'\n");
    await receiver.waitForOutput(/Received 'Hello World!'/, RUN_MS);
    expect(await interrupt(receiver)).toBe(
      " [*] Waiting for messages. To exit press CTRL+C\n [x] Received 'Hello World!'\n",
    );
  });

  it(
    '2 work queues: new_task.js to worker.js, prefetch 1, acked when done',
    { timeout: RUN_MS },
    async () => {
      const worker = await startWaiting('worker.js', [], /Waiting for messages/);
      await runToEnd('new_task.js', ['First', 'task.'], " [x] Sent 'First task.'\n");
      await runToEnd('new_task.js', ['Second'], " [x] Sent 'Second'\n");
      await worker.waitForOutput(/Received 'Second'\n \[x\] Done\n/, RUN_MS);
      expect(await interrupt(worker)).toBe(
        " [*] Waiting for messages. To exit press CTRL+C\n [x] Received 'First task.'\n [x] Done\n" +
          " [x] Received 'Second'\n [x] Done\n",
      );
    },
  );

  it('3 publish/subscribe: emit_log.js to two receive_logs.js', { timeout: RUN_MS }, async () => {
    const receivers = [
      await startWaiting('receive_logs.js', [], /Waiting for logs/),
      await startWaiting('receive_logs.js', [], /Waiting for logs/),
    ];
    await runToEnd('emit_log.js', ['info: hello'], " [x] Sent 'info: hello'\n");
    for (const receiver of receivers) {
      await receiver.waitForOutput(/ \[x\] 'info: hello'/, RUN_MS);
      expect(await interrupt(receiver)).toMatch(/ \[x\] 'info: hello'\n$/);
    }
  });

  it(
    '4 routing: emit_log_direct.js reaches only the receive_logs_direct.js bound to its severity',
    { timeout: RUN_MS },
    async () => {
      const errors = await startWaiting('receive_logs_direct.js', ['error'], /Waiting for logs/);
      const all = await startWaiting(
        'receive_logs_direct.js',
        ['info', 'warning', 'error'],
        /Waiting for logs/,
      );
      await runToEnd('emit_log_direct.js', ['warning', 'Run.'], " [x] Sent warning:'Run.'\n");
      await runToEnd('emit_log_direct.js', ['error', 'Boom.'], " [x] Sent error:'Boom.'\n");
      await all.waitForOutput(/error:'Boom\.'/, RUN_MS);
      await errors.waitForOutput(/error:'Boom\.'/, RUN_MS);
      expect(await interrupt(all)).toMatch(/ \[x\] warning:'Run\.'\n \[x\] error:'Boom\.'\n$/);
      expect(await interrupt(errors)).toMatch(/Waiting for logs[^\n]*\n \[x\] error:'Boom\.'\n$/);
    },
  );

  it('5 topics: emit_log_topic.js to receive_logs_topic.js by pattern', { timeout: RUN_MS }, async () => {
    const kernel = await startWaiting('receive_logs_topic.js', ['kern.*'], /Waiting for logs/);
    const critical = await startWaiting('receive_logs_topic.js', ['*.critical'], /Waiting for logs/);
    await runToEnd(
      'emit_log_topic.js',
      ['kern.critical', 'A critical kernel error'],
      " [x] Sent kern.critical:'A critical kernel error'\n",
    );
    await runToEnd('emit_log_topic.js', ['cron.info', 'tick'], " [x] Sent cron.info:'tick'\n");
    await runToEnd('emit_log_topic.js', ['kern.info', 'boot'], " [x] Sent kern.info:'boot'\n");
    await kernel.waitForOutput(/kern\.info:'boot'/, RUN_MS);
    await critical.waitForOutput(/kern\.critical/, RUN_MS);
    expect(await interrupt(kernel)).toMatch(
      /Waiting for logs[^\n]*\n \[x\] kern\.critical:'A critical kernel error'\n \[x\] kern\.info:'boot'\n$/,
    );
    expect(await interrupt(critical)).toMatch(
      /Waiting for logs[^\n]*\n \[x\] kern\.critical:'A critical kernel error'\n$/,
    );
  });

  it('6 RPC: rpc_client.js gets fib(30) from rpc_server.js', { timeout: RUN_MS }, async () => {
    const server = await startWaiting('rpc_server.js', [], /Awaiting RPC requests/);
    await runToEnd('rpc_client.js', ['30'], ' [x] Requesting fib(30)\n [.] Got 832040\n');
    expect(await interrupt(server)).toBe(' [x] Awaiting RPC requests. To exit press CTRL+C.\n [.] fib(30)\n');
  });
});

describe('amqplib programs of ours against one node', () => {
  const node = useAmqpNode();

  it(
    'dead-letters a rejected and an expired message with x-death as RabbitMQ writes it',
    { timeout: RUN_MS },
    async () => {
      expectAmqplibDeadLetters(
        await runOurs('dead-letter.cjs', ['--url', node().url, '--prefix', 'amqplib.tcp']),
        'amqplib.tcp',
      );
    },
  );

  it('does the same over TLS (amqps://, the test CA as `ca`)', { timeout: RUN_MS }, async () => {
    const lines = await runOurs('dead-letter.cjs', [
      '--url',
      node().tlsUrl,
      '--ca',
      node().ca,
      '--prefix',
      'amqplib.tls',
    ]);
    expectAmqplibDeadLetters(lines, 'amqplib.tls');
  });

  it(
    'refuses the node over TLS with a CA that did not sign its certificate',
    { timeout: RUN_MS },
    async () => {
      const exit = await spawnNode(
        [
          join(PROGRAMS, 'dead-letter.cjs'),
          '--url',
          node().tlsUrl,
          '--ca',
          node().wrongCa,
          '--prefix',
          'amqplib.x',
        ],
        { cwd: PROGRAMS },
      ).exited(RUN_MS);
      expect(exit.code).toBe(1);
      expect(exit.stderr).toMatch(
        /self[- ]signed certificate|unable to verify|UNABLE_TO_VERIFY_LEAF_SIGNATURE/i,
      );
      expect(exit.stdout).toBe('');
    },
  );
});

describe('amqplib against a 3-node cluster', () => {
  const cluster = useAmqpCluster();

  it('dead-letters through node 2 as through a single node', { timeout: RUN_MS }, async () => {
    expectAmqplibDeadLetters(
      await runOurs('dead-letter.cjs', ['--url', cluster().url('n2'), '--prefix', 'amqplib.n2']),
      'amqplib.n2',
    );
  });

  it(
    'goes on through node 3 when node 2 dies mid-run, losing no confirmed message',
    { timeout: 4 * RUN_MS },
    async () => {
      const count = 100;
      const args = ['--queue', 'amqplib.failover', '--count', String(count)];
      const program = join(PROGRAMS, 'failover.cjs');
      await runFailover(
        cluster(),
        count,
        (urls) => spawnNode([program, ...urls.flatMap((url) => ['--url', url]), ...args], { cwd: PROGRAMS }),
        /\{"confirmed":30\}/,
        failoverJsonEvents,
        2 * RUN_MS,
      );
    },
  );
});
