import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { freePort } from './free-port-block.ts';

/** The repository root (test/ lives directly under it). */
export const REPO_ROOT = resolve(import.meta.dirname, '..', '..');
const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

export interface BrokerProcess {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly child: ChildProcess;
  /** The AMQP 0-9-1 URL (`amqp://127.0.0.1:PORT`) when started with `amqp: true`. */
  readonly amqpUrl: string | undefined;
  /** The amqps URL when the node has a TLS certificate and an amqps port (`--amqps-port`). */
  readonly amqpsUrl: string | undefined;
  /** The management API's base URL (`http://127.0.0.1:PORT`) when started with `management: true`. */
  readonly managementUrl: string | undefined;
  /** Every log line the node printed (JSON), for assertions and for debugging a failure. */
  readonly logs: string[];
  /** SIGTERM and wait for exit; returns the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** Remove the data dir (after stop/kill). */
  cleanup(): Promise<void>;
}

export interface StartOptions {
  /** Reuse a data dir (restart tests); a fresh temp dir otherwise. */
  readonly dataDir?: string;
  readonly port?: number;
  readonly extraArgs?: readonly string[];
  /** How long to wait for "listening", ms. */
  readonly startTimeoutMs?: number;
  /**
   * Start the management API on a free loopback port. Off by default (`--management-port 0`), so
   * nodes started in parallel never compete for the default port 15680.
   */
  readonly management?: boolean;
  /**
   * Open the AMQP 0-9-1 listener on a free loopback port. Off by default (`--amqp-port 0`, and
   * `--amqps-port 0` unless extraArgs name one), so nodes started in parallel never compete for
   * RabbitMQ's ports 5672 and 5671.
   */
  readonly amqp?: boolean;
  /** Environment variables for the node on top of this process's (e.g. STYX_TEST_COMPACT_EVERY). */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Where the node's log lines go (default: a new array): a test that watches a node before it
   * listens (one waiting for its peers) reads them here while `startBroker` waits.
   */
  readonly logs?: string[];
  /** Called with the process as soon as it is spawned: a test can stop a node that never listens. */
  readonly onSpawn?: (child: ChildProcess) => void;
}

export { freePort };

/**
 * Start a real broker node as a child process (`styx server`) on a loopback port and wait until it
 * listens. Port 0 (the default) lets the OS pick a free port; the node logs the URL it bound.
 */
export async function startBroker(options: StartOptions = {}): Promise<BrokerProcess> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'styx-test-')));
  for (let attempt = 1; ; attempt++) {
    try {
      return await startBrokerOnce(options, dataDir);
    } catch (err) {
      // A port picked free (freePort) can still be taken by another test's listener before the node
      // binds it: pick again, on the same data dir (the node comes back as itself).
      if (attempt >= START_ATTEMPTS || !/EADDRINUSE/.test((err as Error).message)) throw err;
    }
  }
}

/** Tries of `startBroker` when a port it was given turned out taken (EADDRINUSE). */
const START_ATTEMPTS = 3;

async function startBrokerOnce(options: StartOptions, dataDir: string): Promise<BrokerProcess> {
  const args = [
    CLI,
    'server',
    '--data-dir',
    dataDir,
    '--host',
    '127.0.0.1',
    '--port',
    String(options.port ?? 0),
    '--log-format',
    'json',
    '--log-level',
    'info',
    '--management-port',
    String(options.management === true ? await freePort() : 0),
    '--amqp-port',
    String(options.amqp === true ? await freePort() : 0),
    ...((options.extraArgs ?? []).includes('--tls-cert') &&
    !(options.extraArgs ?? []).includes('--amqps-port')
      ? ['--amqps-port', '0']
      : []),
    // Tests read /metrics right after a workload: no render cache between scrapes.
    '--metrics-cache-seconds',
    '0',
    ...(options.extraArgs ?? []),
  ];
  const child = spawn(process.execPath, args, {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(options.env === undefined ? {} : { env: { ...process.env, ...options.env } }),
  });
  options.onSpawn?.(child);
  const logs: string[] = options.logs ?? [];
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const stderr: string[] = [];
  let managementUrl: string | undefined;
  let amqpUrl: string | undefined;
  let amqpsUrl: string | undefined;
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const url = await new Promise<string>((resolveUrl, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `broker did not start within ${options.startTimeoutMs ?? 20_000} ms\n${logs.join('\n')}\n${stderr.join('')}`,
        ),
      );
    }, options.startTimeoutMs ?? 20_000);
    const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
    lines.on('line', (line) => {
      logs.push(line);
      try {
        const entry = JSON.parse(line) as {
          url?: string;
          msg?: string;
          managementUrl?: string;
          amqpUrl?: string;
          amqpsUrl?: string;
        };
        if (typeof entry.managementUrl === 'string') managementUrl = entry.managementUrl;
        if (typeof entry.amqpUrl === 'string') amqpUrl = entry.amqpUrl;
        if (typeof entry.amqpsUrl === 'string') amqpsUrl = entry.amqpsUrl;
        if (entry.url !== undefined && entry.msg?.startsWith('Styx listening') === true) {
          clearTimeout(timer);
          resolveUrl(entry.url);
        }
      } catch {
        // not JSON: keep it in logs
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(
        new Error(`broker exited with ${code} before listening\n${logs.join('\n')}\n${stderr.join('')}`),
      );
    });
  });
  const port = Number(new URL(url).port);
  return {
    url,
    port,
    dataDir,
    child,
    managementUrl,
    amqpUrl,
    amqpsUrl,
    logs,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exited;
    },
    async cleanup() {
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
