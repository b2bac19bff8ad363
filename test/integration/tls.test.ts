// TLS against real `styx server` processes, with a throwaway CA made by openssl in the test: the SDK
// over wss (with and without the CA, with and without a client certificate), the management API and
// console over https, `styx ctl` over https, guest from a non-loopback address over wss, reloading
// the certificate without a restart, and bad TLS flags at start.
import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { Connection } from '@styx/client';
import * as amqp from '@styx/client';
import type { IssuedCertificate, ThrowawayPki } from '@styx/node';
import { createThrowawayPki } from '@styx/node';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { freePort, REPO_ROOT, startBroker } from '../support/broker-process.ts';
import { getOne, rejectionOf, unique, WAIT_MS, waitFor, withTimeout } from './messaging-helpers.ts';

const CLI = join(REPO_ROOT, 'packages', 'node', 'src', 'cli', 'main.ts');

/** The machine's first external IPv4 address, if any (see auth.test.ts). */
const EXTERNAL_ADDRESS = Object.values(networkInterfaces())
  .flatMap((list) => list ?? [])
  .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address;

let pki: ThrowawayPki;
let ca: string;
let serverCert: IssuedCertificate;
let rotated: IssuedCertificate;
let clientCert: { cert: string; key: string };
/** The files node A serves from (copies the test replaces to rotate the certificate). */
let live: { certFile: string; keyFile: string };
/** Node A: plain and TLS listeners side by side. */
let a: BrokerProcess;
/** Node B: TLS only, client certificates required (--tls-ca). */
let b: BrokerProcess;
const open: Connection[] = [];

interface RunningNodeFile {
  url: string;
  tls_url: string | null;
  management_url: string | null;
  management_tls_url: string | null;
}

async function runningNode(node: BrokerProcess): Promise<RunningNodeFile> {
  return JSON.parse(await readFile(join(node.dataDir, 'running-node.json'), 'utf8')) as RunningNodeFile;
}

beforeAll(async () => {
  pki = await createThrowawayPki();
  ca = await readFile(pki.caFile, 'utf8');
  const client = await pki.issue('app', 'client');
  [serverCert, rotated] = await Promise.all([pki.issue('node', 'server'), pki.issue('node', 'server')]);
  clientCert = { cert: await readFile(client.certFile, 'utf8'), key: await readFile(client.keyFile, 'utf8') };
  live = { certFile: join(pki.dir, 'live.crt'), keyFile: join(pki.dir, 'live.key') };
  await copyFile(serverCert.certFile, live.certFile);
  await copyFile(serverCert.keyFile, live.keyFile);
  const tlsFiles = ['--tls-cert', live.certFile, '--tls-key', live.keyFile];
  [a, b] = await Promise.all([
    startBroker({
      management: true,
      extraArgs: [...tlsFiles, '--tls-port', '0', '--management-tls-port', String(await freePort())],
    }),
    startBroker({
      extraArgs: [
        ...['--tls-cert', serverCert.certFile, '--tls-key', serverCert.keyFile, '--tls-ca', pki.caFile],
        ...['--port', 'none', '--tls-port', '0', '--management-tls-port', String(await freePort())],
      ],
    }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  for (const node of [a, b]) {
    await node?.stop();
    await node?.cleanup();
  }
  await pki?.remove();
});

/** Connect over wss with `options`; closed after the file. */
async function connect(url: string, options: amqp.SocketOptions): Promise<Connection> {
  const conn = await withTimeout(amqp.connect(url, options), WAIT_MS, `connect to ${url}`);
  open.push(conn);
  return conn;
}

/** The serial number of the certificate a new TLS connection to `url` is served. */
function servedSerial(url: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: hostname, port: Number(port), ca }, () => {
      resolve(socket.getPeerCertificate().serialNumber);
      socket.end();
    });
    socket.once('error', reject);
    socket.setTimeout(WAIT_MS, () => socket.destroy(new Error('TLS connect timed out')));
  });
}

/** `styx ctl ARGS` as a child process; its exit code and output. */
function ctl(
  env: Readonly<Record<string, string>>,
  ...args: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'ctl', ...args],
      { cwd: REPO_ROOT, timeout: 45_000, env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== 'number') reject(error);
        else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}

describe('the SDK over wss', () => {
  it('connects with the CA and publishes and consumes with confirms', async () => {
    const { tls_url: url, url: plain } = await runningNode(a);
    expect(url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
    expect(plain).toMatch(/^ws:\/\//);
    const conn = await connect(url as string, { ca });
    const ch = await conn.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('tls'), { durable: false });
    ch.sendToQueue(queue, Buffer.from('over TLS'));
    await withTimeout(ch.waitForConfirms(), WAIT_MS, 'confirm');
    expect((await getOne(ch, queue)).content.toString()).toBe('over TLS');
  });

  it('without the CA, fails with a certificate error', async () => {
    const { tls_url: url } = await runningNode(a);
    const err = await rejectionOf(amqp.connect(url as string), 'a connection to an untrusted certificate');
    expect(err.message).toMatch(/self[- ]signed certificate|unable to (verify|get local issuer)/i);
  });

  it('with --tls-ca, a client without a certificate is refused and one with a good certificate is served', async () => {
    const node = await runningNode(b);
    expect(node.url).toMatch(/^wss:\/\//);
    expect(node.tls_url).toBe(node.url);
    await rejectionOf(
      amqp.connect(node.url, { ca, timeout: WAIT_MS }),
      'a connection without a client certificate',
    );
    await waitFor(() => b.logs.some((line) => line.includes('TLS handshake refused')), 'the refusal logged');
    const conn = await connect(node.url, { ca, ...clientCert });
    const ch = await conn.createChannel();
    await expect(ch.checkExchange('amq.direct')).resolves.toEqual({});
  });

  it.skipIf(EXTERNAL_ADDRESS === undefined)(
    'guest is refused (403) from a non-loopback address over wss',
    async () => {
      const { tls_url: url } = await runningNode(a);
      const err = await rejectionOf(
        amqp.connect(url as string, { ca, wsOptions: { localAddress: EXTERNAL_ADDRESS } }),
        'guest from a non-loopback address',
      );
      expect(err.code).toBe(403);
      expect(err.message).toContain("user 'guest' can only connect via localhost");
    },
  );
});

describe('the management API and console over https', () => {
  const trusting = (): Agent => new Agent({ connect: { ca } });

  it('answers the API and logs in to the console with a Secure cookie; the Host allow-list holds', async () => {
    const { management_tls_url: base } = await runningNode(a);
    expect(base).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const dispatcher = trusting();
    try {
      const guest = `Basic ${Buffer.from('guest:guest').toString('base64')}`;
      const overview = await request(`${base}/api/overview`, {
        dispatcher,
        headers: { authorization: guest },
      });
      expect(overview.statusCode).toBe(200);
      expect(((await overview.body.json()) as { node?: unknown }).node).toBeDefined();

      const login = await request(`${base}/console/session`, {
        dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'guest', password: 'guest' }),
      });
      expect(login.statusCode).toBe(200);
      const setCookie = String(login.headers['set-cookie']);
      expect(setCookie).toMatch(/^styx_session=[^;]+; Path=\/; HttpOnly; Secure; SameSite=Strict/);
      await login.body.dump();
      const session = await request(`${base}/console/session`, {
        dispatcher,
        headers: { cookie: setCookie.split(';')[0] as string },
      });
      expect(session.statusCode).toBe(200);
      await session.body.dump();
      const page = await request(`${base}/`, { dispatcher });
      expect(page.statusCode).toBe(200);
      expect(await page.body.text()).toContain('<html');

      // A name the node was not given (DNS rebinding): 421 over https as over http. undici checks
      // the certificate against the Host header, so this one request skips that check.
      const rebinding = new Agent({ connect: { ca, checkServerIdentity: () => undefined } });
      const rebound = await request(`${base}/api/overview`, {
        dispatcher: rebinding,
        headers: { authorization: guest, host: 'evil.example' },
      }).finally(() => rebinding.close());
      expect(rebound.statusCode).toBe(421);
      await rebound.body.dump();
    } finally {
      await dispatcher.close();
    }
  });

  it('the plain listener beside it sets no Secure cookie', async () => {
    const login = await request(`${a.managementUrl as string}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'guest', password: 'guest' }),
    });
    expect(String(login.headers['set-cookie'])).not.toContain('Secure');
    await login.body.dump();
  });

  it('styx ctl works over https with --cacert or $STYX_CACERT, and says what is wrong without it', async () => {
    const { management_tls_url: base } = await runningNode(a);
    const withCa = await ctl({}, 'list_vhosts', '--node', base as string, '--cacert', pki.caFile);
    expect(withCa.stderr).toBe('');
    expect(withCa.code).toBe(0);
    expect(withCa.stdout).toContain('/');
    const fromEnv = await ctl({ STYX_CACERT: pki.caFile }, 'list_vhosts', '--node', base as string);
    expect(fromEnv.code).toBe(0);
    const without = await ctl({}, 'list_vhosts', '--node', base as string);
    expect(without.code).toBe(69);
    expect(without.stderr).toContain('is not trusted');
    expect(without.stderr).toContain('--cacert');
  });

  it('styx ctl finds a TLS-only node by its data dir: running-node.json records the https URL', async () => {
    const node = await runningNode(b);
    expect(node.management_url).toMatch(/^https:\/\//);
    expect(node.management_url).toBe(node.management_tls_url);
    const run = await ctl({}, 'list_vhosts', '--data-dir', b.dataDir, '--cacert', pki.caFile);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
  });
});

describe('certificate rotation without a restart', () => {
  /** Replace a file as a deploy tool does: write beside it, then rename over it. */
  async function replace(file: string, content: Buffer | string): Promise<void> {
    await writeFile(`${file}.new`, content);
    await rename(`${file}.new`, file);
  }

  it('new connections get the replaced certificate, open ones keep working; a bad replacement keeps it', async () => {
    const { tls_url: url } = await runningNode(a);
    expect(await servedSerial(url as string)).toBe(serverCert.serial);
    const before = await connect(url as string, { ca });
    const ch = await before.createConfirmChannel();
    const { queue } = await ch.assertQueue(unique('rotate'), { durable: false });

    await replace(live.keyFile, await readFile(rotated.keyFile));
    await replace(live.certFile, await readFile(rotated.certFile));
    await waitFor(
      async () => (await servedSerial(url as string)) === rotated.serial,
      'the new certificate',
      15_000,
      100,
    );
    ch.sendToQueue(queue, Buffer.from('after the rotation'));
    await withTimeout(ch.waitForConfirms(), WAIT_MS, 'confirm on the connection opened before');
    expect((await getOne(ch, queue)).content.toString()).toBe('after the rotation');
    const after = await connect(url as string, { ca });
    await after.createChannel();

    await replace(live.certFile, 'half a certificate\n');
    await waitFor(
      async () => a.logs.some((line) => line.includes('TLS files not reloaded')),
      'the refused reload in the log',
      15_000,
      100,
    );
    expect(await servedSerial(url as string)).toBe(rotated.serial);
    await connect(url as string, { ca });
  });
});

describe('bad TLS files at start', () => {
  /** `styx server` with `args`; exit code and stderr (it must exit on its own). */
  async function server(...args: string[]): Promise<{ code: number; stderr: string }> {
    const dataDir = await mkdtemp(join(tmpdir(), 'styx-tls-bad-'));
    try {
      return await new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          [CLI, 'server', '--data-dir', dataDir, '--port', '0', '--management-port', '0', ...args],
          { cwd: REPO_ROOT, timeout: 30_000 },
          (error, _stdout, stderr) => {
            if (error !== null && typeof error.code !== 'number') reject(error);
            else resolve({ code: error === null ? 0 : Number(error.code), stderr });
          },
        );
      });
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }

  it('a missing file or a key that is not the certificate’s: a clear error, exit 2', async () => {
    const missing = await server(
      '--tls-cert',
      join(pki.dir, 'nope.crt'),
      '--tls-key',
      serverCert.keyFile,
      '--tls-port',
      '0',
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/styx server: cannot read the TLS certificate file .*nope\.crt: ENOENT/);
    const mismatched = await server(
      '--tls-cert',
      serverCert.certFile,
      '--tls-key',
      rotated.keyFile,
      '--tls-port',
      '0',
    );
    expect(mismatched.code).toBe(2);
    expect(mismatched.stderr).toContain('is not the key of the certificate');
    // (amqps would open on 5671 by default: turned off, no TLS listener is left.)
    const noListener = await server(
      '--tls-cert',
      serverCert.certFile,
      '--tls-key',
      serverCert.keyFile,
      '--amqps-port',
      '0',
    );
    expect(noListener.code).toBe(2);
    expect(noListener.stderr).toContain('no TLS listener named');
  });
});
