// amqplib's own example programs (the RabbitMQ tutorials and a few more), run against a real Styx
// node as separate Node processes. Each program is copied UNCHANGED except for its import:
// `require('amqplib')` (or `require('../')`, `require('../..')`, the examples' way of loading the
// package they ship in) becomes a require of test/support/amqplib-shim.ts, which is @styx/client with
// connect() pointing a port-less `amqp://localhost` (or no URL) at the test broker's port. That
// stands in for "RabbitMQ on localhost:5672", which is what the examples assume. rpc_client.js also
// requires the `uuid` package, which is not installed here; test/support/uuid-shim.ts gives the
// same v4() from node:crypto.
//
// The shim is TypeScript ESM and the examples are CommonJS: this relies on Node 24 loading .ts files
// (type stripping) and on require() of ES modules, both on by default; the first test checks it.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { REPO_ROOT, startBroker } from '../support/broker-process.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';

const EXAMPLES = join(REPO_ROOT, 'test', 'node_modules', 'amqplib', 'examples');
const SHIM = join(REPO_ROOT, 'test', 'support', 'amqplib-shim.ts');
const UUID_SHIM = join(REPO_ROOT, 'test', 'support', 'uuid-shim.ts');

/** The requires the examples use to load amqplib: `require('amqplib')`, `require('../')`, `require('../..')`. */
const AMQPLIB_REQUIRE = /require\((['"])(?:amqplib|\.\.\/|\.\.\/\.\.)\1\)/g;
const UUID_REQUIRE = /require\((['"])uuid\1\)/g;

describe("amqplib's example programs against Styx", () => {
  let broker: BrokerProcess;
  let workDir: string;

  beforeAll(async () => {
    broker = await startBroker();
    workDir = await mkdtemp(join(tmpdir(), 'styx-amqplib-examples-'));
  });

  afterAll(async () => {
    killSpawned();
    if (broker !== undefined) {
      await broker.stop();
      await broker.cleanup();
    }
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  /** Copies examples/<path> into the work dir with only its amqplib (and uuid) require replaced. */
  async function prepare(path: string): Promise<string> {
    const source = await readFile(join(EXAMPLES, path), 'utf8');
    const amqplibRequires = source.match(AMQPLIB_REQUIRE) ?? [];
    expect(amqplibRequires, `${path} loads amqplib exactly once`).toHaveLength(1);
    const patched = source
      .replace(AMQPLIB_REQUIRE, `require(${JSON.stringify(SHIM)})`)
      .replace(UUID_REQUIRE, `require(${JSON.stringify(UUID_SHIM)})`);
    // Nothing but those requires changed: every other line is the original's.
    const before = source.split('\n');
    const after = patched.split('\n');
    expect(after).toHaveLength(before.length);
    const changed = before.filter((line, i) => line !== after[i]);
    expect(changed.filter((line) => !/require\(/.test(line))).toEqual([]);
    // .cjs: the work dir has no package.json, but say CommonJS explicitly, as the examples are.
    const target = join(workDir, `${path.replaceAll('/', '_').replace(/\.js$/, '')}.cjs`);
    await writeFile(target, patched);
    return target;
  }

  /** Starts an example program with arguments. */
  async function example(path: string, ...args: string[]): Promise<Spawned> {
    const file = await prepare(path);
    return spawnNode([file, ...args], {
      cwd: workDir,
      env: { ...process.env, STYX_TEST_PORT: String(broker.port) },
    });
  }

  /** Runs a program that ends by itself (a producer) and checks it exited 0 without complaint. */
  async function runToEnd(path: string, ...args: string[]): Promise<string> {
    const exit = await (await example(path, ...args)).exited();
    expect(exit.stderr, `${path} printed to stderr`).toBe('');
    expect(exit.code, `${path} exit code`).toBe(0);
    return exit.stdout;
  }

  /** SIGINTs a long-running example (they close their connection on SIGINT) and checks a clean exit. */
  async function interrupt(p: Spawned): Promise<string> {
    const exit = await p.stop('SIGINT');
    expect(exit.stderr).toBe('');
    expect(exit.code).toBe(0);
    return exit.stdout;
  }

  it('Node loads the TypeScript ESM SDK through require() (the shim the examples use)', async () => {
    const probe = join(workDir, 'probe.cjs');
    await writeFile(
      probe,
      `const amqp = require(${JSON.stringify(SHIM)});\n` +
        'console.log(JSON.stringify({ requireModule: process.features.require_module, ' +
        'connect: typeof amqp.connect, credentials: typeof amqp.credentials.plain }));\n',
    );
    const exit = await spawnNode([probe], { cwd: workDir }).exited();
    expect(exit.stderr).toBe('');
    expect(JSON.parse(exit.stdout)).toEqual({
      requireModule: true,
      connect: 'function',
      credentials: 'function',
    });
  });

  it('tutorial 1, hello world: send.js → receive.js', async () => {
    const receiver = await example('tutorials/receive.js');
    await receiver.waitForOutput(/Waiting for messages/);
    expect(await runToEnd('tutorials/send.js')).toBe(" [x] Sent 'Hello World!'\n");
    await receiver.waitForOutput(/ \[x\] Received 'Hello World!'/);
    await interrupt(receiver);
  });

  it('tutorial 2, work queues: new_task.js → two worker.js with prefetch 1 share the tasks', async () => {
    const workers = [await example('tutorials/worker.js'), await example('tutorials/worker.js')];
    for (const w of workers) await w.waitForOutput(/Waiting for messages/);
    // The first task takes 5 s (worker.js sleeps one second per dot). With prefetch 1 its worker
    // takes nothing else meanwhile, so the three quick tasks sent while it works must all go to the
    // other worker.
    const slowTask = 'First task.....';
    const quickTasks = ['Second task', 'Third task', 'Fourth task'];
    expect(await runToEnd('tutorials/new_task.js', slowTask)).toBe(` [x] Sent '${slowTask}'\n`);
    // Promise.any: the worker that did not get it rejects later (on exit), which must not go unhandled.
    const slowIndex = await Promise.any(
      workers.map((w, i) => w.waitForOutput(/ \[x\] Received 'First task\.{5}'/).then(() => i)),
    );
    const outputs = await Promise.all(quickTasks.map((task) => runToEnd('tutorials/new_task.js', task)));
    expect(outputs.sort()).toEqual(quickTasks.map((task) => ` [x] Sent '${task}'\n`).sort());
    const received = (w: Spawned) => [...w.stdout().matchAll(/ \[x\] Received '([^']*)'/g)].map((m) => m[1]);
    const slow = workers[slowIndex] as Spawned;
    const other = workers[1 - slowIndex] as Spawned;
    // Every task is received and acknowledged ("Done") before the workers are stopped.
    for (let waited = 0; ; waited += 50) {
      const done = workers.map((w) => w.stdout().match(/ \[x\] Done/g)?.length ?? 0);
      if (done[slowIndex] === 1 && done[1 - slowIndex] === quickTasks.length) break;
      if (waited > 15_000)
        throw new Error(`workers did not finish: ${workers.map((w) => w.stdout()).join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(received(slow)).toEqual([slowTask]);
    expect(received(other).sort()).toEqual([...quickTasks].sort());
    for (const w of workers) await interrupt(w);
  });

  it('tutorial 3, publish/subscribe: emit_log.js → two receive_logs.js (fanout, server-named exclusive queues)', async () => {
    const receivers = [
      await example('tutorials/receive_logs.js'),
      await example('tutorials/receive_logs.js'),
    ];
    for (const r of receivers) await r.waitForOutput(/Waiting for logs/);
    await runToEnd('tutorials/emit_log.js', 'info:', 'to', 'everyone');
    for (const r of receivers) await r.waitForOutput(/ \[x\] 'info: to everyone'/);
    for (const r of receivers) await interrupt(r);
  });

  it('tutorial 4, routing: emit_log_direct.js → receive_logs_direct.js bound to one severity', async () => {
    const errors = await example('tutorials/receive_logs_direct.js', 'error');
    await errors.waitForOutput(/Waiting for logs/);
    await runToEnd('tutorials/emit_log_direct.js', 'info', 'not for you');
    await runToEnd('tutorials/emit_log_direct.js', 'error', 'disk full');
    await errors.waitForOutput(/ \[x\] error:'disk full'/);
    // Publishes from separate runs reach the queue in run order, so 'info' would have come first.
    expect(await interrupt(errors)).not.toMatch(/not for you/);
  });

  it('tutorial 5, topics: emit_log_topic.js → receive_logs_topic.js with * and # patterns', async () => {
    const kernel = await example('tutorials/receive_logs_topic.js', 'kern.*', '*.critical');
    const all = await example('tutorials/receive_logs_topic.js', '#');
    await kernel.waitForOutput(/Waiting for logs/);
    await all.waitForOutput(/Waiting for logs/);
    await runToEnd('tutorials/emit_log_topic.js', 'cron.info', 'nightly job ran');
    await runToEnd('tutorials/emit_log_topic.js', 'kern.critical', 'A critical kernel error');
    await runToEnd('tutorials/emit_log_topic.js', 'auth.critical', 'login storm');
    await kernel.waitForOutput(/ \[x\] auth\.critical:'login storm'/);
    await all.waitForOutput(/ \[x\] auth\.critical:'login storm'/);
    const kernelSaw = await interrupt(kernel);
    const allSaw = await interrupt(all);
    // Matching one routing key against two patterns delivers it once.
    expect(kernelSaw.match(/ \[x\] .*/g)).toEqual([
      " [x] kern.critical:'A critical kernel error'",
      " [x] auth.critical:'login storm'",
    ]);
    expect(allSaw.match(/ \[x\] .*/g)).toEqual([
      " [x] cron.info:'nightly job ran'",
      " [x] kern.critical:'A critical kernel error'",
      " [x] auth.critical:'login storm'",
    ]);
  });

  it('tutorial 6, RPC: rpc_client.js asks rpc_server.js for fib(30) with reply_to and correlation_id', async () => {
    const server = await example('tutorials/rpc_server.js');
    await server.waitForOutput(/Awaiting RPC requests/);
    const out = await runToEnd('tutorials/rpc_client.js', '30');
    expect(out).toBe(' [x] Requesting fib(30)\n [.] Got 832040\n');
    await server.waitForOutput(/ \[\.\] fib\(30\)/);
    await interrupt(server);
  });

  it('waitForConfirms.js: 20 publishes to amq.topic on a confirm channel, all confirmed', async () => {
    expect(await runToEnd('waitForConfirms.js')).toBe('All messages done\n');
  });

  it('headers.js: an x-match=any binding gets the two matching messages, not the third', async () => {
    const p = await example('headers.js');
    await p.waitForOutput(/To exit press CTRL\+C/);
    await p.waitForOutput(/^hello\n(?:.*\n)*hello\n/m);
    // 'lost' was published right after them on the same channel: give it time to show up if routed.
    await new Promise((r) => setTimeout(r, 500));
    const out = await interrupt(p);
    // The unmatched message was published after the two matching ones, on the same channel.
    expect(out.split('\n').filter((line) => line === 'hello' || line === 'lost')).toEqual(['hello', 'hello']);
  });
});
