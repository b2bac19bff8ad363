// `styx` as the README installs it: `npm install -g .` from the repository (here with --prefix into a
// temporary directory) puts bin/styx on the PATH, which runs the CLI on the repository's Node 24
// while the PATH's first `node` is the machine's own. `styx server` writes where it listens into its
// data dir, and `styx ctl` finds it from there with no --node: in ./styx-data, with --data-dir, with
// the server's --config file; $STYX_NODE and --node still win; when it cannot tell, it says on
// stderr which node it talks to.

import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONFIG_KEYS } from '@styx/node';
import { SERVER_NODE_FLAGS } from '@styx/node/server-node-flags';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, REPO_ROOT } from '../support/broker-process.ts';
import type { Spawned } from '../support/spawned.ts';
import { killSpawned, spawnCommand } from '../support/spawned.ts';

/** Longest a ctl run may take, ms (a bound against a hang, not a performance assertion). */
const RUN_TIMEOUT_MS = 30_000;

let root: string;
let prefix: string;
let env: NodeJS.ProcessEnv;

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `styx args…` from the PATH (the installed launcher) in `cwd`. */
function styx(cwd: string, args: readonly string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      'styx',
      [...args],
      { cwd, timeout: RUN_TIMEOUT_MS, env: { ...env, ...extraEnv } },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}

/** Starts `styx server args…` in `cwd` and waits until it listens. */
async function server(cwd: string, args: readonly string[]): Promise<Spawned> {
  const p = spawnCommand('styx', ['server', '--log-format', 'json', ...args], { cwd, env });
  await p.waitForOutput(/"msg":"Styx listening on /, 60_000);
  return p;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'styx-command-'));
  prefix = join(root, 'global');
  // The README's line, with --prefix so the test installs into its own directory.
  const readme = await readFile(join(REPO_ROOT, 'README.md'), 'utf8');
  expect(readme).toContain('```sh\nnpm install -g .\n```');
  execFileSync('npm', ['install', '-g', '.', '--prefix', prefix, '--no-audit', '--no-fund'], {
    cwd: REPO_ROOT,
    stdio: 'pipe',
    timeout: 120_000,
  });
  const withoutTestNode = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => !existsSync(join(dir, 'node')) || !dir.includes('node_modules'))
    .join(':');
  env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^(npm|pnpm)_/i.test(key) && key !== 'NODE' && key !== 'STYX_NODE',
    ),
  );
  env.PATH = `${join(prefix, 'bin')}:${withoutTestNode}`;
}, 180_000);

afterAll(async () => {
  killSpawned();
  await rm(root, { recursive: true, force: true });
});

describe('styx on the PATH', () => {
  it('runs the CLI on the Node 24 of the repository, whichever node comes first on the PATH', async () => {
    const version = await styx(root, ['--version']);
    expect(version).toEqual({ code: 0, stdout: 'styx 0.1.0\n', stderr: '' });
  });

  it('styx ctl finds a server on a non-default management port from ./styx-data, --data-dir or STYX_NODE, and says when it cannot tell', async () => {
    const work = join(root, 'work');
    const elsewhere = join(root, 'elsewhere');
    await mkdir(work, { recursive: true });
    await mkdir(elsewhere, { recursive: true });
    const managementPort = await freePort();
    const node = await server(work, [
      '--amqp-port',
      '0',
      '--port',
      String(await freePort()),
      '--management-port',
      String(managementPort),
    ]);
    const file = JSON.parse(await readFile(join(work, 'styx-data', 'running-node.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    // The launcher execs the node with the broker's node flags (server-node-flags.ts).
    const cmdline = (await readFile(`/proc/${node.child.pid}/cmdline`, 'utf8')).split('\0');
    expect(cmdline.slice(1, 1 + SERVER_NODE_FLAGS.length)).toEqual([...SERVER_NODE_FLAGS]);
    expect(file).toMatchObject({
      pid: node.child.pid,
      management_url: `http://127.0.0.1:${managementPort}`,
      cluster_address: null,
    });

    const found = await styx(work, ['ctl', 'list_queues']);
    expect(found).toEqual({
      code: 0,
      stdout: 'Listing queues for vhost / ...\nname\tmessages\n',
      stderr: '',
    });

    const byDir = await styx(elsewhere, ['ctl', 'list_vhosts', '--data-dir', join(work, 'styx-data')]);
    expect(byDir).toMatchObject({ code: 0, stderr: '' });
    expect(byDir.stdout).toContain('\n/\n');

    // Nothing running in ./styx-data here: it says which node it tries instead of staying silent.
    const unsure = await styx(elsewhere, ['ctl', 'list_queues']);
    expect(unsure.stderr).toContain(
      `styx ctl: no node is running in ${join(elsewhere, 'styx-data')}; talking to http://127.0.0.1:15680`,
    );

    // STYX_NODE (and --node) say which node, whatever the data dir.
    const fromEnv = await styx(elsewhere, ['ctl', 'list_queues'], {
      STYX_NODE: `http://127.0.0.1:${managementPort}`,
    });
    expect(fromEnv).toMatchObject({ code: 0, stderr: '' });

    const stopped = await node.stop('SIGTERM', 30_000);
    expect(stopped.code).toBe(0);
    expect(existsSync(join(work, 'styx-data', 'running-node.json'))).toBe(false);
    const afterStop = await styx(work, ['ctl', 'list_queues']);
    expect(afterStop.stderr).toContain(`no node is running in ${join(work, 'styx-data')}`);
  }, 180_000);

  it('styx server --config FILE listens where the file says, and styx ctl --config FILE finds it', async () => {
    const dir = join(root, 'configured');
    await mkdir(dir, { recursive: true });
    const port = await freePort();
    const managementPort = await freePort();
    const conf = join(dir, 'styx.conf');
    await writeFile(
      conf,
      `# styx.conf\ndata_dir = ${join(dir, 'data')}\nlisteners.port = ${port}\nmanagement.port = ${managementPort}\nlisteners.amqp.port = 0\nlog.level = info\n`,
    );
    const node = await server(dir, ['--config', conf]);
    expect(node.stdout()).toContain(`"url":"ws://127.0.0.1:${port}"`);
    expect(node.stdout()).toContain(`"dataDir":"${join(dir, 'data')}"`);
    const found = await styx(root, ['ctl', 'list_vhosts', '--config', conf]);
    expect(found).toMatchObject({ code: 0, stderr: '' });

    const bad = join(dir, 'bad.conf');
    await writeFile(bad, 'listeners.port = 5680\nlisteners.prot = 5681\n');
    const refused = await styx(dir, ['server', '--config', bad]);
    expect(refused).toEqual({
      code: 2,
      stdout: '',
      stderr: `styx server: ${bad}:2: unknown key 'listeners.prot' (known keys: ${CONFIG_KEYS.map(([key]) => key).join(', ')})\n`,
    });
    expect((await node.stop('SIGTERM', 30_000)).code).toBe(0);
  }, 180_000);
});
