// Python's pika (Debian's python3-pika, 1.2) against a real `styx server`'s AMQP 0-9-1 port: the
// programs in test/clients/python/ are plain pika applications that take broker URLs on their command
// line; each runs here as a child process with a bounded time and its printed JSON lines are checked.
// Single node over TCP and TLS (pika SSLOptions with the test CA; a wrong CA must be refused), and a
// 3-node cluster: dead-lettering through a non-first node, then a publisher on node 2 with node 3
// next in its retry list, node 2 killed mid-run, and every confirmed message still there.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnCommand } from '../support/spawned.ts';
import {
  CLIENTS_DIR,
  expectDeadLetters,
  failoverJsonEvents,
  jsonLines,
  pikaPython,
  runFailover,
  useAmqpCluster,
  useAmqpNode,
} from './client-programs.ts';

const PROGRAMS = join(CLIENTS_DIR, 'python');
const RUN_MS = 60_000;

/** Starts `python3 <program>.py args…` (Debian's python3, where pika is). */
function pika(program: string, args: readonly string[]): Spawned {
  return spawnCommand(pikaPython(), [join(PROGRAMS, `${program}.py`), ...args], { cwd: PROGRAMS });
}

/** Runs a program to its end; checks it exited 0 and returns its JSON lines. */
async function runToEnd(program: string, args: readonly string[]): Promise<Record<string, unknown>[]> {
  const exit = await pika(program, args).exited(RUN_MS);
  expect(exit.code, `${program}.py failed:\n${exit.stdout}\n${exit.stderr}`).toBe(0);
  return jsonLines(exit.stdout);
}

/** Checks dead_letter.py's output (pika calls the routing key routing_key). */
function expectPikaDeadLetters(lines: Record<string, unknown>[], prefix: string): void {
  expectDeadLetters(lines, prefix, 'routing_key');
}

/** Checks confirm_consume.py's output for `count` messages. */
function expectConfirmedAndConsumed(lines: Record<string, unknown>[], count: number): void {
  const all = Array.from({ length: count }, (_, i) => i);
  expect(lines.filter((l) => 'confirmed' in l).map((l) => l.confirmed)).toEqual(all);
  expect(lines.filter((l) => 'received' in l)).toEqual(
    all.map((i) => ({ received: `message ${i}`, message_id: String(i), redelivered: false })),
  );
  expect(lines.at(-1)).toEqual({ done: count });
}

afterAll(() => killSpawned());

describe('pika against one node', () => {
  const node = useAmqpNode();

  it(
    'publishes with confirms, then consumes and acknowledges every message',
    { timeout: RUN_MS },
    async () => {
      const lines = await runToEnd('confirm_consume', [
        '--url',
        node().url,
        '--queue',
        'pika.confirms',
        '--count',
        '20',
      ]);
      expectConfirmedAndConsumed(lines, 20);
    },
  );

  it(
    'dead-letters a rejected and an expired message with x-death as RabbitMQ writes it',
    { timeout: RUN_MS },
    async () => {
      expectPikaDeadLetters(
        await runToEnd('dead_letter', ['--url', node().url, '--prefix', 'pika.tcp']),
        'pika.tcp',
      );
    },
  );

  it('does both over TLS, verifying the node against the test CA', { timeout: RUN_MS }, async () => {
    const tls = ['--url', node().tlsUrl, '--ca', node().ca];
    expectConfirmedAndConsumed(
      await runToEnd('confirm_consume', [...tls, '--queue', 'pika.tls', '--count', '5']),
      5,
    );
    expectPikaDeadLetters(await runToEnd('dead_letter', [...tls, '--prefix', 'pika.tls']), 'pika.tls');
  });

  it(
    'refuses the node over TLS with a CA that did not sign its certificate',
    { timeout: RUN_MS },
    async () => {
      const exit = await pika('confirm_consume', [
        '--url',
        node().tlsUrl,
        '--ca',
        node().wrongCa,
        '--queue',
        'pika.x',
      ]).exited(RUN_MS);
      expect(exit.code).not.toBe(0);
      expect(exit.stderr).toMatch(/CERTIFICATE_VERIFY_FAILED/);
      expect(jsonLines(exit.stdout)).toEqual([]);
    },
  );
});

/** What RabbitMQ 3.10 answers each case of refusals.py (code, and how its reply text begins). */
const REFUSALS = [
  ['passive declare of a missing queue', 404, "NOT_FOUND - no queue 'pika.ref.missing' in vhost '/'"],
  ['publish to a missing exchange', 404, "NOT_FOUND - no exchange 'pika.ref.no-such-exchange' in vhost '/'"],
  [
    'redeclare with other flags',
    406,
    "PRECONDITION_FAILED - inequivalent arg 'durable' for queue 'pika.ref.q'",
  ],
  ['ack of an unknown delivery tag', 406, 'PRECONDITION_FAILED - unknown delivery tag 99'],
  ['wrong password', 403, 'ACCESS_REFUSED - '],
] as const;

describe('pika refused as by RabbitMQ', () => {
  const node = useAmqpNode();

  it(
    'gets the reply code and the reply text RabbitMQ gives (its code name first) for each mistake',
    { timeout: RUN_MS },
    async () => {
      const lines = await runToEnd('refusals', ['--url', node().url, '--prefix', 'pika.ref']);
      expect(lines.map((l) => l.case)).toEqual(REFUSALS.map(([name]) => name));
      for (const [i, [name, code, text]] of REFUSALS.entries()) {
        const line = lines[i] as Record<string, unknown>;
        expect({ name, code: line.code }).toEqual({ name, code });
        expect((line.text as string).slice(0, text.length), name).toBe(text);
      }
      expect(lines.at(-1)?.error).toBe('ProbableAuthenticationError');
    },
  );
});

describe('pika against a 3-node cluster', () => {
  const cluster = useAmqpCluster();

  it('dead-letters through node 2 as through a single node', { timeout: RUN_MS }, async () => {
    expectPikaDeadLetters(
      await runToEnd('dead_letter', ['--url', cluster().url('n2'), '--prefix', 'pika.n2']),
      'pika.n2',
    );
  });

  it(
    'goes on through node 3 when node 2 dies mid-run, losing no confirmed message',
    { timeout: 2 * RUN_MS },
    async () => {
      const count = 100;
      const args = ['--queue', 'pika.failover', '--count', String(count)];
      await runFailover(
        cluster(),
        count,
        (urls) => pika('failover', [...urls.flatMap((url) => ['--url', url]), ...args]),
        /"confirmed": 30\b/,
        failoverJsonEvents,
        RUN_MS,
      );
    },
  );
});
