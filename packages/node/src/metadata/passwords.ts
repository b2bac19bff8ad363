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
 * Bounds on parameters read back from an encoded hash, so a corrupted or hostile hash cannot make
 * verification allocate gigabytes or spin for minutes: N <= 2^20 (scrypt needs 128*N*r bytes, so
 * 2^20 with r=8 is 1 GiB, the `maxmem` set below), r <= 32, p <= 16, key 16..64 bytes.
 */
const MAX_COST = 2 ** 20;
const MAX_BLOCK_SIZE = 32;
const MAX_PARALLELISM = 16;
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
 * Whether `password` matches an encoded hash from `hashPassword`, or a RabbitMQ hash a definitions
 * import brought (rabbit-password-hashes.ts). A malformed hash or out-of-bounds parameters give
 * false (never an exception), so a broken user record locks that user out rather than crashing the
 * login path.
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  if (isRabbitHash(encoded)) return verifyRabbitHash(password, encoded);
  const m = ENCODED.exec(encoded);
  if (m === null) return false;
  const params = { N: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  const salt = Buffer.from(m[4] as string, 'base64');
  const expected = Buffer.from(m[5] as string, 'base64');
  const powerOfTwo = params.N > 1 && (params.N & (params.N - 1)) === 0;
  if (
    !powerOfTwo ||
    params.N > MAX_COST ||
    params.r < 1 ||
    params.r > MAX_BLOCK_SIZE ||
    params.p < 1 ||
    params.p > MAX_PARALLELISM ||
    expected.length < MIN_KEY_BYTES ||
    expected.length > MAX_KEY_BYTES
  ) {
    return false;
  }
  let actual: Buffer;
  try {
    actual = await derive(password, salt, expected.length, params);
  } catch {
    return false;
  }
  return timingSafeEqual(actual, expected);
}
