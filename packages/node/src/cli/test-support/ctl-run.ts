/** Test support: run `styx ctl` in-process against a node's management URL and keep what it printed. */
import { ctlCommand } from '../ctl-command.ts';

export interface CtlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** `styx ctl ...argv` with STYX_NODE set to `node`; its exit code and output. */
export async function runCtl(node: string, argv: readonly string[]): Promise<CtlRun> {
  let stdout = '';
  let stderr = '';
  const code = await ctlCommand([...argv], {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: { STYX_NODE: node },
  });
  return { code, stdout, stderr };
}
