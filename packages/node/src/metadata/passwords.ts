/**
 * Password hashing for the internal user store: scrypt from node:crypto with a random 16-byte salt,
 * N=16384, r=8, p=1, a 32-byte key, encoded with its parameters so they can change later without
 * breaking stored hashes:
 *
 *   $scrypt$N=16384,r=8,p=1$<salt, base64>$<key, base64>
 *
 * Never log a password or a hash. Hashing costs ~16 MiB of memory and tens of ms of CPU on a
 * libuv worker thread, on purpose: that is what makes offline guessing expensive.
 */
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { isRabbitHash, verifyRabbitHash } from './rabbit-password-hashes.ts';

/** scrypt cost parameter (CPU/memory), a power of two. */
const COST = 16_384;
const BLOCK_SIZE = 8;
const PARALLELISM = 1;
/** Salt length, bytes. */
const SALT_BYTES = 16;
/** Derived key length, bytes. */
const KEY_BYTES = 32;

/**
 * Bounds on parameters read back from an encoded hash — a definitions import can bring one — so a
 * hostile or careless hash cannot make every login allocate gigabytes or spin for seconds:
 *
 * - memory: scrypt needs 128 * N * r bytes; at most 64 MiB (4x the node's own 16 MiB). A login runs
 *   on one of libuv's 4 worker threads, so four concurrent logins peak at 256 MiB;
 * - N <= 2^17 (8x the node's), r <= 16, p <= 4: with the memory bound the work per login is at most
 *   16x the node's own hash (N * r * p <= 2^21 against 2^17), well under a second.
 *
 * The key is 16..64 bytes. `scryptHashProblem` names what is over; a definitions import refuses
 * such a hash with 400, and `verifyPassword` treats one already stored as matching nothing.
 */
export const MAX_SCRYPT_COST = 2 ** 17;
export const MAX_SCRYPT_BLOCK_SIZE = 16;
export const MAX_SCRYPT_PARALLELISM = 4;
/** Most memory one verification may need, bytes (128 * N * r). */
export const MAX_SCRYPT_MEMORY_BYTES = 64 * 1024 * 1024;
const MIN_KEY_BYTES = 16;
const MAX_KEY_BYTES = 64;

const ENCODED = /^\$scrypt\$N=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

interface ScryptParams {
  readonly N: number;
  readonly r: number;
  readonly p: number;
}

function derive(password: string, salt: Uint8Array, keyBytes: number, params: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // maxmem: scrypt needs about 128 * N * r bytes; leave headroom over that.
    const maxmem = 256 * params.N * params.r;
    scrypt(password, salt, keyBytes, { ...params, maxmem }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** Hash a password for storage in a user record. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const params = { N: COST, r: BLOCK_SIZE, p: PARALLELISM };
  const key = await derive(password, salt, KEY_BYTES, params);
  return `$scrypt$N=${params.N},r=${params.r},p=${params.p}$${salt.toString('base64')}$${key.toString('base64')}`;
}

/** Whether `encoded` has the shape `hashPassword` writes (a definitions import checks this). */
export function isScryptHash(encoded: string): boolean {
  return ENCODED.test(encoded);
}

/**
 * Why this node will not verify `encoded` (a `$scrypt$` hash): its parameters are malformed or past
 * the bounds above, in words naming the limit; undefined when it is one the node can afford.
 */
export function scryptHashProblem(encoded: string): string | undefined {
  const parsed = parseScryptHash(encoded);
  if (typeof parsed === 'string') return parsed;
  const { N, r, p } = parsed.params;
  const limits = `this node verifies N <= ${MAX_SCRYPT_COST}, r <= ${MAX_SCRYPT_BLOCK_SIZE}, p <= ${MAX_SCRYPT_PARALLELISM} and 128*N*r <= ${MAX_SCRYPT_MEMORY_BYTES / 1024 / 1024} MiB`;
  if (N > MAX_SCRYPT_COST || r > MAX_SCRYPT_BLOCK_SIZE || p > MAX_SCRYPT_PARALLELISM) {
    return `scrypt parameters N=${N},r=${r},p=${p} are too costly (${limits})`;
  }
  if (128 * N * r > MAX_SCRYPT_MEMORY_BYTES) {
    return `scrypt parameters N=${N},r=${r} need ${(128 * N * r) / 1024 / 1024} MiB per login (${limits})`;
  }
  return undefined;
}

interface ParsedScryptHash {
  readonly params: ScryptParams;
  readonly salt: Buffer;
  readonly key: Buffer;
}

/** The parts of a `$scrypt$` hash, or what is malformed about it. */
function parseScryptHash(encoded: string): ParsedScryptHash | string {
  const m = ENCODED.exec(encoded);
  if (m === null) return 'not a $scrypt$N=..,r=..,p=..$salt$key hash';
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const key = Buffer.from(m[5] as string, 'base64');
  if (!(params.N > 1 && Number.isSafeInteger(params.N) && (params.N & (params.N - 1)) === 0)) {
    return `scrypt N=${params.N} is not a power of two above 1`;
  }
  if (params.r < 1 || params.p < 1) return 'scrypt r and p must be at least 1';
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) {
    return `the scrypt key is ${key.length} bytes (${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} allowed)`;
  }
  return { params, salt: Buffer.from(m[4] as string, 'base64'), key };
}

/**
 * A hash with the node's own parameters that no password matches (a random 32-byte key): a login
 * for a user that does not exist, or whose stored hash costs no scrypt, is verified against it too,
 * so it takes as long as a wrong password for a real user and names cannot be probed by timing.
 */
export const DECOY_PASSWORD_HASH = `$scrypt$N=${COST},r=${BLOCK_SIZE},p=${PARALLELISM}$${randomBytes(SALT_BYTES).toString('base64')}$${randomBytes(KEY_BYTES).toString('base64')}`;

/**
 * Whether `password` matches an encoded hash from `hashPassword`, or a RabbitMQ hash a definitions
 * import brought (rabbit-password-hashes.ts). A malformed hash or out-of-bounds parameters give
 * false (never an exception), so a broken user record locks that user out rather than crashing the
 * login path.
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (isRabbitHash(encoded)) return verifyRabbitHash(password, encoded);
  const parsed = parseScryptHash(encoded);
  if (typeof parsed === 'string' || scryptHashProblem(encoded) !== undefined) return false;
  let actual: Buffer;
  try {
    actual = await derive(password, parsed.salt, parsed.key.length, parsed.params);
  } catch {
    return false;
  }
  return timingSafeEqual(actual, parsed.key);
}

/**
 * Check a login's password against `user`'s stored hash — or, for an unknown user (undefined) or a
 * hash that costs no scrypt (RabbitMQ's salted SHA-256, a passwordless user), also against
 * DECOY_PASSWORD_HASH — so a refusal costs one scrypt of the node's parameters whether or not the
 * name exists. `verify` is verifyPassword unless a test counts its calls.
 */
export async function verifyLogin(
  password: string,
  storedHash: string | undefined,
  verify: (password: string, encodedHash: string) => Promise<boolean> = verifyPassword,
): Promise<boolean> {
  if (storedHash === undefined) {
    await verify(password, DECOY_PASSWORD_HASH);
    return false;
  }
  const ok = await verify(password, storedHash);
  if (!ok && !isScryptHash(storedHash)) await verify(password, DECOY_PASSWORD_HASH);
  return ok;
}
