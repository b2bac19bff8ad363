/**
 * Starts and stops the bench's RabbitMQ node through bench/scripts/rabbitmq.sh (loopback only, its
 * own ports, epmd and data dir).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { BrokerUnderTest } from './broker.ts';
import { BrokerStartError } from './broker.ts';

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
  const last = stdout.trim().split('\n').at(-1) ?? '';
  let started: StartLine;
  try {
    started = JSON.parse(last) as StartLine;
  } catch (err) {
    throw new BrokerStartError(`unexpected output from rabbitmq.sh start: ${stdout}`, { cause: err });
  }
  const [pid] = started.pids;
  const [url] = started.urls;
  if (pid === undefined || url === undefined)
    throw new BrokerStartError(`rabbitmq.sh start reported no node: ${stdout}`);
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
    pid,
    pids: started.pids,
    version: started.version,
    alive,
    recentLogs: () => [`see ${join(started.dataDir, 'log')} (removed on stop)`],
    stop() {
      stopped ??= run('bash', [RABBITMQ_SCRIPT, 'stop'], { timeout: 60_000 }).then(() => undefined);
      return stopped;
    },
  };
}
