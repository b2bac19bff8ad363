// What the test suite needs beyond npm, brought by the README's test command itself: the root
// "test" script runs `node test/support/ensure-test-deps.ts` before vitest. Today those are Debian's
// Chromium for the browser tests (test/browser/), Debian's dnsmasq, the DNS server of the peer
// discovery test (test/cluster/dns-discovery.test.ts), Debian's openssl, which makes the TLS
// tests' throwaway CA, and the real AMQP 0-9-1 clients of test/clients/: Debian's python3-pika, the
// RabbitMQ Java client (librabbitmq-client-java) and a JDK to compile its programs
// (default-jdk-headless). When they are there this does nothing; when
// one is missing, root installs it with apt-get, anyone else is told the one command to run and the
// tests do not start (exit 1): a test that cannot run fails loudly, it never skips.
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
  return ensurePackage(system, {
    path: CHROMIUM,
    name: 'chromium',
    why: 'the browser test',
    missing: MISSING_CHROMIUM,
  });
}

/** Where Debian's `dnsmasq` package puts the DNS server; the discovery test runs exactly this. */
export const DNSMASQ = '/usr/sbin/dnsmasq';

/** What to install when dnsmasq is missing (for whoever is not root). */
export const INSTALL_DNSMASQ = 'sudo apt-get install dnsmasq';

/** The tell-tale line for a missing dnsmasq that could not be installed here. */
export const MISSING_DNSMASQ =
  `The DNS peer discovery test (test/cluster/dns-discovery.test.ts) needs Debian's dnsmasq at ${DNSMASQ}, ` +
  `which is missing. Install it, then run the tests again:\n\n  ${INSTALL_DNSMASQ}\n`;

/** Makes sure dnsmasq is installed; returns the exit code (0: the tests may run). */
export function ensureDnsmasq(system: System): number {
  return ensurePackage(system, {
    path: DNSMASQ,
    name: 'dnsmasq',
    why: 'the DNS discovery test',
    missing: MISSING_DNSMASQ,
  });
}

/** Where Debian's `openssl` package puts the command; the TLS tests make their throwaway CA with it. */
export const OPENSSL = '/usr/bin/openssl';

/** What to install when openssl is missing (for whoever is not root). */
export const INSTALL_OPENSSL = 'sudo apt-get install openssl';

/** The tell-tale line for a missing openssl that could not be installed here. */
export const MISSING_OPENSSL =
  `The TLS tests (test/integration/tls.test.ts, packages/node/src/transport/tls/) need Debian's openssl at ${OPENSSL}, ` +
  `which is missing. Install it, then run the tests again:\n\n  ${INSTALL_OPENSSL}\n`;

/** Makes sure openssl is installed; returns the exit code (0: the tests may run). */
export function ensureOpenssl(system: System): number {
  return ensurePackage(system, {
    path: OPENSSL,
    name: 'openssl',
    why: 'the TLS tests',
    missing: MISSING_OPENSSL,
  });
}

/** Debian's own python3, the one python3-pika installs into (a pyenv or venv python3 may not see it). */
export const PYTHON = '/usr/bin/python3';

/** A Debian package the tests need: the file that shows it is there, and what to say when it is not. */
export interface DebianPackage {
  readonly name: string;
  readonly path: string;
  /** What to install when it is missing (for whoever is not root). */
  readonly install: string;
  /** The tell-tale line for a missing package that could not be installed here. */
  readonly missing: string;
  /** Makes sure it is installed; returns the exit code (0: the tests may run). */
  ensure(system: System): number;
}

function debianPackage(name: string, path: string, why: string, tests: string): DebianPackage {
  const install = `sudo apt-get install ${name}`;
  const missing =
    `${tests} need Debian's ${name} at ${path}, which is missing. ` +
    `Install it, then run the tests again:\n\n  ${install}\n`;
  return {
    name,
    path,
    install,
    missing,
    ensure: (system) => ensurePackage(system, { path, name, why, missing }),
  };
}

/** pika, which the pika client programs import. */
export const PIKA = debianPackage(
  'python3-pika',
  '/usr/lib/python3/dist-packages/pika/__init__.py',
  'the pika client tests',
  'The pika client tests (test/clients/pika.test.ts)',
);

/** The RabbitMQ Java client's jar. */
export const JAVA_CLIENT = debianPackage(
  'librabbitmq-client-java',
  '/usr/share/java/amqp-client.jar',
  'the Java client tests',
  'The Java client tests (test/clients/java.test.ts)',
);

/** A JDK: javac compiles the Java client programs, java runs them. */
export const JDK = debianPackage(
  'default-jdk-headless',
  '/usr/bin/javac',
  'the Java client tests',
  'The Java client tests (test/clients/java.test.ts)',
);

/** A Debian package a test needs: the file it provides, why, and the text for whoever is not root. */
interface NeededPackage {
  readonly path: string;
  readonly name: string;
  readonly why: string;
  readonly missing: string;
}

/** Installs `wanted` with apt-get as root when its file is missing; returns the exit code. */
function ensurePackage(system: System, wanted: NeededPackage): number {
  if (system.exists(wanted.path)) return 0;
  if (!system.isRoot) {
    system.say(wanted.missing);
    return 1;
  }
  system.say(`${wanted.path} is missing: installing Debian's ${wanted.name} package for ${wanted.why}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const installed =
    system.run('apt-get', ['update', '-qq'], env) === 0 &&
    system.run('apt-get', ['install', '-y', '-qq', wanted.name], env) === 0 &&
    system.exists(wanted.path);
  if (installed) return 0;
  system.say(`apt-get could not install ${wanted.name}.\n${wanted.missing}`);
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

if (import.meta.main) {
  process.exitCode =
    ensureChromium(thisMachine) ||
    ensureDnsmasq(thisMachine) ||
    ensureOpenssl(thisMachine) ||
    PIKA.ensure(thisMachine) ||
    JAVA_CLIENT.ensure(thisMachine) ||
    JDK.ensure(thisMachine);
}
