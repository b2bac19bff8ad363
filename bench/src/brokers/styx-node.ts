/**
 * One `styx server` child process, as the bench's own launcher (the tests in test/ have theirs):
 * spawned with the flags it is given, its JSON log kept in a ring for diagnostics, ready once it
 * logs "Styx listening". The caller owns its data dir; `styx-broker.ts` puts nodes together.
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { SERVER_NODE_FLAGS } from '@styx/node/server-node-flags';
import { BrokerStartError } from './broker.ts';
import { waitForLoopbackListener } from './free-port.ts';

/** The repository root (this file is bench/src/brokers/styx-node.ts). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

/**
 * How long to wait for a node's "Styx listening" line, ms. A joining node logs it only once it has
 * joined and caught up with the metadata (about 3 s here with three nodes starting on 2 cores).
 */
const START_TIMEOUT_MS = 30_000;
/** How long a stop waits after SIGTERM before SIGKILL, ms. */
const STOP_GRACE_MS = 15_000;
/** Log lines kept for diagnostics, per node (a ring: the bench may run for minutes). */
const KEPT_LOG_LINES = 200;

/** A started node. */
export interface StyxNode {
  /** For log prefixes and errors (`--node-name` in a cluster). */
  readonly name: string;
  /** Where clients connect, from the "Styx listening" line. */
  readonly url: string;
  /** The cluster layer's address (`HOST:PORT`, the real port when listening on port 0), if clustered. */
  readonly clusterAddress: string | undefined;
  /** The management API's port (`--management-port`), undefined when it is off. */
  readonly managementPort: number | undefined;
  readonly pid: number;
  alive(): boolean;
  /** The last lines it logged, oldest first. */
  recentLogs(): string[];
  /** SIGTERM, then SIGKILL after a grace period; resolves once the process has exited. Idempotent. */
  stop(): Promise<void>;
}

/** The flags that put a node's AMQP 0-9-1 listener on `port` (0: off, so it never takes 5672). */
export function amqpListenerArgs(port: number): string[] {
  return ['--amqp-port', String(port)];
}

/**
 * Every node process not yet exited, from its spawn on (also while it starts, before any stop()
 * can reach it), so that the bench exiting (an interrupt, a crash) never leaves one behind.
 */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  // An 'exit' listener can only do synchronous work: SIGKILL, no grace.
  for (const child of running) child.kill('SIGKILL');
});

/** What a node's JSON log lines may carry that the launcher reads. */
interface LogEntry {
  readonly msg?: string;
  readonly url?: string;
  readonly clusterAddress?: string;
}

/**
 * Starts `styx server` with `serverArgs` (the flags after `server`) and waits until it listens, and
 * also until `alsoListensOn` (another listener's port, e.g. `--amqp-port`'s) accepts connections.
 * On failure (exited, or silent past the timeout) the process is killed and a BrokerStartError
 * carries its log.
 */
export async function startStyxNode(
  name: string,
  serverArgs: readonly string[],
  alsoListensOn?: number,
): Promise<StyxNode> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  // The flags every node runs with (as `bin/styx` gives them), then STYX_BENCH_NODE_ARGS: extra
  // node flags for the broker (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`; a later V8 flag wins, so
  // `--max-semi-space-size=64` there overrides the default for an A/B run).
  const extra = (process.env.STYX_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const nodeArgs = [...SERVER_NODE_FLAGS, ...extra];
  const args = [...nodeArgs, CLI, 'server', ...serverArgs, '--log-format', 'json', '--log-level', 'info'];
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  // STYX_BENCH_LOG_DIR: every line the node prints also goes to `<dir>/<name>.log` (appended), for
  // reading what a cluster did during a case (suspicions, elections) after the bench ends.
  const logDir = process.env.STYX_BENCH_LOG_DIR;
  const logFile =
    logDir === undefined || logDir === ''
      ? undefined
      : createWriteStream(join(logDir, `${name}.log`), { flags: 'a' });
  const keep = (line: string): void => {
    logFile?.write(`${line}\n`);
    logs.push(line);
    if (logs.length > KEPT_LOG_LINES) logs.shift();
  };
  running.add(child);
  // 'close' rather than 'exit': it comes once the output is drained too, so an error quoting the
  // log has the node's last words (e.g. a busy port, written just before it exits).
  const exited = new Promise<void>((done) =>
    child.once('close', () => {
      running.delete(child);
      logFile?.end();
      done();
    }),
  );
  // A failed spawn emits 'error' (and maybe no 'exit'): without a listener it would crash the bench.
  const spawnFailed = new Promise<Error>((done) => child.once('error', done));
  const isAlive = (): boolean => child.exitCode === null && child.signalCode === null;
  // The first thing it said on stderr (a usage error, a busy port) heads a launch error's first line.
  let firstStderr: string | undefined;
  createInterface({ input: child.stderr }).on('line', (line) => {
    if (firstStderr === undefined && line.trim() !== '') firstStderr = line.trim();
    keep(line);
  });
  let clusterAddress: string | undefined;
  const url = await new Promise<string>((resolveUrl, reject) => {
    let timedOut = false;
    // Rejected only once the killed process has exited: the caller then removes its data dir.
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, START_TIMEOUT_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      keep(line);
      const entry = parseLogLine(line);
      if (entry?.clusterAddress !== undefined) clusterAddress = entry.clusterAddress;
      if (entry?.url !== undefined && entry.msg?.startsWith('Styx listening') === true) {
        clearTimeout(timer);
        resolveUrl(entry.url);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      const why =
        (timedOut ? `did not listen within ${START_TIMEOUT_MS} ms` : 'exited before listening') +
        (firstStderr === undefined ? '' : ` (${firstStderr})`);
      reject(new BrokerStartError(`Styx node ${name} ${why}\n${logs.join('\n')}`));
    });
    void spawnFailed.then((err) => {
      clearTimeout(timer);
      reject(new BrokerStartError(`Styx node ${name} could not be spawned: ${err.message}`, { cause: err }));
    });
  });
  const pid = child.pid;
  if (pid === undefined) throw new BrokerStartError(`Styx node ${name} started without a pid`);
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= stopChild(child, exited);
    return stopped;
  };
  if (alsoListensOn !== undefined) {
    try {
      await waitForLoopbackListener(alsoListensOn, deadline - performance.now(), isAlive);
    } catch (err) {
      await stop();
      throw new BrokerStartError(`Styx node ${name}: ${(err as Error).message}\n${logs.join('\n')}`, {
        cause: err,
      });
    }
  }
  return {
    name,
    url,
    clusterAddress,
    managementPort: managementPortOf(serverArgs),
    pid,
    alive: isAlive,
    recentLogs: () => [...logs],
    stop,
  };
}

/** The port `--management-port` gives in `serverArgs`; undefined when absent or 0 (the API off). */
export function managementPortOf(serverArgs: readonly string[]): number | undefined {
  const i = serverArgs.lastIndexOf('--management-port');
  const port = i === -1 ? 0 : Number(serverArgs[i + 1]);
  return Number.isSafeInteger(port) && port > 0 ? port : undefined;
}

async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** A JSON log line's fields the launcher reads; undefined for anything else (kept for diagnostics). */
function parseLogLine(line: string): LogEntry | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as LogEntry;
  } catch {
    return undefined;
  }
}
