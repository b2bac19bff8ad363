import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parse, parseIntegerFlag } from './args.ts';
import { CLUSTER_SECRET_FILE, ensureSecretFile } from './cluster-flags.ts';
import { SERVER_NODE_FLAGS } from './server-node-flags.ts';

export const LOCAL_CLUSTER_USAGE = `Usage: styx local-cluster [options]

Run a cluster of Styx nodes on this machine, on loopback, for development and benchmarks: each node
is a 'styx server' process with its own data dir, clients port, management port and cluster port.
The first node forms the cluster, the others join it. Ctrl-C stops them all; run the command again
and they come back with their data. A node that dies (a crash, kill -9) leaves the others running,
so a failover can be watched; 'kill -HUP PID' (this command's pid, printed at start), or Enter on a
terminal, restarts the nodes that are down. 'npx -y pnpm@10 start:cluster' runs it with the defaults.

Options:
  --nodes N          how many nodes (default: 3, at most 9)
  --data-dir DIR     parent of the nodes' data dirs and the cluster secret (default: ./styx-cluster)
  --base-port PORT   node i (1-based) serves clients on PORT+i, AMQP 0-9-1 on PORT-9+i, management
                     on PORT+10000+i and the cluster on PORT+20000+i (default: 5680:
                     ws://127.0.0.1:5681, 5682, ...; amqp://127.0.0.1:5672, 5673, ...)
  --log-level LEVEL  passed on to every node (default: info)
  -h, --help         show this help`;

/** Node `index`'s AMQP port: below the base port (5672... for 5680), clear of the other ranges. */
export function amqpPort(basePort: number, index: number): number {
  return basePort - 9 + index;
}

/** The CLI entry point (main.ts), run by every node process. */
const MAIN = fileURLToPath(new URL('./main.ts', import.meta.url));

interface LocalNode {
  readonly index: number;
  readonly name: string;
  readonly url: string;
  /** AMQP 0-9-1 (RabbitMQ's clients): node 1 on RabbitMQ's 5672 with the default base port. */
  readonly amqpUrl: string;
  readonly managementUrl: string;
  readonly cluster: string;
  readonly dataDir: string;
}

export async function localClusterCommand(argv: string[]): Promise<number> {
  const { values } = parse(argv, {
    nodes: { type: 'string' },
    'data-dir': { type: 'string' },
    'base-port': { type: 'string' },
    'log-level': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    process.stdout.write(`${LOCAL_CLUSTER_USAGE}\n`);
    return 0;
  }
  const count = parseIntegerFlag('nodes', values.nodes, 3, 1, 9);
  const basePort = parseIntegerFlag('base-port', values['base-port'], 5680, 10, 65535 - 20_010);
  const logLevel = values['log-level'] ?? 'info';
  const root = resolve(values['data-dir'] ?? 'styx-cluster');
  await mkdir(root, { recursive: true });
  // One secret for all the nodes, beside their data dirs, made on the first run.
  const secretFile = join(root, CLUSTER_SECRET_FILE);
  await ensureSecretFile(secretFile);

  const nodes: LocalNode[] = [];
  for (let index = 1; index <= count; index++) {
    nodes.push({
      index,
      name: `styx-${index}`,
      url: `ws://127.0.0.1:${basePort + index}`,
      amqpUrl: `amqp://127.0.0.1:${amqpPort(basePort, index)}`,
      managementUrl: `http://127.0.0.1:${basePort + 10_000 + index}`,
      cluster: `127.0.0.1:${basePort + 20_000 + index}`,
      dataDir: join(root, `node-${index}`),
    });
  }
  const first = nodes[0] as LocalNode;
  /** Nodes that said they are shutting down (they got the terminal's Ctrl-C themselves). */
  const stoppingOnTheirOwn = new Set<ChildProcess>();
  const slots: NodeSlot[] = nodes.map((node) => {
    const args = [
      ...SERVER_NODE_FLAGS,
      MAIN,
      'server',
      '--data-dir',
      node.dataDir,
      '--port',
      String(basePort + node.index),
      '--amqp-port',
      String(amqpPort(basePort, node.index)),
      '--management-port',
      String(basePort + 10_000 + node.index),
      '--cluster-listen',
      node.cluster,
      '--node-name',
      node.name,
      '--cluster-secret-file',
      secretFile,
      '--log-level',
      logLevel,
      '--log-format',
      'json',
    ];
    // Every node but the first joins through the first; restarted with its data, a node is a member
    // already and the flag only tells it where to announce itself.
    if (node !== first) args.push('--join', first.cluster);
    return { node, args, child: undefined };
  });

  process.stdout.write(
    `Styx local cluster: ${count} node${count === 1 ? '' : 's'}, data in ${root}\n` +
      nodes
        .map(
          (n) =>
            `  ${n.name}  clients ${n.url}  amqp ${n.amqpUrl}  management ${n.managementUrl}  cluster ${n.cluster}`,
        )
        .join('\n') +
      `\nCtrl-C stops them all. A node that dies leaves the others running; ${restartHint()} restarts it.\n`,
  );

  return new Promise<number>((done) => {
    let stopping = false;
    let failed = false;
    const running = (): NodeSlot[] => slots.filter((slot) => slot.child !== undefined);
    /** Signal every node that has not said it is shutting down. */
    const signalRemaining = (signal: NodeJS.Signals): void => {
      for (const { child } of running()) {
        if (child !== undefined && !stoppingOnTheirOwn.has(child)) child.kill(signal);
      }
    };
    const launch = (slot: NodeSlot): void => {
      const child = start(slot.node, slot.args, (c) => stoppingOnTheirOwn.add(c));
      slot.child = child;
      child.on('exit', (code, signal) => {
        slot.child = undefined;
        if (stopping) {
          if (code !== 0 && code !== null) failed = true;
          if (running().length === 0) done(failed ? 1 : 0);
          return;
        }
        // One node gone on its own (crashed, killed): the others keep serving, as a real cluster's
        // would, so its failover can be watched; the operator restarts it when they choose.
        const others = running().map((s) => s.node.name);
        const how =
          signal !== null ? `killed by ${signal}` : code === 0 ? 'stopped' : `exited with code ${code}`;
        if (others.length === 0) {
          process.stdout.write(`[local-cluster] ${slot.node.name} ${how}; no node is left running\n`);
          done(code === 0 ? 0 : 1);
          return;
        }
        process.stdout.write(
          `[local-cluster] ${slot.node.name} ${how}; ${others.join(', ')} keep running. ` +
            `${restartHint()} restarts it.\n`,
        );
      });
    };
    const restartDead = (): void => {
      if (stopping) return;
      for (const slot of slots) {
        if (slot.child !== undefined) continue;
        process.stdout.write(`[local-cluster] restarting ${slot.node.name}\n`);
        launch(slot);
      }
    };
    for (const slot of slots) launch(slot);
    // Ctrl-C on a terminal reaches the nodes too (one process group): give them a moment to stop
    // on their own before passing the signal on, so no node hears it twice (which means "exit now").
    // A signal sent to this process alone (kill PID) is passed on after that moment.
    const relay = (): void => {
      if (stopping) return;
      stopping = true;
      if (running().length === 0) done(failed ? 1 : 0);
      setTimeout(() => signalRemaining('SIGTERM'), SIGNAL_RELAY_DELAY_MS).unref();
    };
    process.on('SIGINT', relay);
    process.on('SIGTERM', relay);
    process.on('SIGHUP', restartDead);
    // On a terminal, Enter restarts the dead nodes too.
    if (process.stdin.isTTY) {
      createInterface({ input: process.stdin }).on('line', restartDead);
    }
  });
}

/** A node of the local cluster: its place and flags, and its process while it runs. */
interface NodeSlot {
  readonly node: LocalNode;
  readonly args: readonly string[];
  child: ChildProcess | undefined;
}

/** How the operator asks for dead nodes to be restarted. */
function restartHint(): string {
  return `'kill -HUP ${process.pid}'${process.stdin.isTTY ? ' or Enter' : ''}`;
}

/**
 * Start one node, its log lines prefixed with its name (message only; the JSON has the rest).
 * `onShuttingDown` hears when the node says it is shutting down.
 */
function start(
  node: LocalNode,
  args: readonly string[],
  onShuttingDown: (child: ChildProcess) => void,
): ChildProcess {
  const child = spawn(process.execPath, [...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const prefix = `[${node.name}] `;
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => {
      const text = readable(line);
      if (text === 'INFO shutting down') onShuttingDown(child);
      process.stdout.write(`${prefix}${text}\n`);
    });
  }
  return child;
}

/** How long the nodes get to stop on a Ctrl-C they heard themselves before it is passed on, ms. */
const SIGNAL_RELAY_DELAY_MS = 500;

/** A node's JSON log line as `LEVEL message`, anything else as it is. */
function readable(line: string): string {
  if (!line.startsWith('{')) return line;
  try {
    const entry = JSON.parse(line) as { level?: number; msg?: string; err?: { message?: string } };
    const level = LEVEL_NAMES[entry.level ?? 30] ?? 'INFO';
    const error = entry.err?.message !== undefined ? ` (${entry.err.message})` : '';
    return `${level} ${entry.msg ?? ''}${error}`;
  } catch {
    return line;
  }
}

const LEVEL_NAMES: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
