/**
 * The node's TLS certificate, private key and optional client CA (`--tls-cert`, `--tls-key`,
 * `--tls-ca`), shared by every TLS listener: the clients' WebSocket (wss), the management API
 * (https) and, when it comes, AMQP 0-9-1 (amqps). A listener gets its server from here
 * (`httpsServer`, `tlsServer`), so the certificate handling is in this one place.
 *
 * Rotation without a restart: the files are watched (fs.watch on their directories, which also sees
 * a file replaced by rename, plus a stat every POLL_MS as a fallback where fs.watch says nothing,
 * e.g. on some network filesystems) and reloaded on SIGHUP (server-command.ts). A reload that reads
 * a good certificate and matching key gives every attached server a new secure context
 * (`server.setSecureContext`): new connections get the new certificate, open ones keep theirs. A bad
 * replacement (unreadable, not PEM, a key that does not match) is logged and the old context kept,
 * so a half-finished copy never takes a listener down.
 *
 * Protocol floor: TLS 1.2 (`minVersion`); the ciphers are Node's defaults (OpenSSL's, without the
 * export, RC4, DES and anonymous suites), which is what we want: no list to keep up to date here.
 */

import { createPrivateKey, X509Certificate } from 'node:crypto';
import type { FSWatcher } from 'node:fs';
import { watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { RequestListener } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { createServer as createHttpsServer } from 'node:https';
import { basename, dirname, resolve } from 'node:path';
import type { SecureContextOptions, TLSSocket, TlsOptions, Server as TlsServer } from 'node:tls';
import { createServer as createRawTlsServer, createSecureContext } from 'node:tls';
import type { Logger } from '../../logging/logger.ts';

/** The lowest protocol version a TLS listener accepts. */
export const MIN_TLS_VERSION = 'TLSv1.2';

/** How often the files are stat'ed for a change fs.watch did not report, ms. */
export const POLL_MS = 5_000;

/** After a file event, how long to wait for the other file of a pair being replaced, ms. */
const SETTLE_MS = 300;

/** The files of `--tls-cert`, `--tls-key` and `--tls-ca`. */
export interface TlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** The CA client certificates must be signed by; undefined: clients are not asked for one. */
  readonly caFile?: string | undefined;
}

/** TLS files that cannot be used (missing, not PEM, a key not matching the certificate). Exit 2. */
export class TlsConfigError extends Error {
  readonly code = 'TLS_CONFIG_INVALID';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TlsConfigError';
  }
}

/** What a listener serves: the files' bytes, checked, and what the logs say about the certificate. */
interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
  readonly serial: string;
  readonly subject: string;
  readonly validTo: string;
}

/** Which kind of listener a server is: client ones ask for client certificates when there is a CA. */
export type TlsListenerKind = 'client' | 'management';

async function readTlsFile(what: string, file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (err) {
    throw new TlsConfigError(
      `cannot read the TLS ${what} file ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      { cause: err },
    );
  }
}

function parseCertificate(what: string, file: string, pem: Buffer): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch (err) {
    throw new TlsConfigError(`the TLS ${what} file ${file} holds no PEM certificate`, { cause: err });
  }
}

/** Read and check the files: each readable and PEM, the key the certificate's. Throws TlsConfigError. */
export async function loadTlsMaterial(files: TlsFiles): Promise<TlsMaterial> {
  const [cert, key, ca] = await Promise.all([
    readTlsFile('certificate', files.certFile),
    readTlsFile('key', files.keyFile),
    files.caFile === undefined ? undefined : readTlsFile('CA', files.caFile),
  ]);
  const certificate = parseCertificate('certificate', files.certFile, cert);
  if (ca !== undefined) parseCertificate('CA', files.caFile as string, ca);
  let matches: boolean;
  try {
    matches = certificate.checkPrivateKey(createPrivateKey(key));
  } catch (err) {
    throw new TlsConfigError(
      `the TLS key file ${files.keyFile} holds no usable private key (PEM, without a passphrase): ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (!matches) {
    throw new TlsConfigError(
      `the TLS key file ${files.keyFile} is not the key of the certificate in ${files.certFile}`,
    );
  }
  const material = {
    cert,
    key,
    ca,
    serial: certificate.serialNumber,
    subject: certificate.subject.replaceAll('\n', ', '),
    validTo: certificate.validTo,
  };
  try {
    // What the listeners will do with it: anything OpenSSL still refuses is refused here, at load.
    createSecureContext(contextOptions(material, 'client'));
  } catch (err) {
    throw new TlsConfigError(`the TLS files cannot be used: ${(err as Error).message}`, { cause: err });
  }
  return material;
}

function contextOptions(material: TlsMaterial, kind: TlsListenerKind): SecureContextOptions {
  return {
    cert: material.cert,
    key: material.key,
    minVersion: MIN_TLS_VERSION,
    // The CA only where client certificates are asked for: the management API does not (a browser
    // reaching the console has none), so it has no use for it.
    ...(kind === 'client' && material.ca !== undefined ? { ca: material.ca } : {}),
  };
}

/** The identity of a file's current version, to notice a replacement without reading it. */
async function fileStamp(file: string): Promise<string> {
  try {
    const s = await stat(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

/**
 * The node's TLS context: the loaded files, the servers using them, and the watch that reloads
 * them. Create with `TlsContext.load`; `close` stops the watch.
 */
export class TlsContext {
  readonly #files: TlsFiles;
  readonly #logger: Logger;
  #material: TlsMaterial;
  /** The attached servers and the kind of each (for its context's options). */
  readonly #servers = new Map<TlsServer, TlsListenerKind>();
  #watchers: FSWatcher[] = [];
  #poll: NodeJS.Timeout | undefined;
  #settle: NodeJS.Timeout | undefined;
  #stamps = '';
  /** Why the last reload was refused, so the same bad files are not reported at every event. */
  #refused: string | undefined;
  /** The reload running now; a request meanwhile runs once more after it. */
  #reloading: Promise<boolean> | undefined;

  private constructor(files: TlsFiles, material: TlsMaterial, logger: Logger) {
    this.#files = files;
    this.#material = material;
    this.#logger = logger;
  }

  /** Load and check the files (TlsConfigError when they cannot be used). Does not watch yet. */
  static async load(files: TlsFiles, logger: Logger): Promise<TlsContext> {
    const absolute: TlsFiles = {
      certFile: resolve(files.certFile),
      keyFile: resolve(files.keyFile),
      caFile: files.caFile === undefined ? undefined : resolve(files.caFile),
    };
    const material = await loadTlsMaterial(absolute);
    const context = new TlsContext(absolute, material, logger.child({ component: 'tls' }));
    context.#logger.info(context.certificate, 'TLS certificate loaded');
    return context;
  }

  /** Whether client listeners ask for (and require) a client certificate signed by `--tls-ca`. */
  get requiresClientCertificates(): boolean {
    return this.#files.caFile !== undefined;
  }

  /** The certificate served now: serial number (hex), subject and expiry. */
  get certificate(): { serial: string; subject: string; validTo: string } {
    const { serial, subject, validTo } = this.#material;
    return { serial, subject, validTo };
  }

  /** Options for a new TLS server of `kind` (the context, and whether to ask for client certs). */
  serverOptions(kind: TlsListenerKind): TlsOptions {
    const askClients = kind === 'client' && this.requiresClientCertificates;
    return {
      ...contextOptions(this.#material, kind),
      requestCert: askClients,
      rejectUnauthorized: askClients,
    };
  }

  /** An https server (the WebSocket and management listeners) that follows reloads until closed. */
  httpsServer(kind: TlsListenerKind, handler: RequestListener): HttpsServer {
    return this.#attach(createHttpsServer(this.serverOptions(kind), handler), kind);
  }

  /**
   * A TLS server for a protocol on raw sockets (AMQP's amqps listener): what `net.createServer`
   * would be for the plain listener, with the same connection listener.
   */
  tlsServer(kind: TlsListenerKind, onConnection: (socket: TLSSocket) => void): TlsServer {
    return this.#attach(createRawTlsServer(this.serverOptions(kind), onConnection), kind);
  }

  #attach<S extends TlsServer>(server: S, kind: TlsListenerKind): S {
    this.#servers.set(server, kind);
    server.once('close', () => this.#servers.delete(server));
    // A refused handshake (no or a bad client certificate, an old protocol, a plain-text client) is
    // the client's problem, but the operator looking for why a client cannot connect wants it.
    server.on('tlsClientError', (err: Error, socket: TLSSocket) => {
      this.#logger.info(
        { remote: socket.remoteAddress, reason: (err as NodeJS.ErrnoException).code ?? err.message },
        'TLS handshake refused',
      );
    });
    return server;
  }

  /**
   * Read the files again; when they changed and are good, give every attached server the new
   * context (new connections use it, open ones keep theirs). A bad replacement is logged and the
   * old context kept. Resolves true when the certificate was replaced.
   */
  reload(why: string): Promise<boolean> {
    const run = async (): Promise<boolean> => {
      let material: TlsMaterial;
      try {
        material = await loadTlsMaterial(this.#files);
      } catch (err) {
        const said = (err as Error).message;
        if (this.#refused !== said) {
          this.#refused = said;
          this.#logger.error(
            { err, why, serving: this.#material.serial },
            `TLS files not reloaded, still serving the previous certificate: ${said}`,
          );
        }
        return false;
      }
      this.#refused = undefined;
      const same =
        material.cert.equals(this.#material.cert) &&
        material.key.equals(this.#material.key) &&
        (material.ca ?? Buffer.alloc(0)).equals(this.#material.ca ?? Buffer.alloc(0));
      if (same) return false;
      for (const [server, kind] of this.#servers) server.setSecureContext(contextOptions(material, kind));
      this.#material = material;
      this.#logger.info({ ...this.certificate, why }, 'TLS certificate reloaded: new connections use it');
      return true;
    };
    const previous = this.#reloading ?? Promise.resolve(false);
    const next = previous.then(run, run);
    this.#reloading = next;
    void next.finally(() => {
      if (this.#reloading === next) this.#reloading = undefined;
    });
    return next;
  }

  /** Watch the files (their directories, and a stat every POLL_MS) and reload when one changes. */
  async watch(pollMs = POLL_MS): Promise<void> {
    const files = this.#fileList();
    const names = new Set(files.map((f) => basename(f)));
    for (const dir of new Set(files.map((f) => dirname(f)))) {
      try {
        const watcher = watch(dir, { persistent: false }, (_event, name) => {
          if (name === null || names.has(name.toString())) this.#soon('file changed');
        });
        watcher.on('error', (err) => this.#logger.warn({ err, dir }, 'cannot watch the TLS files any more'));
        this.#watchers.push(watcher);
      } catch (err) {
        // The poll below still notices changes, only later.
        this.#logger.warn({ err, dir }, `cannot watch ${dir}; checking the TLS files every ${pollMs} ms`);
      }
    }
    this.#stamps = await this.#currentStamps();
    this.#poll = setInterval(() => {
      void this.#currentStamps().then((stamps) => {
        if (stamps !== this.#stamps) this.#soon('file changed (poll)');
      });
    }, pollMs);
    this.#poll.unref();
  }

  /** Stop watching (the servers close themselves). */
  close(): void {
    for (const watcher of this.#watchers) watcher.close();
    this.#watchers = [];
    if (this.#poll !== undefined) clearInterval(this.#poll);
    if (this.#settle !== undefined) clearTimeout(this.#settle);
  }

  /** Reload once things settle: a certificate and its key are rarely replaced in the same instant. */
  #soon(why: string): void {
    if (this.#settle !== undefined) clearTimeout(this.#settle);
    this.#settle = setTimeout(() => {
      this.#settle = undefined;
      void this.#currentStamps().then((stamps) => {
        this.#stamps = stamps;
        return this.reload(why);
      });
    }, SETTLE_MS);
    this.#settle.unref();
  }

  #fileList(): string[] {
    const { certFile, keyFile, caFile } = this.#files;
    return caFile === undefined ? [certFile, keyFile] : [certFile, keyFile, caFile];
  }

  async #currentStamps(): Promise<string> {
    return (await Promise.all(this.#fileList().map(fileStamp))).join('|');
  }
}
