// What the real-client tests (test/clients/*.test.ts) share: a `styx server` with its AMQP 0-9-1
// listener on free loopback ports, plain and TLS (a throwaway CA made with openssl), a 3-node cluster
// with an AMQP port on every node, the client programs' locations, and the checks of their output.
// The programs themselves (python/, java/, node/) are plain pika, RabbitMQ Java client and amqplib
// programs: they take broker URLs on their command line and know nothing of Styx.
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ThrowawayPki } from '@styx/node';
import { createThrowawayPki } from '@styx/node';
import { afterAll, beforeAll, expect } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { TestCluster } from '../support/cluster-processes.ts';
import type { DebianPackage } from '../support/ensure-test-deps.ts';
import { JAVA_CLIENT, JDK, PIKA, PYTHON } from '../support/ensure-test-deps.ts';
import type { Spawned } from '../support/spawned.ts';
import { spawnCommand } from '../support/spawned.ts';

export const CLIENTS_DIR = join(REPO_ROOT, 'test', 'clients');

/** A program's JSON lines (the Python and Node programs print one JSON object a line). */
export function jsonLines(stdout: string): Record<string, unknown>[] {
  return stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** Where a test's programs connect: plain and TLS URLs (guest on loopback) and the CA to trust. */
export interface AmqpEndpoint {
  readonly url: string;
  readonly tlsUrl: string;
  readonly ca: string;
  /** A CA that did not sign the node's certificate: a client verifying with it must refuse. */
  readonly wrongCa: string;
}

/** `amqp://guest:guest@127.0.0.1:PORT` (or amqps). */
export function amqpUrl(port: number, scheme: 'amqp' | 'amqps' = 'amqp'): string {
  return `${scheme}://guest:guest@127.0.0.1:${port}`;
}

/** A single `styx server` serving AMQP 0-9-1 on a free port and amqps on another. */
export interface AmqpNode extends AmqpEndpoint {
  readonly broker: BrokerProcess;
  stop(): Promise<void>;
}

/** Starts a node with its AMQP and amqps listeners (certificate from a fresh throwaway CA). */
export async function startAmqpNode(): Promise<AmqpNode> {
  const pki = await createThrowawayPki();
  const other = await createThrowawayPki('Some Other CA');
  const cert = await pki.issue('node', 'server');
  const broker = await startBroker({
    management: true,
    amqp: true,
    extraArgs: [
      ...['--amqps-port', String(await freePort())],
      ...['--tls-cert', cert.certFile, '--tls-key', cert.keyFile, '--tls-port', '0'],
    ],
  });
  if (broker.amqpUrl === undefined || broker.amqpsUrl === undefined) {
    throw new Error(`the node did not say its AMQP and amqps URLs:\n${broker.logs.join('\n')}`);
  }
  return {
    broker,
    url: amqpUrl(Number(new URL(broker.amqpUrl).port)),
    tlsUrl: amqpUrl(Number(new URL(broker.amqpsUrl).port), 'amqps'),
    ca: pki.caFile,
    wrongCa: other.caFile,
    async stop() {
      await broker.stop();
      await broker.cleanup();
      await pki.remove();
      await other.remove();
    },
  };
}

/** A 3-node cluster (n1..n3) with an AMQP port on every node, kept across restarts. */
export interface AmqpCluster {
  readonly cluster: TestCluster;
  /** The AMQP URL of a node by name. */
  url(name: string): string;
  stop(): Promise<void>;
}

export async function startAmqpCluster(): Promise<AmqpCluster> {
  const ports: Record<string, number> = {};
  for (const name of ['n1', 'n2', 'n3']) ports[name] = await freePort();
  const cluster = await TestCluster.start(3, {
    nodeArgs: Object.fromEntries(
      Object.entries(ports).map(([name, port]) => [name, ['--amqp-port', String(port)]]),
    ),
  });
  return {
    cluster,
    url: (name) => amqpUrl(ports[name] as number),
    stop: () => cluster.stop(),
  };
}

/** A node for the enclosing describe block: started before its tests, stopped after them. */
export function useAmqpNode(): () => AmqpNode {
  let node: AmqpNode | undefined;
  beforeAll(async () => {
    node = await startAmqpNode();
  }, 60_000);
  afterAll(async () => {
    await node?.stop();
  });
  return () => node as AmqpNode;
}

/** A 3-node cluster for the enclosing describe block (started before its tests, stopped after). */
export function useAmqpCluster(): () => AmqpCluster {
  let cluster: AmqpCluster | undefined;
  beforeAll(async () => {
    cluster = await startAmqpCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => cluster as AmqpCluster;
}

/** Fails with the install hint when a Debian package the tests need is missing (never skips). */
export function requireInstalled(wanted: DebianPackage): void {
  if (!existsSync(wanted.path)) throw new Error(wanted.missing);
}

/** Debian's python3 with python3-pika, checked. */
export function pikaPython(): string {
  requireInstalled(PIKA);
  return PYTHON;
}

/** The Java programs compiled with javac into a temporary directory; its classpath and remover. */
export async function compileJavaPrograms(): Promise<{ classpath: string; remove(): Promise<void> }> {
  requireInstalled(JDK);
  requireInstalled(JAVA_CLIENT);
  const out = await mkdtemp(join(tmpdir(), 'styx-java-clients-'));
  const sources = join(CLIENTS_DIR, 'java');
  const files = (await readdir(sources))
    .filter((name) => name.endsWith('.java'))
    .map((f) => join(sources, f));
  // The client's logging API (slf4j) with its no-op binding: the programs print only their own lines.
  const libraries = [JAVA_CLIENT.path, '/usr/share/java/slf4j-api.jar', '/usr/share/java/slf4j-nop.jar'];
  const exit = await spawnCommand(
    JDK.path,
    ['-encoding', 'UTF-8', '-cp', libraries.join(':'), '-d', out, ...files],
    { cwd: sources },
  ).exited(120_000);
  expect(exit.stderr, 'javac').toBe('');
  expect(exit.code).toBe(0);
  return {
    classpath: [out, ...libraries].join(':'),
    remove: () => rm(out, { recursive: true, force: true }),
  };
}

/** What a dead letter's x-death entry and x-first-death-* headers must say (RabbitMQ's names). */
export interface ExpectedDeath {
  readonly reason: 'rejected' | 'expired' | 'maxlen' | 'delivery_limit';
  readonly queue: string;
  readonly exchange: string;
  readonly routingKeys: readonly string[];
  readonly originalExpiration?: string;
}

/** Checks a dead letter's headers (as a program printed them: JSON) against RabbitMQ's x-death. */
export function expectXDeath(headers: unknown, death: ExpectedDeath): void {
  const h = headers as Record<string, unknown>;
  expect(h['x-first-death-reason']).toBe(death.reason);
  expect(h['x-first-death-queue']).toBe(death.queue);
  expect(h['x-first-death-exchange']).toBe(death.exchange);
  const entries = h['x-death'] as Record<string, unknown>[];
  expect(entries).toHaveLength(1);
  const [entry] = entries as [Record<string, unknown>];
  expect(entry).toMatchObject({
    count: 1,
    reason: death.reason,
    queue: death.queue,
    exchange: death.exchange,
    'routing-keys': death.routingKeys,
  });
  expect(entry.time, 'x-death time').toBeDefined();
  if (death.originalExpiration === undefined) expect(entry).not.toHaveProperty('original-expiration');
  else expect(entry['original-expiration']).toBe(death.originalExpiration);
  expect(Object.keys(entry).sort()).toEqual(
    [
      'count',
      'exchange',
      'queue',
      'reason',
      'routing-keys',
      'time',
      ...(death.originalExpiration === undefined ? [] : ['original-expiration']),
    ].sort(),
  );
}

/**
 * Checks a failover program's run: it confirmed every message 0..count-1, lost its first node,
 * went on through the next one of its list, and got every confirmed message back.
 */
export function expectFailover(events: FailoverEvents, count: number, first: string, next: string): void {
  const all = Array.from({ length: count }, (_, i) => i);
  expect(events.connected[0]).toContain(first);
  expect(events.lost.length, 'the program saw its node go').toBeGreaterThanOrEqual(1);
  expect(events.connected.slice(1).every((url) => url.includes(next))).toBe(true);
  expect(events.connected.length).toBeGreaterThanOrEqual(2);
  expect([...new Set(events.confirmed)].sort((a, b) => a - b)).toEqual(all);
  expect(
    [...events.received].sort((a, b) => a - b),
    'every confirmed message came back',
  ).toEqual(all);
  expect(events.done).toBe(count);
}

/**
 * Checks the output of dead_letter.py / dead-letter.cjs (the same scenario in pika and amqplib): the
 * rejected and the expired message, dead-lettered from PREFIX.orders to PREFIX.dlx with routing key
 * dead.order, with RabbitMQ's headers. `routingKeyField`: what the program calls the routing key.
 */
export function expectDeadLetters(
  lines: Record<string, unknown>[],
  prefix: string,
  routingKeyField: 'routing_key' | 'routingKey',
): void {
  expect(lines.filter((l) => 'confirmed' in l)).toEqual([
    { confirmed: 'reject me' },
    { confirmed: 'let me expire' },
  ]);
  const dead = lines.filter((l) => 'dead' in l);
  expect(dead.map((l) => l.dead)).toEqual(['reject me', 'let me expire']);
  for (const letter of dead) {
    expect(letter).toMatchObject({
      exchange: `${prefix}.dlx`,
      [routingKeyField]: 'dead.order',
      expiration: null,
    });
  }
  const [rejected, expired] = dead as [Record<string, unknown>, Record<string, unknown>];
  const common = { queue: `${prefix}.orders`, exchange: `${prefix}.work` };
  expectXDeath(rejected.headers, { ...common, reason: 'rejected', routingKeys: ['order.created'] });
  expectXDeath(expired.headers, {
    ...common,
    reason: 'expired',
    routingKeys: ['order.expired'],
    originalExpiration: '50',
  });
  expect(lines.at(-1)).toEqual({ done: 2 });
}

/** What a failover program printed, parsed. */
export interface FailoverEvents {
  readonly connected: string[];
  readonly confirmed: number[];
  readonly lost: string[];
  readonly received: number[];
  readonly done: unknown;
}

/** The events of a failover program that prints JSON lines (failover.py, failover.cjs). */
export function failoverJsonEvents(stdout: string): FailoverEvents {
  const lines = jsonLines(stdout);
  const pick = <T>(key: string) => lines.filter((l) => key in l).map((l) => l[key] as T);
  return {
    connected: pick<string>('connected'),
    confirmed: pick<number>('confirmed'),
    lost: pick<string>('lost'),
    received: pick<number>('received'),
    done: lines.at(-1)?.done,
  };
}

/**
 * The failover scenario: `start` runs a program with node 2 then node 3 as its list; once it has
 * printed `confirmedLine` (its 31st confirm) node 2 is SIGKILLed; the program must end on its own,
 * with every confirmed message of `count` back (expectFailover).
 */
export async function runFailover(
  amqp: AmqpCluster,
  count: number,
  start: (urls: readonly string[]) => Spawned,
  confirmedLine: RegExp,
  parse: (stdout: string) => FailoverEvents,
  timeoutMs: number,
): Promise<void> {
  const run = start([amqp.url('n2'), amqp.url('n3')]);
  await run.waitForOutput(confirmedLine, timeoutMs);
  await amqp.cluster.kill('n2');
  const exit = await run.exited(timeoutMs);
  expect(exit.code, `the failover program failed:\n${exit.stdout}\n${exit.stderr}`).toBe(0);
  expectFailover(parse(exit.stdout), count, new URL(amqp.url('n2')).host, new URL(amqp.url('n3')).host);
}

export type { ThrowawayPki };
