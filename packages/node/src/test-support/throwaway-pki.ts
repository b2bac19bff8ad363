/**
 * Tests only: a throwaway certificate authority and the certificates it signs, made with the
 * `openssl` command in a temporary directory (never committed: every key is created by the test
 * that uses it). Server certificates name 127.0.0.1 and localhost, the addresses tests connect to.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate and its key, as PEM files. */
export interface IssuedCertificate {
  readonly certFile: string;
  readonly keyFile: string;
  /** The serial number in hex, upper case, as `getPeerCertificate().serialNumber` gives it. */
  readonly serial: string;
}

/** A CA in a temporary directory; `issue` signs certificates, `remove` deletes everything. */
export interface ThrowawayPki {
  readonly dir: string;
  /** The CA's certificate (what a client trusts, and `--tls-ca`). */
  readonly caFile: string;
  issue(name: string, usage: 'server' | 'client'): Promise<IssuedCertificate>;
  remove(): Promise<void>;
}

async function openssl(cwd: string, ...args: string[]): Promise<void> {
  await run('openssl', args, { cwd, timeout: 20_000 });
}

/** A new CA named `caName` (default: 'Styx Test CA'). */
export async function createThrowawayPki(caName = 'Styx Test CA'): Promise<ThrowawayPki> {
  const dir = await mkdtemp(join(tmpdir(), 'styx-pki-'));
  const caFile = join(dir, 'ca.crt');
  const caKey = join(dir, 'ca.key');
  // EC P-256 keys: quick to make, unlike RSA ones.
  const newKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  await openssl(
    dir,
    'req',
    '-x509',
    ...newKey,
    '-keyout',
    caKey,
    '-out',
    caFile,
    '-days',
    '2',
    '-subj',
    `/CN=${caName}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  );
  return {
    dir,
    caFile,
    async issue(name, usage) {
      const base = join(dir, `${name}-${randomBytes(4).toString('hex')}`);
      // Whole bytes and a leading 1: nothing to pad or drop, so it reads back exactly.
      const serial = `10${randomBytes(7).toString('hex').toUpperCase()}`;
      const extensions = `${base}.ext`;
      await writeFile(
        extensions,
        usage === 'server'
          ? 'basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
          : 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n',
      );
      await openssl(
        dir,
        'req',
        ...newKey,
        '-keyout',
        `${base}.key`,
        '-out',
        `${base}.csr`,
        '-subj',
        `/CN=${name}`,
      );
      await openssl(
        dir,
        'x509',
        '-req',
        '-in',
        `${base}.csr`,
        '-CA',
        caFile,
        '-CAkey',
        caKey,
        '-set_serial',
        `0x${serial}`,
        '-days',
        '2',
        '-extfile',
        extensions,
        '-out',
        `${base}.crt`,
      );
      return { certFile: `${base}.crt`, keyFile: `${base}.key`, serial };
    },
    async remove() {
      await rm(dir, { recursive: true, force: true });
    },
  };
}
