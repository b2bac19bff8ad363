/**
 * Starts and stops the bench's RabbitMQ node through bench/scripts/rabbitmq.sh (loopback only, its
 * own ports, epmd and data dir).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { BrokerUnderTest } from './broker.ts';
import { BrokerStartError, ClusterUnsupportedError } from './broker.ts';

const run = promisify(execFile);

/** bench/scripts/rabbitmq.sh (this file is bench/src/brokers/rabbitmq-broker.ts). */
export const RABBITMQ_SCRIPT = resolve(import.meta.dirname, '..', '..', 'scripts', 'rabbitmq.sh');

/** Whether Debian's rabbitmq-server package is installed (the script's `install` does it). */
export function rabbitMqInstalled(): boolean {
  return existsSync('/usr/lib/rabbitmq/bin/rabbitmq-server');
}

/** The JSON line `rabbitmq.sh start` prints last (node 1 first). */
interface StartLine {
  readonly pids: readonly number[];
  readonly urls: readonly string[];
  readonly version: string;
  readonly dataDir: string;
}

/** Starts `nodes` RabbitMQ nodes (more than one form a cluster); clients connect to node 1. */
export async function startRabbitMq(nodes = 1): Promise<BrokerUnderTest> {
  if (!rabbitMqInstalled())
    throw new BrokerStartError(`RabbitMQ is not installed: run 'bash ${RABBITMQ_SCRIPT} install' as root`);
  // A node left over from an interrupted run would hold the ports: stop it first.
  await run('bash', [RABBITMQ_SCRIPT, 'stop']).catch(() => undefined);
  let stdout: string;
  try {
    ({ stdout } = await run('bash', [RABBITMQ_SCRIPT, 'start', String(nodes)], { timeout: nodes * 120_000 }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new BrokerStartError(`RabbitMQ did not start: ${e.stderr ?? e.message}`, { cause: err });
  }
  // Replaced by a restart (the node's pid changes; its port does not).
  let started = parseStartLine(stdout);
  const url = started.urls[0] as string;
  let stopped: Promise<void> | undefined;
  // A cluster is alive while every node is: a dead member changes what is measured.
  const alive = (): boolean =>
    started.pids.every((p) => {
      try {
        process.kill(p, 0);
        return true;
      } catch {
        return false;
      }
    });
  return {
    target: 'rabbitmq',
    url,
    get pid() {
      return started.pids[0] as number;
    },
    get pids() {
      return started.pids;
    },
    get urls() {
      return started.urls;
    },
    // Quorum queues are declared with the leader locator client-local (commonQueueArguments), and
    // the bench declares through node 1: that node leads them.
    queueLeader: async () => 0,
    killNode(index) {
      const pid = started.pids[index];
      if (pid === undefined)
        throw new RangeError(`no node ${index + 1} in a cluster of ${started.pids.length}`);
      process.kill(pid, 'SIGKILL');
    },
    version: started.version,
    alive,
    recentLogs: () => [`see ${join(started.dataDir, 'log')} (removed on stop)`],
    stop() {
      stopped ??= run('bash', [RABBITMQ_SCRIPT, 'stop'], { timeout: 60_000 }).then(() => undefined);
      return stopped;
    },
    async restart() {
      if (started.pids.length > 1)
        throw new ClusterUnsupportedError('the bench restarts a single RabbitMQ node only');
      const t0 = performance.now();
      await run('bash', [RABBITMQ_SCRIPT, 'stop-keep'], { timeout: 120_000 });
      const stopMs = performance.now() - t0;
      try {
        const { stdout: out } = await run('bash', [RABBITMQ_SCRIPT, 'restart'], { timeout: 300_000 });
        started = parseStartLine(out);
      } catch (err) {
        const e = err as { stderr?: string; message: string };
        throw new BrokerStartError(`RabbitMQ did not start again: ${e.stderr ?? e.message}`, { cause: err });
      }
      return { stopMs };
    },
  };
}

/** The JSON line `rabbitmq.sh start|restart` prints last. */
function parseStartLine(stdout: string): StartLine {
  const last = stdout.trim().split('\n').at(-1) ?? '';
  let started: StartLine;
  try {
    started = JSON.parse(last) as StartLine;
  } catch (err) {
    throw new BrokerStartError(`unexpected output from rabbitmq.sh: ${stdout}`, { cause: err });
  }
  if (started.pids[0] === undefined || started.urls[0] === undefined)
    throw new BrokerStartError(`rabbitmq.sh reported no node: ${stdout}`);
  return started;
}
