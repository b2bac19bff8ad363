// Runs the system commands the harness needs (ip, iptables, tc), async for the run and sync for the
// exit path: a Ctrl-C or a crash must still remove every namespace, and 'exit' handlers cannot await.
import { execFile, spawnSync } from 'node:child_process';
import { CommandError } from './errors.ts';

/** Runs `command args…`; resolves with stdout, rejects with CommandError. */
export function run(command: string, args: readonly string[], timeoutMs = 15_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout);
      else {
        const code = typeof error.code === 'number' ? error.code : null;
        reject(new CommandError([command, ...args].join(' '), code, stderr || error.message));
      }
    });
  });
}

/** The same, synchronously; returns whether it succeeded (cleanup goes on past a failed step). */
export function runSync(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 10_000,
): { ok: boolean; stdout: string } {
  const result = spawnSync(command, args, { encoding: 'utf8', timeout: timeoutMs, env });
  return { ok: result.status === 0, stdout: result.stdout ?? '' };
}
