// `styx ctl` run as an operator runs it: a child process of the CLI against a node's management API.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './broker-process.ts';
import type { TestCluster } from './cluster-processes.ts';

/** Longest one `styx ctl` run may take, ms (a bound against a hang). */
const CTL_RUN_MS = 45_000;

export interface CtlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `styx ctl ARGS` against node `via`'s management API; resolves with its exit code and output. */
export function ctl(cluster: TestCluster, via: string, ...args: string[]): Promise<CtlRun> {
  const main = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');
  const node = cluster.node(via).broker.managementUrl ?? '';
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [main, 'ctl', ...args, '--node', node],
      { cwd: REPO_ROOT, timeout: CTL_RUN_MS },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}
