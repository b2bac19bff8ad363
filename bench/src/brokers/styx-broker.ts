/**
 * Styx as the broker under test: one `styx server` node, or for `nodes` > 1 a cluster of that many
 * (`styx-cluster.ts`), on loopback with fresh data dirs under one temp dir. Clients connect to
 * node 1, as README "A cluster" says: through the SDK (WebSocket, target `styx`), or through
 * amqplib to the node's AMQP 0-9-1 listener (target `styx-amqp`), which every node then opens on a
 * free port. The SDK target turns the AMQP listener off, so no node takes the default port 5672.
 */
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrokerUnderTest, StyxTarget } from './broker.ts';
import { BrokerStartError, ClusterUnsupportedError } from './broker.ts';
import { distinctFreePorts } from './free-port.ts';
import { startStyxCluster } from './styx-cluster.ts';
import type { StyxNode } from './styx-node.ts';
import { amqpListenerArgs, REPO_ROOT, startStyxNode } from './styx-node.ts';

/** The AMQP URL of a node's listener on `port`, as the default user (guest, loopback only). */
export function styxAmqpUrl(port: number): string {
  return `amqp://guest:guest@127.0.0.1:${port}`;
}

/**
 * Starts a Styx node, or a cluster of `nodes` nodes formed before this resolves, for `target`'s
 * clients: `styx` (SDK, WebSocket URLs) or `styx-amqp` (AMQP listeners, amqp:// URLs).
 */
export async function startStyx(nodes = 1, target: StyxTarget = 'styx'): Promise<BrokerUnderTest> {
  if (!Number.isInteger(nodes) || nodes < 1) throw new BrokerStartError(`cannot start ${nodes} Styx nodes`);
  // Picked ahead (the flag takes no port 0 that a log line would resolve), kept across a restart.
  const amqpPorts = target === 'styx-amqp' ? await distinctFreePorts(nodes) : Array<number>(nodes).fill(0);
  const root = await mkdtemp(join(tmpdir(), 'styx-bench-'));
  // The last resort if the bench exits (an interrupt, a crash) before stop() ran, e.g. during the
  // launch: styx-node.ts SIGKILLs the node processes then (its listener runs first), this removes
  // their data; an 'exit' listener can only do synchronous work.
  const onExit = (): void => rmSync(root, { recursive: true, force: true });
  process.on('exit', onExit);
  let started: readonly StyxNode[];
  let queueLeader = async (_queue: string): Promise<number | undefined> => 0;
  try {
    if (nodes === 1) {
      started = [await startSingle(root, amqpPorts[0] ?? 0)];
    } else {
      const cluster = await startStyxCluster(nodes, root, amqpPorts);
      started = cluster.nodes;
      queueLeader = cluster.queueLeader;
    }
  } catch (err) {
    // The launchers stop the nodes they started before throwing.
    process.off('exit', onExit);
    await rm(root, { recursive: true, force: true });
    throw err;
  }
  const clientUrl = (node: StyxNode, i: number): string =>
    target === 'styx-amqp' ? styxAmqpUrl(amqpPorts[i] ?? 0) : node.url;
  // Replaced by a restart (single node only).
  let all = started;
  const first = (): StyxNode => all[0] as StyxNode;
  const version = await styxVersion();
  let stopped: Promise<void> | undefined;
  return {
    target,
    get url() {
      return clientUrl(first(), 0);
    },
    get pid() {
      return first().pid;
    },
    get pids() {
      return all.map((n) => n.pid);
    },
    get urls() {
      return all.map(clientUrl);
    },
    queueLeader: (queue) => queueLeader(queue),
    killNode(index) {
      const node = all[index];
      if (node === undefined) throw new RangeError(`no node ${index + 1} in a cluster of ${all.length}`);
      process.kill(node.pid, 'SIGKILL');
    },
    version,
    // A cluster is alive while every node is: a dead member changes what is measured.
    alive: () => all.every((n) => n.alive()),
    recentLogs: () =>
      all.length === 1
        ? first().recentLogs()
        : all.flatMap((n) => n.recentLogs().map((l) => `[${n.name}] ${l}`)),
    stop() {
      stopped ??= (async () => {
        await Promise.all(all.map((n) => n.stop()));
        await rm(root, { recursive: true, force: true });
        process.off('exit', onExit);
      })();
      return stopped;
    },
    async restart() {
      if (all.length > 1) throw new ClusterUnsupportedError('the bench restarts a single Styx node only');
      const t0 = performance.now();
      await first().stop();
      const stopMs = performance.now() - t0;
      all = [await startSingle(root, amqpPorts[0] ?? 0)];
      return { stopMs };
    },
  };
}

/** One node on its own, as before clustering: no cluster layer, no management API. AMQP on `amqpPort` (0: off). */
function startSingle(root: string, amqpPort: number): Promise<StyxNode> {
  return startStyxNode(
    'styx',
    [
      '--data-dir',
      join(root, 'node-1'),
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      // No management API: RabbitMQ runs without its management plugin too, and a fixed port would
      // collide with any other node on this machine (another bench, a developer's broker).
      '--management-port',
      '0',
      ...amqpListenerArgs(amqpPort),
    ],
    amqpPort === 0 ? undefined : amqpPort,
  );
}

/** The node package's version (the broker has no version flag yet). */
async function styxVersion(): Promise<string> {
  try {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'packages', 'node', 'package.json'), 'utf8')) as {
      version?: string;
    };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}
