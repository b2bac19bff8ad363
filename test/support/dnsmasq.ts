/**
 * Debian's dnsmasq as a real DNS server on loopback for peer discovery tests: it serves the records
 * a test gives (dnsmasq's own config lines: `srv-host=…`, `host-record=…`) on 127.0.0.1 at a free
 * port, answers NXDOMAIN for any other name under `.test`, and forwards nothing. `setRecords`
 * restarts it on the same port with other records (dnsmasq re-reads SRV records only at start).
 * `npx -y pnpm@10 test` installs dnsmasq first (ensure-test-deps.ts).
 */
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './broker-process.ts';
import { DNSMASQ } from './ensure-test-deps.ts';

export class Dnsmasq {
  readonly port: number;
  readonly #dir: string;
  #child: ChildProcess | undefined;

  private constructor(dir: string, port: number) {
    this.#dir = dir;
    this.port = port;
  }

  /** Start dnsmasq serving `records`; its config and nothing else goes in `dir`. */
  static async start(dir: string, records: readonly string[]): Promise<Dnsmasq> {
    const dns = new Dnsmasq(dir, await freePort());
    await dns.setRecords(records);
    return dns;
  }

  /** `127.0.0.1:PORT`, for `--discover-dns-server`. */
  get server(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** (Re)start serving exactly `records`. */
  async setRecords(records: readonly string[]): Promise<void> {
    await this.stop();
    const conf = join(this.#dir, 'dnsmasq.conf');
    await writeFile(conf, `${['local=/test/', ...records].join('\n')}\n`);
    const child = spawn(
      DNSMASQ,
      [
        '--keep-in-foreground',
        `--conf-file=${conf}`,
        '--no-resolv',
        '--no-hosts',
        '--listen-address=127.0.0.1',
        '--bind-interfaces',
        `--port=${this.port}`,
        '--pid-file=',
        ...(process.getuid?.() === 0 ? ['--user=root'] : []),
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const stderr: string[] = [];
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
    this.#child = child;
    // Ready once it answers on TCP (it binds UDP and TCP together); bounded.
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null)
        throw new Error(`dnsmasq exited with ${child.exitCode}: ${stderr.join('')}`);
      if (await answersTcp(this.port)) return;
      if (Date.now() > deadline) throw new Error(`dnsmasq did not listen within 10 s: ${stderr.join('')}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async stop(): Promise<void> {
    const child = this.#child;
    this.#child = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

async function answersTcp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
