// A reader's shell for the documentation's commands: /bin/sh, the machine's own `node` first on the
// PATH (not node_modules' Node 24, which vitest runs on), nothing a surrounding `pnpm test` set, and
// the directories a test puts `styx` in ahead of the rest.
import { execFile } from 'node:child_process';

/** Longest one command may take, ms (a bound against a hang, not a performance assertion). */
export const COMMAND_TIMEOUT_MS = 60_000;

/** How a command ended. */
export interface ShellRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment of a plain shell with `binDirs` first on its PATH, plus `extra`. */
export function readerEnv(binDirs: readonly string[], extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^(npm|pnpm)_/i.test(key) && key !== 'NODE' && key !== 'STYX_NODE',
    ),
  );
  const machinePath = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => dir !== '' && !dir.includes('node_modules'));
  env.PATH = [...binDirs, ...machinePath].join(':');
  return { ...env, ...extra };
}

/** Runs `line` in /bin/sh in `cwd` with `env`; resolves with its exit code and output. */
export function runInShell(line: string, cwd: string, env: NodeJS.ProcessEnv): Promise<ShellRun> {
  return new Promise((resolve, reject) => {
    execFile('/bin/sh', ['-c', line], { cwd, env, timeout: COMMAND_TIMEOUT_MS }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== 'number') reject(error);
      else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
    });
  });
}
