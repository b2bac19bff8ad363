// The Styx nodes of a run: one `styx server` process per network namespace, started through
// `ip netns exec` (which execs, so the child's pid is the node's own and SIGKILL/SIGSTOP reach it
// directly). The harness owns these processes: kill, pause, resume and restart are its faults.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import type { WriteStream } from 'node:fs';
import { createWriteStream, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_BREAK_ENV, TEST_COMPACT_EVERY_ENV } from './breaks.ts';
import { ClusterError } from './errors.ts';
import type { ChaosNetwork, Host } from './network.ts';
import { run } from './shell.ts';

const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

/** Every node listens on the same ports, each in its own namespace. */
export const CLIENT_PORT = 5680;
export const MANAGEMENT_PORT = 15680;
export const CLUSTER_PORT = 25680;

/**
 * The workload's user. `guest` may only log in from loopback (RabbitMQ's loopback_users), and the
 * clients reach the nodes over the bridge, so the harness adds this administrator through `styx ctl`
 * run inside the first node's namespace, where the management API is on loopback.
 */
export const USER = 'chaos';
export const PASSWORD = 'chaos-harness';
const AUTH = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;

export type NodeState = 'running' | 'paused' | 'down';

export interface ChaosNode {
  readonly name: string;
  readonly host: Host;
  readonly dataDir: string;
  child: ChildProcess | undefined;
  state: NodeState;
  /** Resolves when the current process exited. */
  exited: Promise<void>;
}

export interface QueueView {
  readonly name: string;
  readonly messages?: number;
  readonly messages_ready?: number;
  readonly messages_dead_letter_pending?: number;
  readonly consumers?: number;
  readonly leader?: string;
  readonly members?: string[];
  readonly online?: string[];
}

/** `GET /api/queues/{vhost}/{name}/quorum_status` (management/views.ts quorumStatusJson). */
export interface QuorumStatus {
  readonly leader: string;
  readonly members: readonly { readonly node: string; readonly role: string; readonly online: boolean }[];
}

export class ChaosCluster {
  readonly nodes: ChaosNode[];
  readonly #secretFile: string;
  readonly #log: WriteStream;
  /** The nodes' environment: the harness's, plus STYX_TEST_BREAK for a deliberately broken run. */
  readonly #env: NodeJS.ProcessEnv;
  /** CPU ticks (1/100 s) of each node at the last sample. */
  readonly #cpu = new Map<string, { ticks: number; at: number; pid: number }>();

  private constructor(
    network: ChaosNetwork,
    dataRoot: string,
    logFile: string,
    testBreak: string | undefined,
    compactEvery: number | undefined,
  ) {
    this.#env = { ...process.env };
    delete this.#env[TEST_BREAK_ENV];
    delete this.#env[TEST_COMPACT_EVERY_ENV];
    if (testBreak !== undefined) this.#env[TEST_BREAK_ENV] = testBreak;
    if (compactEvery !== undefined) this.#env[TEST_COMPACT_EVERY_ENV] = String(compactEvery);
    this.#secretFile = join(dataRoot, 'cluster-secret');
    this.#log = createWriteStream(logFile, { flags: 'a' });
    this.nodes = network.hosts.map((host) => ({
      name: `n${host.index}`,
      host,
      dataDir: join(dataRoot, `n${host.index}`),
      child: undefined,
      state: 'down',
      exited: Promise.resolve(),
    }));
  }

  /**
   * Starts n1 (it forms the cluster), adds the workload's user, then the others (they join through
   * n1), and resolves once every node sees every member running. `testBreak` starts every node
   * deliberately broken (see breaks.ts); `compactEvery` makes every queue log compact after that
   * many entries (STYX_TEST_COMPACT_EVERY).
   */
  static async start(
    network: ChaosNetwork,
    dataRoot: string,
    logFile: string,
    testBreak?: string,
    compactEvery?: number,
  ): Promise<ChaosCluster> {
    const cluster = new ChaosCluster(network, dataRoot, logFile, testBreak, compactEvery);
    const { writeFile } = await import('node:fs/promises');
    await writeFile(cluster.#secretFile, 'the chaos harness cluster secret\n', { mode: 0o600 });
    const [first, ...rest] = cluster.nodes;
    if (first === undefined) throw new ClusterError('a cluster needs at least one node');
    await cluster.#launch(first);
    await cluster.#addUser(first);
    await Promise.all(rest.map((node) => cluster.#launch(node)));
    await cluster.waitFormed(90_000);
    return cluster;
  }

  node(name: string): ChaosNode {
    const node = this.nodes.find((n) => n.name === name);
    if (node === undefined) throw new RangeError(`no node ${name}`);
    return node;
  }

  /** Client URLs and the nodes they name, starting at node `first` (1-based) so clients spread. */
  urls(first: number): { urls: string[]; names: string[] } {
    const n = this.nodes.length;
    const order = Array.from({ length: n }, (_, i) => this.nodes[(first - 1 + i) % n] as ChaosNode);
    return {
      urls: order.map((node) => `ws://${USER}:${PASSWORD}@${node.host.ip}:${CLIENT_PORT}`),
      names: order.map((node) => node.name),
    };
  }

  async kill(name: string): Promise<void> {
    const node = this.node(name);
    if (node.child === undefined || node.state === 'down') return;
    node.child.kill('SIGKILL');
    await node.exited;
  }

  pause(name: string): void {
    const node = this.node(name);
    if (node.state !== 'running') return;
    node.child?.kill('SIGSTOP');
    node.state = 'paused';
  }

  resume(name: string): void {
    const node = this.node(name);
    if (node.state !== 'paused') return;
    node.child?.kill('SIGCONT');
    node.state = 'running';
  }

  /** Starts a node that is down again, with its data dir and flags (the same as at first). */
  async restart(name: string): Promise<void> {
    const node = this.node(name);
    if (node.state !== 'down') return;
    await this.#launch(node);
  }

  /** GET a management path on one node (short timeout: the node may be paused or cut off). */
  async api<T>(name: string, path: string, timeoutMs = 2_000): Promise<T> {
    const { host } = this.node(name);
    const response = await fetch(`http://${host.ip}:${MANAGEMENT_PORT}${path}`, {
      headers: { authorization: AUTH },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok)
      throw new ClusterError(`GET ${path} on ${name}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  }

  queue(via: string, queue: string, timeoutMs?: number): Promise<QueueView> {
    return this.api<QueueView>(via, `/api/queues/%2F/${encodeURIComponent(queue)}`, timeoutMs);
  }

  /** `GET …/quorum_status`: the queue's Raft group as its leader reports it. */
  quorumStatus(via: string, queue: string, timeoutMs?: number): Promise<QuorumStatus> {
    return this.api<QuorumStatus>(
      via,
      `/api/queues/%2F/${encodeURIComponent(queue)}/quorum_status`,
      timeoutMs,
    );
  }

  /**
   * `styx ctl ARGS` run inside node `via`'s namespace against its management API, as the workload's
   * administrator; resolves with its output, rejects (CommandError) on a non-zero exit.
   */
  ctl(via: string, args: readonly string[], timeoutS = 20): Promise<string> {
    const node = this.node(via);
    return run(
      'ip',
      [
        ...['netns', 'exec', node.host.namespace, process.execPath, CLI, 'ctl', ...args],
        ...['--node', `http://127.0.0.1:${MANAGEMENT_PORT}`, '--username', USER, '--password', PASSWORD],
        ...['--timeout', String(timeoutS)],
      ],
      (timeoutS + 10) * 1000,
    );
  }

  /** GET a management path, whatever the status: the status and the body (JSON when it parses). */
  async apiAnyStatus(
    name: string,
    path: string,
    timeoutMs = 5_000,
  ): Promise<{ status: number; body: unknown }> {
    const { host } = this.node(name);
    const response = await fetch(`http://${host.ip}:${MANAGEMENT_PORT}${path}`, {
      headers: { authorization: AUTH },
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // not JSON: kept as text
    }
    return { status: response.status, body };
  }

  /** The queue's leader as the first answering running node sees it, or undefined if none answers. */
  async leaderOf(queue: string): Promise<string | undefined> {
    for (const node of this.nodes) {
      if (node.state !== 'running') continue;
      const view = await this.queue(node.name, queue, 1_500).catch(() => undefined);
      if (view?.leader !== undefined) return view.leader;
    }
    return undefined;
  }

  /** Every running node sees every member running (after start, and after the final heal). */
  async waitFormed(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (const node of this.nodes) {
      for (;;) {
        const members = await this.api<{ name: string; running: boolean }[]>(node.name, '/api/nodes').catch(
          (e: unknown) => String(e),
        );
        if (
          typeof members !== 'string' &&
          members.length === this.nodes.length &&
          members.every((m) => m.running)
        )
          break;
        last = typeof members === 'string' ? members : JSON.stringify(members);
        if (Date.now() > deadline)
          throw new ClusterError(`${node.name} does not see ${this.nodes.length} members running: ${last}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  /**
   * Each running node's CPU share since the last call (percent of one core), resident memory and
   * kernel process state (R running, S sleeping, T stopped...), read from /proc.
   */
  sample(): Record<string, { cpu: number; rssMiB: number; state: string } | 'down'> {
    const out: Record<string, { cpu: number; rssMiB: number; state: string } | 'down'> = {};
    const now = Date.now();
    for (const node of this.nodes) {
      const pid = node.child?.pid;
      if (node.state === 'down' || pid === undefined) {
        out[node.name] = 'down';
        continue;
      }
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        // Fields after the command name (which may hold spaces) start at its closing parenthesis.
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        const ticks = Number(fields[11]) + Number(fields[12]); // utime + stime
        const rssPages = Number(fields[21]);
        const previous = this.#cpu.get(node.name);
        this.#cpu.set(node.name, { ticks, at: now, pid });
        const cpu =
          previous === undefined || previous.pid !== pid
            ? 0
            : Math.round(((ticks - previous.ticks) * 10 * 1000) / Math.max(1, now - previous.at)) / 10;
        out[node.name] = { cpu, rssMiB: Math.round((rssPages * 4096) / 1048576), state: fields[0] ?? '?' };
      } catch {
        out[node.name] = 'down';
      }
    }
    return out;
  }

  /** SIGKILLs every node (SIGCONT first, so a paused one dies at once); sync, for the exit path. */
  killAllSync(): void {
    for (const node of this.nodes) {
      if (node.child === undefined || node.state === 'down') continue;
      node.child.kill('SIGCONT');
      node.child.kill('SIGKILL');
    }
  }

  async stop(): Promise<void> {
    this.killAllSync();
    await Promise.all(this.nodes.map((n) => n.exited));
    await new Promise<void>((r) => this.#log.end(r));
  }

  async #launch(node: ChaosNode): Promise<void> {
    const { host } = node;
    const first = this.nodes[0] as ChaosNode;
    const args = [
      ...['netns', 'exec', host.namespace, process.execPath, CLI, 'server'],
      ...['--data-dir', node.dataDir, '--node-name', node.name],
      ...['--host', host.ip, '--port', String(CLIENT_PORT), '--amqp-port', '0'],
      // 0.0.0.0 inside the namespace: loopback for `styx ctl` there, the bridge address for the harness.
      ...['--management-host', '0.0.0.0', '--management-port', String(MANAGEMENT_PORT)],
      ...['--cluster-listen', `${host.ip}:${CLUSTER_PORT}`, '--cluster-secret-file', this.#secretFile],
      ...(node === first ? [] : ['--join', `${first.host.ip}:${CLUSTER_PORT}`]),
      // Short heartbeats: a client of a paused node finds out in seconds, not a minute.
      ...['--heartbeat', '5', '--log-format', 'json', '--log-level', 'info'],
    ];
    const child = spawn('ip', args, { cwd: REPO_ROOT, env: this.#env, stdio: ['ignore', 'pipe', 'pipe'] });
    node.child = child;
    node.state = 'running';
    node.exited = new Promise((done) =>
      child.once('exit', (code, signal) => {
        this.#write(node.name, `process exited (code ${code}, signal ${signal})`);
        if (node.child === child) node.state = 'down';
        done();
      }),
    );
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => this.#write(node.name, chunk.trimEnd()));
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    const listening = new Promise<void>((ready, fail) => {
      const timer = setTimeout(
        () => fail(new ClusterError(`${node.name} did not listen within 60 s`)),
        60_000,
      );
      lines.on('line', (line) => {
        this.#write(node.name, line);
        if (line.includes('"Styx listening')) {
          clearTimeout(timer);
          ready();
        }
      });
      void node.exited.then(() => {
        clearTimeout(timer);
        fail(new ClusterError(`${node.name} exited before listening (see the node log)`));
      });
    });
    await listening;
  }

  async #addUser(node: ChaosNode): Promise<void> {
    const ctl = (args: string[]) =>
      run('ip', [
        ...['netns', 'exec', node.host.namespace, process.execPath, CLI, 'ctl', ...args],
        ...['--node', `http://127.0.0.1:${MANAGEMENT_PORT}`],
      ]);
    await ctl(['add_user', USER, PASSWORD]);
    await ctl(['set_user_tags', USER, 'administrator']);
    await ctl(['set_permissions', '-p', '/', USER, '.*', '.*', '.*']);
  }

  #write(name: string, text: string): void {
    this.#log.write(`${name} ${text}\n`);
  }
}
