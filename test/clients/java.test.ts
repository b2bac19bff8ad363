// The RabbitMQ Java client (Debian's librabbitmq-client-java, 5.0) against a real `styx server`'s
// AMQP 0-9-1 port. test/clients/java/ holds seed 003's three scenarios (reject, message TTL and
// max-length into a dead-letter exchange), each snippet wrapped into a runnable program with its calls
// unchanged, plus two programs of ours: DeadLetterHeaders (confirms, reject, x-death field by field;
// over amqps it is the TLS check) and FailoverPublisher (a retry list across a cluster). They are
// compiled with javac into a temporary directory here and run as child processes with bounded time;
// the interactive producers get their lines on stdin as a user would type them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { managementApi } from '../support/cluster-processes.ts';
import { eventually } from '../support/eventually.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnCommand } from '../support/spawned.ts';
import type { FailoverEvents } from './client-programs.ts';
import {
  CLIENTS_DIR,
  compileJavaPrograms,
  runFailover,
  useAmqpCluster,
  useAmqpNode,
} from './client-programs.ts';

const JAVA = '/usr/bin/java';
const RUN_MS = 60_000;

let classpath: string;
let removeClasses: () => Promise<void>;

beforeAll(async () => {
  ({ classpath, remove: removeClasses } = await compileJavaPrograms());
}, 180_000);

afterAll(async () => {
  killSpawned();
  await removeClasses?.();
});

/** Starts `java <program> args…`, stdin open for the interactive producers. */
function java(program: string, args: readonly string[]): Spawned {
  return spawnCommand(JAVA, ['-cp', classpath, program, ...args], { cwd: CLIENTS_DIR, stdin: true });
}

/** One of seed 003's scenarios: its producer, its consumers, the lines typed and what must arrive. */
interface SeedScenario {
  readonly producer: string;
  /** Started in order after the producer's first prompt, each once it says it is consuming. */
  readonly consumers: readonly string[];
  readonly typed: readonly string[];
  /** Per consumer, the lines it must print (in order), nothing else. */
  readonly expected: Readonly<Record<string, readonly string[]>>;
}

/** Runs a seed scenario against `urls` (the seed's `addresses`); returns each consumer's output. */
async function runSeed(scenario: SeedScenario, urls: readonly string[]): Promise<void> {
  const producer = java(scenario.producer, urls);
  // The producer declares its exchange (and, for TTL and max-length, the queues) before it prompts.
  await producer.waitForOutput(/^> /, RUN_MS);
  const consumers: Spawned[] = [];
  for (const name of scenario.consumers) {
    const consumer = java(name, urls);
    await consumer.waitForOutput(/\[wrapper\] consuming/, RUN_MS);
    consumers.push(consumer);
  }
  for (const line of scenario.typed) producer.write(`${line}\n`);
  for (const [i, name] of scenario.consumers.entries()) {
    const consumer = consumers[i] as Spawned;
    const wanted = scenario.expected[name] ?? [];
    if (wanted.length > 0)
      await consumer.waitForOutput(new RegExp(regexpOf(wanted.at(-1) as string)), RUN_MS);
  }
  producer.write('q\n');
  const exit = await producer.exited(RUN_MS);
  expect(exit.code, `${scenario.producer}: ${exit.stderr}`).toBe(0);
  expect(exit.stderr).toBe('');
  expect(exit.stdout).toBe('> '.repeat(scenario.typed.length + 1));
  for (const [i, name] of scenario.consumers.entries()) {
    const consumer = consumers[i] as Spawned;
    expect(consumer.stderr(), name).toBe('');
    const printed = consumer
      .stdout()
      .split('\n')
      .filter((line) => line !== '');
    expect(printed, name).toEqual(['[wrapper] consuming', ...(scenario.expected[name] ?? [])]);
    await consumer.stop('SIGTERM');
  }
}

function regexpOf(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const REJECT: SeedScenario = {
  producer: 'DLProducer',
  consumers: ['NormalConsumer', 'DLConsumer'],
  typed: ['hello 1', 'hello 2'],
  expected: {
    NormalConsumer: [" [x] channel reject 'hello 1'", " [x] channel reject 'hello 2'"],
    DLConsumer: [" [x] channel Received DL message 'hello 1'", " [x] channel Received DL message 'hello 2'"],
  },
};

/** FailoverPublisher's `word value` lines, parsed. */
function failoverLineEvents(stdout: string): FailoverEvents {
  const lines = stdout.split('\n');
  const pick = (word: string) =>
    lines.filter((l) => l.startsWith(`${word} `)).map((l) => l.slice(word.length + 1));
  const done = /^done (\d+) duplicates \d+$/m.exec(stdout);
  return {
    connected: pick('connected'),
    confirmed: pick('confirmed').map(Number),
    lost: pick('lost'),
    received: pick('received').map(Number),
    done: done === null ? undefined : Number(done[1]),
  };
}

const SEVEN = ['m1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7'];

/** Checks DeadLetterHeaders' `key=value` lines for the prefix's queues. */
function expectDeadLetterHeaders(stdout: string, prefix: string): void {
  expect(stdout.split('\n').filter((line) => line !== '')).toEqual([
    'confirmed',
    'body=reject me',
    `exchange=${prefix}.dlx`,
    'routing-key=order.created',
    'x-first-death-reason=rejected',
    `x-first-death-queue=${prefix}.orders`,
    `x-first-death-exchange=${prefix}.work`,
    'x-death.size=1',
    // The Java client's types for RabbitMQ's tags: count is a long (l), strings long strings (S),
    // routing-keys an array (A), time a timestamp (T).
    'x-death[0].count=1 (Long)',
    `x-death[0].exchange=${prefix}.work (ByteArrayLongString)`,
    `x-death[0].queue=${prefix}.orders (ByteArrayLongString)`,
    'x-death[0].reason=rejected (ByteArrayLongString)',
    'x-death[0].routing-keys=[order.created] (ArrayList)',
    expect.stringMatching(/^x-death\[0\]\.time=.+ \(Date\)$/),
  ]);
}

describe('the Java client against one node', () => {
  const node = useAmqpNode();

  it(
    'seed 003, rejected messages: DLProducer, NormalConsumer rejects, DLConsumer gets them',
    { timeout: 2 * RUN_MS },
    async () => {
      await runSeed(REJECT, [node().url]);
    },
  );

  it(
    'seed 003, message TTL: MessageTTLProducer, MessageTTLConsumer gets each after 5 s',
    { timeout: 2 * RUN_MS },
    async () => {
      await runSeed(
        {
          producer: 'MessageTTLProducer',
          consumers: ['MessageTTLConsumer'],
          typed: SEVEN,
          expected: { MessageTTLConsumer: SEVEN.map((m) => ` [x] dlChannel Received '${m}'`) },
        },
        [node().url],
      );
    },
  );

  it(
    'seed 003, max length 5: the two oldest of seven are dead-lettered, five stay queued',
    { timeout: 2 * RUN_MS },
    async () => {
      await runSeed(
        {
          producer: 'QueueLengthLimitProducer',
          consumers: ['QueueLengthLimitConsumer'],
          typed: SEVEN,
          expected: {
            QueueLengthLimitConsumer: [" [x] dlChannel Received 'm1'", " [x] dlChannel Received 'm2'"],
          },
        },
        [node().url],
      );
      await eventually('length.limit.queue.test to hold 5', async () => {
        const queue = await managementApi<{ messages: number }>(
          node().broker.managementUrl,
          '/api/queues/%2F/length.limit.queue.test',
        );
        return queue.messages === 5;
      });
    },
  );

  it('reads x-death field by field after a confirmed publish and a reject', { timeout: RUN_MS }, async () => {
    const exit = await java('DeadLetterHeaders', ['java.tcp', node().url]).exited(RUN_MS);
    expect(exit.code, exit.stderr).toBe(0);
    expectDeadLetterHeaders(exit.stdout, 'java.tcp');
  });

  it('does the same over TLS, trusting the test CA only', { timeout: RUN_MS }, async () => {
    const exit = await java('DeadLetterHeaders', ['java.tls', node().tlsUrl, '--ca', node().ca]).exited(
      RUN_MS,
    );
    expect(exit.code, exit.stderr).toBe(0);
    expectDeadLetterHeaders(exit.stdout, 'java.tls');
  });

  it(
    'refuses the node over TLS with a CA that did not sign its certificate',
    { timeout: RUN_MS },
    async () => {
      const exit = await java('DeadLetterHeaders', ['java.x', node().tlsUrl, '--ca', node().wrongCa]).exited(
        RUN_MS,
      );
      expect(exit.code).not.toBe(0);
      expect(exit.stderr).toMatch(/SSLHandshakeException|PKIX path building failed/);
      expect(exit.stdout).toBe('');
    },
  );
});

describe('the Java client against a 3-node cluster', () => {
  const cluster = useAmqpCluster();

  it(
    'seed 003, rejected messages, with node 2 then node 3 as the seed’s addresses',
    { timeout: 2 * RUN_MS },
    async () => {
      await runSeed(REJECT, [cluster().url('n2'), cluster().url('n3')]);
    },
  );

  it(
    'goes on through node 3 when node 2 dies mid-run, losing no confirmed message',
    { timeout: 2 * RUN_MS },
    async () => {
      const count = 100;
      await runFailover(
        cluster(),
        count,
        (urls) => java('FailoverPublisher', ['java.failover', String(count), ...urls]),
        /^confirmed 30$/m,
        failoverLineEvents,
        RUN_MS,
      );
    },
  );
});
