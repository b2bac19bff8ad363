import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';
import { eventually } from '../support/eventually.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnNode } from '../support/spawned.ts';

// `npx -y pnpm@10 start:cluster` is `styx local-cluster`: three nodes on loopback, one command,
// Ctrl-C stops them all, a second run brings them back with their data. `styx ctl cluster_status`
// shows three members online from any node. A node that dies leaves the other two serving, the
// command says so, and SIGHUP (or Enter on a terminal) brings the dead one back.

const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

interface Status {
  readonly running_nodes: string[];
  readonly disk_nodes: string[];
  readonly metadata_leader: unknown;
}

function clusterStatus(managementPort: number): Promise<Status> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'ctl', 'cluster_status', '--formatter', 'json', '--node', `http://127.0.0.1:${managementPort}`],
      { cwd: REPO_ROOT, timeout: 20_000 },
      (error, stdout, stderr) => {
        if (error !== null) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout) as Status);
      },
    );
  });
}

/** A base port whose +1..+3, +10001..+10003 and +20001..+20003 are free now. */
async function freeBase(): Promise<number> {
  for (;;) {
    const base = 30_000 + Math.floor(Math.random() * 10_000);
    const probes = [1, 2, 3].flatMap((i) => [base + i, base + 10_000 + i, base + 20_000 + i]);
    const taken = await Promise.all(probes.map((port) => isTaken(port)));
    if (!taken.some(Boolean)) return base;
  }
}

async function isTaken(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  const server = createServer();
  return new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(true));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(false)));
  });
}

describe('styx local-cluster (npx -y pnpm@10 start:cluster)', () => {
  let root: string | undefined;

  afterAll(async () => {
    killSpawned();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('starts three nodes that form a cluster, stops them on SIGINT, and brings them back with their data', async () => {
    root = await mkdtemp(join(tmpdir(), 'styx-local-cluster-'));
    const base = await freeBase();
    const run = (): Spawned =>
      // In a process group of its own: a kill after a failure reaches the three nodes too.
      spawnNode([CLI, 'local-cluster', '--data-dir', root as string, '--base-port', String(base)], {
        cwd: REPO_ROOT,
        group: true,
      });
    for (const round of ['first start', 'restart with the data']) {
      const cluster = run();
      for (let i = 1; i <= 3; i++) {
        await cluster.waitForOutput(new RegExp(`\\[styx-${i}\\] INFO Styx listening`), 60_000);
      }
      expect(cluster.stdout()).toContain(`ws://127.0.0.1:${base + 1}`);
      for (let i = 1; i <= 3; i++) {
        await eventually(`${round}: node ${i} to see three members running`, async () => {
          const status = await clusterStatus(base + 10_000 + i);
          return (
            status.disk_nodes.length === 3 &&
            status.running_nodes.length === 3 &&
            status.metadata_leader !== null
          );
        });
      }
      const exit = await cluster.stop('SIGINT', 30_000);
      expect(exit.code, round).toBe(0);
      expect(exit.stdout.match(/INFO stopped/g)?.length, round).toBe(3);
    }
  }, 240_000);

  it('keeps the others serving when one node is SIGKILLed, says so, and restarts it on SIGHUP', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'styx-local-cluster-'));
    const base = await freeBase();
    const cluster = spawnNode([CLI, 'local-cluster', '--data-dir', dir, '--base-port', String(base)], {
      cwd: REPO_ROOT,
      group: true,
    });
    try {
      for (let i = 1; i <= 3; i++) {
        await cluster.waitForOutput(new RegExp(`\\[styx-${i}\\] INFO Styx listening`), 60_000);
      }
      await eventually(
        'three members running',
        async () => (await clusterStatus(base + 10_001)).running_nodes.length === 3,
      );
      // The node's own pid, from the file it writes in its data dir.
      const victim = JSON.parse(await readFile(join(dir, 'node-2', 'running-node.json'), 'utf8')) as {
        pid: number;
      };
      process.kill(victim.pid, 'SIGKILL');
      await cluster.waitForOutput(
        /\[local-cluster\] styx-2 killed by SIGKILL; styx-1, styx-3 keep running\. 'kill -HUP \d+' restarts it\./,
        30_000,
      );
      for (const port of [base + 10_001, base + 10_003]) {
        await eventually(`node on ${port} to see styx-2 down and the others up`, async () => {
          const status = await clusterStatus(port);
          return (
            status.running_nodes.length === 2 &&
            !status.running_nodes.includes('styx-2') &&
            status.metadata_leader !== null
          );
        });
      }
      expect(cluster.child.exitCode).toBeNull();

      cluster.child.kill('SIGHUP');
      await cluster.waitForOutput(
        /\[local-cluster\] restarting styx-2\n[\s\S]*\[styx-2\] INFO Styx listening/,
        60_000,
      );
      await eventually(
        'styx-2 back among the running members',
        async () => (await clusterStatus(base + 10_002)).running_nodes.length === 3,
      );

      const exit = await cluster.stop('SIGINT', 30_000);
      expect(exit.code, exit.stdout.slice(exit.stdout.lastIndexOf('Styx listening'))).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});
