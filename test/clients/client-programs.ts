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
import { expect } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { TestCluster } from '../support/cluster-processes.ts';
import {
  AMQP_CLIENT_JAR,
  JAVAC,
  MISSING_JAVA_CLIENT,
  MISSING_JDK,
  MISSING_PIKA,
  PIKA,
  PYTHON,
} from '../support/ensure-test-deps.ts';
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

/** Fails with the install hint when a Debian package the tests need is missing (never skips). */
export function requireInstalled(path: string, missing: string): void {
  if (!existsSync(path)) throw new Error(missing);
}

/** Debian's python3 with python3-pika, checked. */
export function pikaPython(): string {
  requireInstalled(PIKA, MISSING_PIKA);
  return PYTHON;
}

/** The Java programs compiled with javac into a temporary directory; its classpath and remover. */
export async function compileJavaPrograms(): Promise<{ classpath: string; remove(): Promise<void> }> {
  requireInstalled(JAVAC, MISSING_JDK);
  requireInstalled(AMQP_CLIENT_JAR, MISSING_JAVA_CLIENT);
  const out = await mkdtemp(join(tmpdir(), 'styx-java-clients-'));
  const sources = join(CLIENTS_DIR, 'java');
  const files = (await readdir(sources))
    .filter((name) => name.endsWith('.java'))
    .map((f) => join(sources, f));
  // The client's logging API (slf4j) with its no-op binding: the programs print only their own lines.
  const libraries = [AMQP_CLIENT_JAR, '/usr/share/java/slf4j-api.jar', '/usr/share/java/slf4j-nop.jar'];
  const exit = await spawnCommand(
    JAVAC,
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
export function expectFailover(
  events: { connected: string[]; confirmed: number[]; lost: string[]; received: number[]; done: unknown },
  count: number,
  first: string,
  next: string,
): void {
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

export type { ThrowawayPki };
