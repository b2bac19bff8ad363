// The documentation's commands for the local cluster (the table's `run: 'cluster'`), run as written
// in a reader's shell (test/support/reader-shell.ts) with the repository's bin/styx on the PATH (the
// launcher `npm install -g .` links; docs-commands-broker.test.ts runs that install):
// `npx -y pnpm@10 start:cluster`, the cluster status, replica, maintenance and feature-flag commands,
// and the failover drill: `kill -9` of node 2's pid from its running-node.json, `kill -HUP PID` to
// bring it back.
//
// What the test changes, and only that: `start:cluster` gets `-- --base-port B --data-dir
// DIR/styx-cluster` (free ports, the test's directory, which is the working directory of the
// `styx …` commands, so `./styx-cluster` is there); the documented ports 1568N become B+10000+N;
// `npx … styx ctl` commands without `--node` run from the repository with $STYX_NODE naming node 1
// (the reader's ./styx-cluster would be the repository's); PID is the local cluster's pid as its
// message prints it; `styx-4`, the docs' node that joined later, is styx-3 here, which `shrink` has
// just emptied. The queue `orders` the replica commands name is declared by the test.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as amqp from '@styx/client';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';
import { readDocCommands } from '../support/doc-commands.ts';
import { eventually } from '../support/eventually.ts';
import { freePortBlock } from '../support/free-port-block.ts';
import type { ShellRun } from '../support/reader-shell.ts';
import { readerEnv, runInShell } from '../support/reader-shell.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnCommand } from '../support/spawned.ts';
import { ruleFor } from './docs-commands-table.ts';

const root = await mkdtemp(join(tmpdir(), 'styx-docs-cluster-'));
const base = await freePortBlock();
const managementOf = (n: number) => `http://127.0.0.1:${base + 10_000 + n}`;
const env = readerEnv([join(REPO_ROOT, 'bin')]);
const AUTH = { authorization: `Basic ${Buffer.from('guest:guest').toString('base64')}` };

let cluster: Spawned | undefined;

afterAll(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

/** The docs' command with the test's ports. */
function withPorts(command: string): string {
  return command.replace(/http:\/\/127\.0\.0\.1:1568([1-3])/g, (_m, n: string) => managementOf(Number(n)));
}

function run(command: string): Promise<ShellRun> {
  const fromRepo = command.startsWith('npx ');
  const extra = fromRepo && !command.includes('--node ') ? { STYX_NODE: managementOf(1) } : {};
  return runInShell(withPorts(command), fromRepo ? REPO_ROOT : root, { ...env, ...extra });
}

async function ok(command: string): Promise<ShellRun> {
  const ran = await run(command);
  expect({ command, code: ran.code }, ran.stdout + ran.stderr).toEqual({ command, code: 0 });
  return ran;
}

/** The cluster as node `n` sees it: running member names. */
async function runningMembers(n = 1): Promise<string[]> {
  const response = await fetch(`${managementOf(n)}/api/nodes`, { headers: AUTH });
  const nodes = (await response.json()) as { name: string; running: boolean }[];
  return nodes
    .filter((node) => node.running)
    .map((node) => node.name)
    .sort();
}

const ALL = ['styx-1', 'styx-2', 'styx-3'];

interface Step {
  readonly command: string;
  /** Runs the command (as written, through `run`) and checks what it did. */
  readonly act: (command: string) => Promise<void>;
}

/** Retries a membership change the queue may still be carrying out from the step before. */
async function okOnceSettled(command: string): Promise<void> {
  let last: ShellRun | undefined;
  await eventually(
    command,
    async () => {
      last = await run(command);
      return last.code === 0;
    },
    45_000,
    1_000,
  ).catch((error: unknown) => {
    throw new Error(`${String(error)}\n${last?.stdout}${last?.stderr}`);
  });
}

const STEPS: readonly Step[] = [
  {
    command: 'npx -y pnpm@10 start:cluster',
    act: async (command) => {
      const [program = '', ...words] = command.split(' ');
      cluster = spawnCommand(
        program,
        [...words, '--', '--base-port', String(base), '--data-dir', join(root, 'styx-cluster')],
        { cwd: REPO_ROOT, env, group: true },
      );
      await cluster.waitForOutput(/Ctrl-C stops them all/, 60_000);
      await eventually(
        'three running members',
        async () => (await runningMembers()).join() === ALL.join(),
        90_000,
        500,
      );
      const conn = await amqp.connect(`ws://127.0.0.1:${base + 1}`);
      await (await conn.createChannel()).assertQueue('orders', { durable: true });
      await conn.close();
    },
  },
  {
    command: 'npx -y pnpm@10 styx ctl cluster_status --node http://127.0.0.1:15682',
    act: async (command) => {
      const ran = await ok(command);
      // The three nodes, in the order they joined (which a loaded machine may change).
      const running = /Running Nodes\n\n((?:styx-\d\n)+)/.exec(ran.stdout)?.[1] ?? '';
      expect(running.trim().split('\n').sort()).toEqual(['styx-1', 'styx-2', 'styx-3']);
    },
  },
  {
    command: 'styx ctl cluster_status',
    act: async (command) => {
      const ran = await ok(command);
      // From ./styx-cluster, saying which of its nodes it asks.
      expect(ran.stderr).toContain('running in ./styx-cluster');
      expect(ran.stdout).toContain('styx-3');
    },
  },
  {
    command: 'styx ctl quorum_status orders',
    act: async (c) => expect((await ok(c)).stdout).toContain('styx-3'),
  },
  { command: 'styx ctl check_queues', act: async (c) => expect((await ok(c)).stdout).toMatch(/\torders\t/) },
  { command: 'styx ctl delete_member orders styx-3', act: okOnceSettled },
  { command: 'styx ctl add_member orders styx-3', act: okOnceSettled },
  { command: 'styx ctl shrink styx-3', act: okOnceSettled },
  {
    command: "styx ctl grow styx-4 all --queue-pattern '^orders'",
    act: (command) => okOnceSettled(command.replace('styx-4', 'styx-3')),
  },
  { command: 'styx ctl rebalance', act: async (c) => void (await ok(c)) },
  {
    command: 'styx ctl list_queues name leader members online under_replicated',
    act: async (c) => expect((await ok(c)).stdout).toMatch(/^orders\tstyx-\d\t/m),
  },
  {
    command: 'npx -y pnpm@10 styx ctl check_if_node_is_quorum_critical --node http://127.0.0.1:15681',
    act: async (c) => void (await ok(c)),
  },
  {
    command: 'npx -y pnpm@10 styx ctl drain --node http://127.0.0.1:15681',
    act: async (c) => void (await ok(c)),
  },
  {
    command: 'npx -y pnpm@10 styx ctl revive --node http://127.0.0.1:15681',
    act: async (c) => void (await ok(c)),
  },
  {
    command:
      'npx -y pnpm@10 styx ctl await_online_quorum_plus_one --node http://127.0.0.1:15681 --timeout 120',
    act: async (c) => void (await ok(c)),
  },
  {
    command: 'npx -y pnpm@10 styx ctl list_feature_flags # name, state, supported_by, lacking, desc',
    act: async (c) => expect((await ok(c)).stdout).toMatch(/^redrive\tenabled\t/m),
  },
  {
    command: "npx -y pnpm@10 styx ctl enable_feature_flag all # or a flag's name",
    act: async (c) => void (await ok(c)),
  },
  {
    command: `kill -9 $(node -p "require('./styx-cluster/node-2/running-node.json').pid")`,
    act: async (command) => {
      await ok(command);
      await cluster?.waitForOutput(/styx-2 killed by SIGKILL; styx-1, styx-3 keep running/, 30_000);
      await eventually(
        'styx-2 seen down',
        async () => !(await runningMembers()).includes('styx-2'),
        30_000,
        500,
      );
    },
  },
  {
    command: 'kill -HUP PID',
    act: async (command) => {
      // PID: the local cluster's, as its message prints it.
      const [, pid] = (await cluster?.waitForOutput(/'kill -HUP (\d+)' restarts it/, 1_000)) ?? [];
      expect(pid).toMatch(/^\d+$/);
      await ok(command.replace('PID', pid as string));
      await eventually(
        'styx-2 back',
        async () => (await runningMembers()).join() === ALL.join(),
        60_000,
        500,
      );
    },
  },
];

describe('the local-cluster commands of the docs, run as written', () => {
  it('are the commands the table says this test runs', async () => {
    const documented = new Set(
      (await readDocCommands(REPO_ROOT))
        .filter((c) => {
          const how = ruleFor(c.command)?.how;
          return how !== undefined && 'run' in how && how.run === 'cluster';
        })
        .map((c) => c.command),
    );
    expect(STEPS.map((s) => s.command).sort()).toEqual([...documented].sort());
  });

  for (const step of STEPS) {
    it(step.command, { timeout: 180_000 }, () => step.act(step.command));
  }

  it('Ctrl-C stops every node cleanly, and the command ends', { timeout: 60_000 }, async () => {
    // Ctrl-C reaches the terminal's whole process group: npx and pnpm end by the signal, as they do
    // on a terminal; what matters is that each node drained and stopped.
    const exit = await cluster?.stop('SIGINT', 45_000);
    for (const name of ALL) expect(exit?.stdout).toMatch(new RegExp(`^\\[${name}\\] INFO stopped$`, 'm'));
  });
});
