// Child processes for tests (the CLI, example programs, the README's commands): output collected as
// it arrives, every wait bounded, and nothing left running (killSpawned() in afterAll).
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';

/** Longest a wait on a child (its exit, a line of output) may take unless a test says otherwise, ms. */
export const CHILD_WAIT_MS = 20_000;

/** How a child ended, with everything it printed. */
export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Spawned {
  readonly child: ChildProcess;
  /** What it printed so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves once it exited and its output is fully read; SIGKILLs it and rejects after `timeoutMs`. */
  exited(timeoutMs?: number): Promise<Exit>;
  /** Resolves with the first match of `pattern` in stdout; rejects if it exits first or after `timeoutMs`. */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Sends `signal` and waits for the exit (bounded as `exited`). */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
  /** Types `text` on its stdin (spawned with `stdin: true` only). */
  write(text: string): void;
}

export interface SpawnOptions {
  readonly cwd: string;
  readonly env?: NodeJS.ProcessEnv;
  /**
   * Run it in a process group of its own, which every kill here then reaches whole: for a command
   * such as `npx pnpm start`, whose program runs in a grandchild.
   */
  readonly group?: boolean;
  /** Give it a stdin to `write` to (an interactive program); otherwise stdin is closed. */
  readonly stdin?: boolean;
}

/** Each running child, with how to SIGKILL it (and its group). */
const running = new Map<ChildProcess, () => void>();

/** Runs `node args…` with the current Node binary (process.execPath), stdio piped. */
export function spawnNode(args: readonly string[], options: SpawnOptions): Spawned {
  return spawnCommand(process.execPath, args, options);
}

/** Runs `command args…` (looked up on PATH), stdio piped. */
export function spawnCommand(command: string, args: readonly string[], options: SpawnOptions): Spawned {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    stdio: [options.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    detached: options.group === true,
  });
  const kill = (signal: NodeJS.Signals): void => {
    if (options.group !== true || child.pid === undefined) {
      child.kill(signal);
      return;
    }
    try {
      process.kill(-child.pid, signal);
    } catch {
      // the group is gone already
    }
  };
  running.set(child, () => kill('SIGKILL'));
  let out = '';
  let err = '';
  let finished: Exit | undefined;
  const listeners = new Set<() => void>();
  const notify = (): void => {
    for (const listener of [...listeners]) listener();
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
    notify();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    err += chunk;
  });
  // 'close' (not 'exit') comes after stdout and stderr are fully read.
  child.once('close', (code, signal) => {
    running.delete(child);
    finished = { code, signal, stdout: out, stderr: err };
    notify();
  });
  const name = command === process.execPath ? 'node' : command;
  const describeChild = () => `${name} ${args.join(' ')}\n--- stdout:\n${out}\n--- stderr:\n${err}`;

  const waitUntil = <T>(ready: () => T | undefined, timeoutMs: number, what: string): Promise<T> =>
    new Promise((resolve, reject) => {
      const check = (): void => {
        const value = ready();
        if (value !== undefined) {
          done();
          resolve(value);
        } else if (finished !== undefined) {
          done();
          reject(
            new Error(
              `exited (code ${finished.code}, signal ${finished.signal}) before ${what}: ${describeChild()}`,
            ),
          );
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no ${what} within ${timeoutMs} ms: ${describeChild()}`));
      }, timeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        listeners.delete(check);
      };
      listeners.add(check);
      check();
    });

  const exited = async (timeoutMs = CHILD_WAIT_MS): Promise<Exit> => {
    try {
      return await waitUntil(() => finished, timeoutMs, 'exit');
    } catch (e) {
      kill('SIGKILL');
      throw e;
    }
  };

  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitForOutput: (pattern, timeoutMs = CHILD_WAIT_MS) =>
      waitUntil(() => out.match(pattern) ?? undefined, timeoutMs, `output matching ${pattern}`),
    stop: (signal = 'SIGINT', timeoutMs = CHILD_WAIT_MS) => {
      if (finished === undefined) kill(signal);
      return exited(timeoutMs);
    },
    write: (text) => {
      if (child.stdin === null) throw new Error(`${name} was spawned without stdin: true`);
      child.stdin.write(text);
    },
  };
}

/** SIGKILLs every child spawned here that is still running, with its group (for afterAll). */
export function killSpawned(): void {
  for (const kill of running.values()) kill();
  running.clear();
}
