/**
 * RabbitMQ's password hashes, so users imported from a RabbitMQ definitions file keep their
 * passwords. RabbitMQ stores `base64(salt ++ H(salt ++ utf8(password)))` with a random 4-byte salt,
 * H chosen by the user's `hashing_algorithm` (rabbit_password.erl, rabbit_password_hashing_*.erl):
 *
 *   rabbit_password_hashing_sha256   SHA-256 (RabbitMQ's default since 3.6)
 *   rabbit_password_hashing_sha512   SHA-512
 *   rabbit_password_hashing_md5      MD5 (before 3.6; a user without `hashing_algorithm` has one)
 *
 * Styx never makes such hashes (new passwords get scrypt, passwords.ts); it only verifies them. In
 * a user record they are kept as `$rabbit$<sha256|sha512|md5>$<RabbitMQ's base64>`, so the origin
 * is visible and an export gives back exactly what was imported.
 *
 * These hashes are one fast digest: far cheaper to guess offline than scrypt. Importing them keeps
 * the operator's passwords working; a user who sets a new password gets scrypt.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

/** RabbitMQ's hashing modules and the digest each uses. */
const DIGESTS = {
  rabbit_password_hashing_sha256: 'sha256',
  rabbit_password_hashing_sha512: 'sha512',
  rabbit_password_hashing_md5: 'md5',
} as const;

export type RabbitHashingAlgorithm = keyof typeof DIGESTS;
type Digest = (typeof DIGESTS)[RabbitHashingAlgorithm];

/** Length of each digest's output, bytes. */
const DIGEST_BYTES: Record<Digest, number> = { sha256: 32, sha512: 64, md5: 16 };

/** RabbitMQ's salt length, bytes (rabbit_password:generate_salt/0). */
const SALT_BYTES = 4;

const PREFIX = '$rabbit$';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const ENCODED = /^\$rabbit\$(sha256|sha512|md5)\$([A-Za-z0-9+/]+={0,2})$/;

export function isRabbitHashingAlgorithm(name: string): name is RabbitHashingAlgorithm {
  return Object.hasOwn(DIGESTS, name);
}

/** The algorithm RabbitMQ assumes for a user record without `hashing_algorithm`. */
export const LEGACY_RABBIT_ALGORITHM: RabbitHashingAlgorithm = 'rabbit_password_hashing_md5';

/**
 * A RabbitMQ hash as a Styx user record stores it, or a reason it cannot be one: the base64 must
 * decode to a 4-byte salt followed by one digest of the algorithm's length.
 */
export function encodeRabbitHash(
  algorithm: RabbitHashingAlgorithm,
  base64: string,
): { ok: true; encoded: string } | { ok: false; reason: string } {
  const digest = DIGESTS[algorithm];
  const expected = SALT_BYTES + DIGEST_BYTES[digest];
  if (!BASE64.test(base64) || Buffer.from(base64, 'base64').length !== expected) {
    return {
      ok: false,
      reason: `a ${algorithm} password_hash is the base64 of ${expected} bytes (4 of salt, then the ${digest} digest)`,
    };
  }
  return { ok: true, encoded: `${PREFIX}${digest}$${base64}` };
}

/** The RabbitMQ algorithm and base64 hash of a stored `$rabbit$...` hash, for export. */
export function decodeRabbitHash(
  encoded: string,
): { algorithm: RabbitHashingAlgorithm; hash: string } | undefined {
  const m = ENCODED.exec(encoded);
  if (m === null) return undefined;
  const digest = m[1] as Digest;
  const algorithm = (Object.keys(DIGESTS) as RabbitHashingAlgorithm[]).find((a) => DIGESTS[a] === digest);
  return algorithm === undefined ? undefined : { algorithm, hash: m[2] as string };
}

export function isRabbitHash(encoded: string): boolean {
  return encoded.startsWith(PREFIX);
}

/** Whether `password` matches a stored `$rabbit$...` hash; false for a malformed one. */
export function verifyRabbitHash(password: string, encoded: string): boolean {
  const m = ENCODED.exec(encoded);
  if (m === null) return false;
  const digest = m[1] as Digest;
  const stored = Buffer.from(m[2] as string, 'base64');
  if (stored.length !== SALT_BYTES + DIGEST_BYTES[digest]) return false;
  const salt = stored.subarray(0, SALT_BYTES);
  const actual = createHash(digest).update(salt).update(password, 'utf8').digest();
  return timingSafeEqual(actual, stored.subarray(SALT_BYTES));
}
