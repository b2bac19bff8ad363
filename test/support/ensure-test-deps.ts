// What the test suite needs beyond npm, brought by the README's test command itself: the root
// "test" script runs `node test/support/ensure-test-deps.ts` before vitest. Today that is Debian's
// Chromium for the browser SDK test (test/browser/browser-sdk.test.ts). When it is there this does
// nothing; when it is missing, root installs it with apt-get, anyone else is told the one command to
// run and the tests do not start (exit 1): a test that cannot run fails loudly, it never skips.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Where Debian's `chromium` package puts the browser; the browser test launches exactly this. */
export const CHROMIUM = '/usr/bin/chromium';

/** What to install when Chromium is missing (for whoever is not root). */
export const INSTALL_CHROMIUM = 'sudo apt-get install chromium';

/** The tell-tale line for a missing Chromium that could not be installed here. */
export const MISSING_CHROMIUM =
  `The browser SDK test (test/browser/browser-sdk.test.ts) needs Debian's Chromium at ${CHROMIUM}, ` +
  `which is missing. Install it, then run the tests again:\n\n  ${INSTALL_CHROMIUM}\n`;

/** The machine, as far as this script touches it (a fake one in its tests). */
export interface System {
  exists(path: string): boolean;
  readonly isRoot: boolean;
  /** Runs `command args…` to completion; its exit status, or null when it could not run at all. */
  run(command: string, args: readonly string[], env: NodeJS.ProcessEnv): number | null;
  /** A line for the person running the tests (stderr). */
  say(text: string): void;
}

/** Makes sure Chromium is installed; returns the exit code (0: the tests may run). */
export function ensureChromium(system: System): number {
  if (system.exists(CHROMIUM)) return 0;
  if (!system.isRoot) {
    system.say(MISSING_CHROMIUM);
    return 1;
  }
  system.say(`${CHROMIUM} is missing: installing Debian's chromium package for the browser test`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const installed =
    system.run('apt-get', ['update', '-qq'], env) === 0 &&
    system.run('apt-get', ['install', '-y', '-qq', 'chromium'], env) === 0 &&
    system.exists(CHROMIUM);
  if (installed) return 0;
  system.say(`apt-get could not install chromium.\n${MISSING_CHROMIUM}`);
  return 1;
}

const thisMachine: System = {
  exists: existsSync,
  isRoot: process.getuid?.() === 0,
  run(command, args, env) {
    // apt-get's progress is dropped (as noisy as it is long); its errors go to stderr.
    const result = spawnSync(command, args, { env, stdio: ['ignore', 'ignore', 2] });
    return result.error === undefined ? result.status : null;
  },
  say(text) {
    process.stderr.write(`${text}\n`);
  },
};

if (import.meta.main) process.exitCode = ensureChromium(thisMachine);
