import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyPassword } from './passwords.ts';
import { decodeRabbitHash, encodeRabbitHash, verifyRabbitHash } from './rabbit-password-hashes.ts';

/** Hashes RabbitMQ 3.10.8 wrote (test/fixtures/rabbitmq-3.10-definitions.json): guest/guest, ops/ops-pw. */
const GUEST = 'yWKpkrkWe8GGQveez4yH6sV0WnIBCVT7xptEZs7ryy3PziZ1';
const OPS = 'fGc/YjrhaEtsjhPLK+OptZPezfVZjIBi15wGDRpZ+RqHGrKj';

function stored(algorithm: Parameters<typeof encodeRabbitHash>[0], base64: string): string {
  const encoded = encodeRabbitHash(algorithm, base64);
  if (!encoded.ok) throw new Error(encoded.reason);
  return encoded.encoded;
}

describe("RabbitMQ's password hashes", () => {
  it('verifies the hashes RabbitMQ made, and nothing else', async () => {
    const guest = stored('rabbit_password_hashing_sha256', GUEST);
    expect(guest).toBe(`$rabbit$sha256$${GUEST}`);
    expect(verifyRabbitHash('guest', guest)).toBe(true);
    expect(verifyRabbitHash('Guest', guest)).toBe(false);
    expect(verifyRabbitHash('', guest)).toBe(false);
    expect(await verifyPassword('ops-pw', stored('rabbit_password_hashing_sha256', OPS))).toBe(true);
    expect(await verifyPassword('guest', stored('rabbit_password_hashing_sha256', OPS))).toBe(false);
  });

  it('salts with the first 4 bytes, for SHA-512 and MD5 too', () => {
    const salt = Buffer.from([1, 2, 3, 4]);
    for (const [algorithm, digest] of [
      ['rabbit_password_hashing_sha512', 'sha512'],
      ['rabbit_password_hashing_md5', 'md5'],
    ] as const) {
      const hash = createHash(digest).update(salt).update('sécret').digest();
      const encoded = stored(algorithm, Buffer.concat([salt, hash]).toString('base64'));
      expect(verifyRabbitHash('sécret', encoded), algorithm).toBe(true);
      expect(verifyRabbitHash('secret', encoded), algorithm).toBe(false);
      expect(decodeRabbitHash(encoded)).toEqual({
        algorithm,
        hash: Buffer.concat([salt, hash]).toString('base64'),
      });
    }
  });

  it('refuses hashes of the wrong length or not base64, and never throws on a stored one', () => {
    const short = encodeRabbitHash('rabbit_password_hashing_sha256', 'AAAA');
    expect(short).toMatchObject({ ok: false, reason: expect.stringContaining('36 bytes') });
    expect(encodeRabbitHash('rabbit_password_hashing_md5', GUEST).ok).toBe(false);
    expect(encodeRabbitHash('rabbit_password_hashing_sha256', `${GUEST.slice(0, -1)}!`).ok).toBe(false);
    for (const broken of [
      '$rabbit$sha256$',
      '$rabbit$sha1$AAAA',
      '$rabbit$md5$AAAA',
      `$rabbit$sha512$${GUEST}`,
    ]) {
      expect(verifyRabbitHash('guest', broken), broken).toBe(false);
    }
    expect(decodeRabbitHash('$scrypt$N=16384,r=8,p=1$a$b')).toBeUndefined();
  });
});
