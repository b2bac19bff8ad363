/**
 * Starts a Styx node (`styx server`) as a child process on a loopback port with a fresh data dir,
 * as the bench's own launcher (the tests in test/ have theirs).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { BrokerUnderTest } from './broker.ts';
import { BrokerStartError, ClusterUnsupportedError } from './broker.ts';

/** The repository root (this file is bench/src/brokers/styx-broker.ts). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..', '..');
const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

/** How long to wait for the node's "Styx listening" line, ms. */
const START_TIMEOUT_MS = 30_000;
/** How long a stop waits after SIGTERM before SIGKILL, ms. */
const STOP_GRACE_MS = 15_000;
/** Log lines kept for diagnostics (a ring: the bench may run for minutes). */
const KEPT_LOG_LINES = 200;

/** Starts a Styx node; `nodes` > 1 is refused until the CLI can form a cluster. */
export async function startStyx(nodes = 1): Promise<BrokerUnderTest> {
  if (nodes !== 1)
    throw new ClusterUnsupportedError(
      `the bench cannot launch a ${nodes}-node Styx cluster yet (no cluster CLI)`,
    );
  const dataDir = await mkdtemp(join(tmpdir(), 'styx-bench-'));
  // STYX_BENCH_NODE_ARGS: extra node flags for the broker (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
  const nodeArgs = (process.env.STYX_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
  const args = [...nodeArgs, CLI, 'server', '--data-dir', dataDir, '--host', '127.0.0.1', '--port', '0'];
  // No management API: RabbitMQ runs without its management plugin too, and a fixed port would
  // collide with any other node on this machine (another bench, a developer's broker).
  args.push('--management-port', '0', '--log-format', 'json', '--log-level', 'info');
  const child = spawn(process.execPath, args, { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const logs: string[] = [];
  const keep = (line: string): void => {
    logs.push(line);
    if (logs.length > KEPT_LOG_LINES) logs.shift();
  };
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  createInterface({ input: child.stderr }).on('line', keep);
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new BrokerStartError(`Styx did not listen within ${START_TIMEOUT_MS} ms\n${logs.join('\n')}`));
    }, START_TIMEOUT_MS);
    createInterface({ input: child.stdout }).on('line', (line) => {
      keep(line);
      try {
        const entry = JSON.parse(line) as { url?: string; msg?: string };
        if (entry.url !== undefined && entry.msg?.startsWith('Styx listening') === true) {
          clearTimeout(timer);
          resolveUrl(entry.url);
        }
      } catch {
        // not a JSON line: kept for diagnostics only
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new BrokerStartError(`Styx exited before listening\n${logs.join('\n')}`));
    });
  });
  const pid = child.pid;
  if (pid === undefined) throw new BrokerStartError('Styx started without a pid');
  const version = await styxVersion();
  let stopped: Promise<void> | undefined;
  return {
    target: 'styx',
    url,
    pid,
    pids: [pid],
    version,
    alive: () => child.exitCode === null && child.signalCode === null,
    recentLogs: () => [...logs],
    stop() {
      stopped ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
          await exited;
          clearTimeout(timer);
        }
        await rm(dataDir, { recursive: true, force: true });
      })();
      return stopped;
    },
  };
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
