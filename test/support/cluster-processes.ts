/**
 * A Styx cluster of real `styx server` processes on loopback for multi-process tests: the first
 * node forms it, the others join through it. Nodes can be SIGKILLed, paused (SIGSTOP) and resumed,
 * and restarted with their data dir. Every process and the temp dir are removed by `stop()`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, beforeAll } from 'vitest';
import type { BrokerProcess } from './broker-process.ts';
import { freePort, startBroker } from './broker-process.ts';
import { eventually } from './eventually.ts';

const AUTH = `Basic ${Buffer.from('guest:guest').toString('base64')}`;

export interface ClusterNode {
  readonly name: string;
  readonly clusterPort: number;
  readonly dataDir: string;
  broker: BrokerProcess;
  /** Client port, kept across restarts (clients keep their URL lists). */
  readonly port: number;
}

export interface QueueJson {
  readonly name: string;
  readonly messages_ready?: number;
  readonly messages?: number;
  readonly consumers?: number;
  readonly leader?: string;
  readonly members?: string[];
  readonly online?: string[];
}

/** A management API call as guest (JSON in and out, bounded); throws on an error status. */
export async function managementApi<T>(
  base: string | undefined,
  path: string,
  init: RequestInit = {},
): Promise<T> {
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers: { authorization: AUTH, 'content-type': 'application/json', ...init.headers },
    signal: AbortSignal.timeout(15_000),
  });
  if (!response.ok)
    throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${await response.text()}`);
  const text = await response.text();
  return (text === '' ? undefined : JSON.parse(text)) as T;
}

export class TestCluster {
  readonly nodes: ClusterNode[] = [];
  readonly root: string;
  readonly #secretFile: string;
  readonly #env: Readonly<Record<string, string>> | undefined;
  /** Extra `styx server` flags of single nodes, by name, restarts included. */
  readonly #nodeArgs: Readonly<Record<string, readonly string[]>>;
  /** Extra environment variables of single nodes, by name (over `#env`), restarts included. */
  readonly #nodeEnv = new Map<string, Readonly<Record<string, string>>>();
  /** Log lines of every earlier incarnation of a node (a restart replaces `broker` and its logs). */
  readonly #pastLogs = new Map<string, string[]>();
  /** Client connections made by `connect`, closed by `stop`. */
  readonly #connections: Awaited<ReturnType<typeof amqp.connect>>[] = [];

  private constructor(
    root: string,
    env: Readonly<Record<string, string>> | undefined,
    nodeArgs: Readonly<Record<string, readonly string[]>>,
  ) {
    this.root = root;
    this.#env = env;
    this.#nodeArgs = nodeArgs;
    this.#secretFile = join(root, 'secret');
  }

  /**
   * Start `size` nodes named n1..nN; resolves once every node sees every member online. `env`: extra
   * environment variables for every node process, restarts included; `nodeEnv`: more for single
   * nodes, by name (until a restart gives others); `nodeArgs`: extra flags of single nodes, by name;
   * `dataDirs`: data dirs of single nodes, by name (default: one under the cluster's temp dir).
   */
  static async start(
    size: number,
    options: {
      readonly env?: Record<string, string>;
      readonly nodeEnv?: Readonly<Record<string, Record<string, string>>>;
      readonly nodeArgs?: Readonly<Record<string, readonly string[]>>;
      readonly dataDirs?: Readonly<Record<string, string>>;
    } = {},
  ): Promise<TestCluster> {
    const root = await mkdtemp(join(tmpdir(), 'styx-cq-'));
    const cluster = new TestCluster(root, options.env, options.nodeArgs ?? {});
    for (const [name, env] of Object.entries(options.nodeEnv ?? {})) cluster.#nodeEnv.set(name, env);
    await writeFile(cluster.#secretFile, 'a cluster secret for this test only\n', { mode: 0o600 });
    try {
      const specs = [];
      for (let i = 1; i <= size; i++) {
        specs.push({
          name: `n${i}`,
          clusterPort: await freePort(),
          port: await freePort(),
          dataDir: options.dataDirs?.[`n${i}`] ?? join(cluster.root, `n${i}`),
        });
      }
      const [first, ...rest] = specs as [(typeof specs)[number], ...typeof specs];
      cluster.nodes.push({ ...first, broker: await cluster.#launch(first, false) });
      // Settled, not Promise.all: when one node fails to start, the others that did are still
      // recorded, so the stop below kills them too instead of leaving them running.
      const launched = await Promise.allSettled(
        rest.map(async (spec) => ({ ...spec, broker: await cluster.#launch(spec, true) })),
      );
      for (const result of launched) if (result.status === 'fulfilled') cluster.nodes.push(result.value);
      const failed = launched.find((result) => result.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      await cluster.waitFormed();
      return cluster;
    } catch (error) {
      await cluster.stop();
      throw error;
    }
  }

  node(name: string): ClusterNode {
    const node = this.nodes.find((n) => n.name === name);
    if (node === undefined) throw new Error(`no node ${name}`);
    return node;
  }

  /** ws URL of a node (guest:guest). */
  url(name: string): string {
    return `ws://guest:guest@127.0.0.1:${this.node(name).port}`;
  }

  /** Every node sees every member running. */
  async waitFormed(): Promise<void> {
    for (const node of this.nodes) {
      if (node.broker.child.exitCode !== null || node.broker.child.signalCode !== null) continue;
      await eventually(
        `${node.name} to see ${this.nodes.length} members online`,
        async () => {
          const members = await this.api<{ running: boolean }[]>(node.name, '/api/nodes');
          return members.length === this.nodes.length && members.every((m) => m.running);
        },
        60_000,
      );
    }
  }

  api<T>(name: string, path: string, init: RequestInit = {}): Promise<T> {
    return managementApi<T>(this.node(name).broker.managementUrl, path, init);
  }

  /** A queue as the management API of `via` shows it. */
  queue(via: string, queue: string): Promise<QueueJson> {
    return this.api<QueueJson>(via, `/api/queues/%2F/${encodeURIComponent(queue)}`);
  }

  /** The name of the node leading `queue`, as a running node other than `except` sees it. */
  async leaderOf(queue: string, except: readonly string[] = []): Promise<string> {
    let leader: string | undefined;
    await eventually(
      `a leader for ${queue}`,
      async () => {
        for (const node of this.nodes) {
          if (except.includes(node.name) || !this.isRunning(node.name)) continue;
          const json = await this.queue(node.name, queue).catch(() => undefined);
          if (typeof json?.leader === 'string' && !except.includes(json.leader)) {
            leader = json.leader;
            return true;
          }
        }
        return false;
      },
      30_000,
    );
    return leader as string;
  }

  isRunning(name: string): boolean {
    const child = this.node(name).broker.child;
    return child.exitCode === null && child.signalCode === null;
  }

  async kill(name: string): Promise<void> {
    await this.node(name).broker.kill();
  }

  pause(name: string): void {
    this.node(name).broker.child.kill('SIGSTOP');
  }

  resume(name: string): void {
    this.node(name).broker.child.kill('SIGCONT');
  }

  /** Every log line a node printed, in every incarnation so far (restarts included). */
  logsOf(name: string): string[] {
    return [...(this.#pastLogs.get(name) ?? []), ...this.node(name).broker.logs];
  }

  /** Write every node's logs (all incarnations) to `<tmpdir>/<prefix>-XXXXXX/<node>.log`; returns the dir. */
  async saveLogs(prefix: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), `${prefix}-`));
    for (const node of this.nodes)
      await writeFile(join(dir, `${node.name}.log`), `${this.logsOf(node.name).join('\n')}\n`);
    return dir;
  }

  /**
   * Start a stopped node again with its data dir and ports; `env` replaces the node's own extra
   * environment variables (`nodeEnv`) from now on.
   */
  async restart(name: string, options: { readonly env?: Record<string, string> } = {}): Promise<void> {
    const node = this.node(name);
    if (options.env !== undefined) this.#nodeEnv.set(name, options.env);
    if (this.isRunning(name)) await node.broker.kill();
    this.#pastLogs.set(name, this.logsOf(name));
    node.broker = await this.#launch(node, node !== this.nodes[0]);
  }

  /**
   * A client connection to the named nodes (tried in turn), closed by `stop()`. Its errors are
   * swallowed: in fault tests connections die with their node, as expected.
   */
  async connect(...names: string[]): Promise<Awaited<ReturnType<typeof amqp.connect>>> {
    const connection = await amqp.connect(names.map((n) => this.url(n)));
    connection.on('error', () => undefined);
    this.#connections.push(connection);
    return connection;
  }

  async stop(): Promise<void> {
    for (const connection of this.#connections.splice(0)) await connection.close().catch(() => undefined);
    for (const node of this.nodes) {
      if (node.broker.child.signalCode === 'SIGSTOP') this.resume(node.name);
      await node.broker.kill().catch(() => undefined);
    }
    await rm(this.root, { recursive: true, force: true });
  }

  #launch(spec: Omit<ClusterNode, 'broker'>, join: boolean): Promise<BrokerProcess> {
    const first = this.nodes[0];
    return startBroker({
      dataDir: spec.dataDir,
      port: spec.port,
      management: true,
      startTimeoutMs: 60_000,
      env: { ...this.#env, ...this.#nodeEnv.get(spec.name) },
      extraArgs: [
        '--cluster-listen',
        `127.0.0.1:${spec.clusterPort}`,
        '--node-name',
        spec.name,
        '--cluster-secret-file',
        this.#secretFile,
        ...(join && first !== undefined ? ['--join', `127.0.0.1:${first.clusterPort}`] : []),
        ...(this.#nodeArgs[spec.name] ?? []),
      ],
    });
  }
}

/**
 * A cluster of `size` nodes for the tests of the calling `describe`: started before its first test,
 * stopped after its last. The returned function gives it (throwing if it did not start).
 */
export function clusterForSuite(size: number): () => TestCluster {
  let cluster: TestCluster | undefined;
  beforeAll(async () => {
    cluster = await TestCluster.start(size);
  }, 180_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);
  return () => {
    if (cluster === undefined) throw new Error(`the ${size}-node cluster did not start`);
    return cluster;
  };
}
