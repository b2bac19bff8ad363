// The node flags of a broker process (SERVER_NODE_FLAGS) are given by every launcher that cannot
// import them: the `styx` launcher on the PATH (bin/styx, what the systemd unit runs) and the root
// package's scripts that start a node. The bench and `styx local-cluster` import the list itself.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SERVER_NODE_FLAGS } from '@styx/node/server-node-flags';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/broker-process.ts';

const MAIN = 'packages/node/src/cli/main.ts';

/** The node flags of a command line `node FLAGS… <main.ts> …` (what comes before main.ts). */
function flagsBeforeMain(line: string): string[] {
  const at = line.indexOf(MAIN);
  if (at < 0) throw new Error(`no ${MAIN} in: ${line}`);
  const words = line.slice(0, at).trim().split(/\s+/);
  return words.filter((word) => word.startsWith('--'));
}

describe('node flags of a broker process', () => {
  it('are a non-empty list of V8 flags that this Node accepts', () => {
    expect(SERVER_NODE_FLAGS.length).toBeGreaterThan(0);
    for (const flag of SERVER_NODE_FLAGS) expect(flag).toMatch(/^--[a-z-]+=\d+$/);
    // process.allowedNodeEnvironmentFlags lists what NODE_OPTIONS and the command line take.
    for (const flag of SERVER_NODE_FLAGS) {
      expect(process.allowedNodeEnvironmentFlags.has(flag.split('=')[0] as string)).toBe(true);
    }
  });

  it('bin/styx execs main.ts with exactly them', async () => {
    const launcher = await readFile(join(REPO_ROOT, 'bin', 'styx'), 'utf8');
    const exec = launcher.split('\n').filter((line) => line.startsWith('exec '));
    expect(exec).toHaveLength(1);
    expect(flagsBeforeMain(exec[0] as string)).toEqual([...SERVER_NODE_FLAGS]);
  });

  it("the root package's scripts that run a node give exactly them", async () => {
    const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    for (const name of ['start', 'styx']) {
      const script = pkg.scripts[name];
      expect(script, name).toBeDefined();
      expect(flagsBeforeMain(script as string), name).toEqual([...SERVER_NODE_FLAGS]);
    }
  });
});
