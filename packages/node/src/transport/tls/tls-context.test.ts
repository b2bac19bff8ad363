// The TLS context against real TLS servers and clients on loopback, with a throwaway CA made by
// openssl: checks at load, client certificates, and reloading the files without a restart.
import { copyFile, readFile, rename, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Server, TLSSocket } from 'node:tls';
import { connect } from 'node:tls';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../logging/logger.ts';
import type { IssuedCertificate, ThrowawayPki } from '../../test-support/throwaway-pki.ts';
import { createThrowawayPki } from '../../test-support/throwaway-pki.ts';
import { TlsConfigError, TlsContext } from './tls-context.ts';

const WAIT_MS = 10_000;

let pki: ThrowawayPki;
let first: IssuedCertificate;
let second: IssuedCertificate;
let client: IssuedCertificate;
let otherPki: ThrowawayPki;
let stranger: IssuedCertificate;
/** The test CA's certificate, which clients trust. */
let caPem = '';
/** The client certificates' PEM, by certificate. */
const identities = new Map<IssuedCertificate, { cert: string; key: string }>();

beforeAll(async () => {
  pki = await createThrowawayPki();
  otherPki = await createThrowawayPki('Another CA');
  [first, second, client, stranger] = await Promise.all([
    pki.issue('server-1', 'server'),
    pki.issue('server-2', 'server'),
    pki.issue('app', 'client'),
    otherPki.issue('stranger', 'client'),
  ]);
  caPem = await readFile(pki.caFile, 'utf8');
  for (const identity of [client, stranger]) {
    identities.set(identity, {
      cert: await readFile(identity.certFile, 'utf8'),
      key: await readFile(identity.keyFile, 'utf8'),
    });
  }
}, 60_000);

afterAll(async () => {
  await pki?.remove();
  await otherPki?.remove();
});

/** A logger whose JSON lines are kept, to see what a reload said. */
function recordingLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).trim().split('\n'));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', pretty: false, destination }), lines };
}

/** The files a node is started with: copies of `cert` under fixed names the test later replaces. */
async function liveFiles(
  cert: IssuedCertificate,
  name: string,
): Promise<{ certFile: string; keyFile: string }> {
  const certFile = join(pki.dir, `${name}.crt`);
  const keyFile = join(pki.dir, `${name}.key`);
  await copyFile(cert.certFile, certFile);
  await copyFile(cert.keyFile, keyFile);
  return { certFile, keyFile };
}

/** Replace a live file as a deploy tool does: write beside it, then rename over it. */
async function replace(file: string, content: Buffer | string): Promise<void> {
  await writeFile(`${file}.new`, content);
  await rename(`${file}.new`, file);
}

const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** An echo server on loopback from `context`, closed after the test. */
async function echoServer(context: TlsContext): Promise<number> {
  const server: Server = context.tlsServer('client', (socket) => socket.pipe(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

/** A TLS connection trusting the test CA (with `identity` as client certificate, if given). */
function open(port: number, identity?: IssuedCertificate): Promise<TLSSocket> {
  return new Promise<TLSSocket>((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, ca: [caPem], ...(identity === undefined ? {} : identities.get(identity)) },
      () => resolve(socket),
    );
    socket.once('error', reject);
    socket.setTimeout(WAIT_MS, () => socket.destroy(new Error('TLS connect timed out')));
    cleanups.push(() => {
      socket.destroy();
    });
  });
}

/** Send `text` on `socket` and read it back (the connection works). */
async function echo(socket: TLSSocket, text: string): Promise<string> {
  const back = new Promise<string>((resolve, reject) => {
    socket.once('data', (data: Buffer) => resolve(data.toString()));
    socket.once('error', reject);
    socket.once('close', () => reject(new Error('socket hang up')));
  });
  socket.write(text);
  return back;
}

/** Poll `read` until it returns `want` (or fail after WAIT_MS). */
async function eventually<T>(read: () => Promise<T>, want: T): Promise<void> {
  const until = Date.now() + WAIT_MS;
  let last: T | undefined;
  while (Date.now() < until) {
    last = await read();
    if (last === want) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`still ${String(last)}, not ${String(want)}, after ${WAIT_MS} ms`);
}

describe('loading the TLS files', () => {
  it('refuses a missing file, a file without a certificate, and a key that is not the certificate’s', async () => {
    const { logger } = recordingLogger();
    const missing = TlsContext.load({ certFile: join(pki.dir, 'nope.crt'), keyFile: first.keyFile }, logger);
    await expect(missing).rejects.toThrow(TlsConfigError);
    await expect(missing).rejects.toThrow(/cannot read the TLS certificate file .*nope\.crt: ENOENT/);
    await expect(
      TlsContext.load({ certFile: first.keyFile, keyFile: first.keyFile }, logger),
    ).rejects.toThrow(/holds no PEM certificate/);
    await expect(
      TlsContext.load({ certFile: first.certFile, keyFile: second.keyFile }, logger),
    ).rejects.toThrow(/is not the key of the certificate/);
    await expect(
      TlsContext.load({ certFile: first.certFile, keyFile: first.certFile }, logger),
    ).rejects.toThrow(/holds no usable private key/);
    await expect(
      TlsContext.load({ certFile: first.certFile, keyFile: first.keyFile, caFile: first.keyFile }, logger),
    ).rejects.toThrow(/the TLS CA file .* holds no PEM certificate/);
  });

  it('serves TLS 1.2 at least: a TLS 1.1 client is refused', async () => {
    const context = await TlsContext.load(first, recordingLogger().logger);
    const port = await echoServer(context);
    const refused = new Promise<Error>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port,
        ca: [caPem],
        maxVersion: 'TLSv1.1',
        minVersion: 'TLSv1',
      });
      socket.once('error', resolve);
      socket.once('secureConnect', () => resolve(new Error('connected')));
      cleanups.push(() => {
        socket.destroy();
      });
    });
    expect((await refused).message).not.toBe('connected');
    expect((await open(port)).getProtocol()).toMatch(/^TLSv1\.[23]$/);
  });
});

describe('client certificates (--tls-ca)', () => {
  it('a client listener refuses a client without a certificate or with one of another CA, and accepts a good one', async () => {
    const context = await TlsContext.load({ ...first, caFile: pki.caFile }, recordingLogger().logger);
    const port = await echoServer(context);
    // TLS 1.3: the server's refusal arrives after the client's handshake, as the first read.
    const refusedWithout = await open(port).then(
      (socket) =>
        echo(socket, 'hello').then(
          () => 'served',
          (err: Error) => err.message,
        ),
      (err: Error) => err.message,
    );
    expect(refusedWithout).toMatch(/certificate required|ECONNRESET|socket hang up/i);
    const refusedStranger = await open(port, stranger).then(
      (socket) =>
        echo(socket, 'hello').then(
          () => 'served',
          (err: Error) => err.message,
        ),
      (err: Error) => err.message,
    );
    expect(refusedStranger).toMatch(/unknown ca|ECONNRESET|socket hang up/i);
    expect(await echo(await open(port, client), 'hello')).toBe('hello');
  });

  it('a management listener does not ask for a client certificate', async () => {
    const context = await TlsContext.load({ ...first, caFile: pki.caFile }, recordingLogger().logger);
    expect(context.serverOptions('management')).toMatchObject({
      requestCert: false,
      rejectUnauthorized: false,
    });
    expect(context.serverOptions('client')).toMatchObject({ requestCert: true, rejectUnauthorized: true });
  });
});

describe('reloading the certificate', () => {
  it('a replaced certificate is served to new connections while open ones keep working', async () => {
    const files = await liveFiles(first, 'rotate');
    const { logger, lines } = recordingLogger();
    const context = await TlsContext.load(files, logger);
    cleanups.push(() => context.close());
    await context.watch();
    const port = await echoServer(context);
    const old = await open(port);
    expect(old.getPeerCertificate().serialNumber).toBe(first.serial);

    await replace(files.keyFile, await readFile(second.keyFile));
    await replace(files.certFile, await readFile(second.certFile));
    await eventually(async () => (await open(port)).getPeerCertificate().serialNumber, second.serial);
    expect(context.certificate.serial).toBe(second.serial);
    expect(await echo(old, 'still here')).toBe('still here');
    expect(old.getPeerCertificate().serialNumber).toBe(first.serial);
    expect(lines.some((line) => line.includes('TLS certificate reloaded'))).toBe(true);
  });

  it('a bad replacement is logged and the old certificate kept', async () => {
    const files = await liveFiles(first, 'bad');
    const { logger, lines } = recordingLogger();
    const context = await TlsContext.load(files, logger);
    cleanups.push(() => context.close());
    await context.watch();
    const port = await echoServer(context);

    // A certificate whose key is not the one beside it, then a file that is no certificate at all.
    await replace(files.certFile, await readFile(second.certFile));
    await eventually(
      async () => lines.some((line) => line.includes('is not the key of the certificate')),
      true,
    );
    expect((await open(port)).getPeerCertificate().serialNumber).toBe(first.serial);
    await replace(files.certFile, 'not a certificate\n');
    await eventually(async () => lines.some((line) => line.includes('holds no PEM certificate')), true);
    expect((await open(port)).getPeerCertificate().serialNumber).toBe(first.serial);
    expect(context.certificate.serial).toBe(first.serial);
    // Once the pair is whole again, it is served.
    await replace(files.keyFile, await readFile(second.keyFile));
    await replace(files.certFile, await readFile(second.certFile));
    await eventually(async () => (await open(port)).getPeerCertificate().serialNumber, second.serial);
  });

  it('reload() (SIGHUP) picks up a change without a watch, and says nothing when nothing changed', async () => {
    const files = await liveFiles(first, 'hup');
    const context = await TlsContext.load(files, recordingLogger().logger);
    const port = await echoServer(context);
    expect(await context.reload('SIGHUP')).toBe(false);
    await replace(files.keyFile, await readFile(second.keyFile));
    await replace(files.certFile, await readFile(second.certFile));
    expect(await context.reload('SIGHUP')).toBe(true);
    expect((await open(port)).getPeerCertificate().serialNumber).toBe(second.serial);
  });
});
