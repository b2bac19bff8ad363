/**
 * HTTP basic authentication against the metadata store's users, with a short-lived cache of
 * successful verifications.
 *
 * Why a cache: passwords are stored with scrypt (tens of ms and ~16 MiB per check, on purpose),
 * and a management client sends its credentials on every request; `styx ctl list_queues` in a
 * watch loop must not cost a scrypt each time. A cache entry remembers "this user + password
 * matched this stored hash" for CACHE_TTL_MS; it is keyed by an HMAC of user and password under a
 * random per-process key (so the cache never holds a password, nor a fast unsalted hash of one),
 * and it only counts while the user's stored hash is still the one verified: a password change or
 * a deleted user takes effect on the next request. Failures are never cached (a wrong password
 * always pays the full scrypt), and concurrent requests with the same credentials share one
 * verification.
 *
 * Never logs a password, a hash or the Authorization header.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { isLoopbackAddress } from '../broker/loopback.ts';
import { verifyLogin, verifyPassword } from '../metadata/passwords.ts';
import type { UserRecord } from '../metadata/types.ts';
import { notAuthorised } from './api-error.ts';

/**
 * How long a successful verification is reused, ms. Staleness is not the concern (an entry only
 * counts while the stored hash is unchanged); this bounds how long evidence of a login stays in
 * memory. 10 s covers a burst of requests (a ctl script, a dashboard refresh) with one scrypt.
 */
const CACHE_TTL_MS = 10_000;

/** Most cached verifications kept, entries (about 150 bytes each); the oldest is evicted first. */
const MAX_CACHE_ENTRIES = 1024;

const BASIC = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i;

export interface BasicAuthOptions {
  /** The user with this name, from the metadata cache. */
  readonly lookup: (name: string) => UserRecord | undefined;
  /** Whether this user may only log in from a loopback address (RabbitMQ's `loopback_users`). */
  readonly loopbackOnly: (name: string) => boolean;
  /** Password check; `verifyPassword` (scrypt) unless a test substitutes one. */
  readonly verify?: (password: string, encodedHash: string) => Promise<boolean>;
  /** Milliseconds since the epoch; Date.now unless a test substitutes one. */
  readonly now?: () => number;
}

interface CacheEntry {
  /** The stored hash the password was verified against. */
  readonly passwordHash: string;
  readonly expiresAt: number;
}

export class BasicAuthenticator {
  private readonly lookup: BasicAuthOptions['lookup'];
  private readonly loopbackOnly: BasicAuthOptions['loopbackOnly'];
  private readonly verify: NonNullable<BasicAuthOptions['verify']>;
  private readonly now: () => number;
  private readonly cacheKey = randomBytes(32);
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inflight = new Map<string, Promise<boolean>>();

  constructor(options: BasicAuthOptions) {
    this.lookup = options.lookup;
    this.loopbackOnly = options.loopbackOnly;
    this.verify = options.verify ?? verifyPassword;
    this.now = options.now ?? Date.now;
  }

  /**
   * The user an Authorization header authenticates, or an ApiError 401. An unknown user and a
   * wrong password get the same answer after the same scrypt work (verifyLogin checks an unknown
   * name against a decoy hash), so names cannot be probed by the answer nor by its timing.
   */
  async authenticate(header: string | undefined, remoteAddress: string | undefined): Promise<UserRecord> {
    const credentials = parseBasic(header);
    if (credentials === undefined) throw notAuthorised('basic authentication required');
    return this.verifyCredentials(credentials.user, credentials.password, remoteAddress);
  }

  /**
   * The user `name` and `password` authenticate (the web console's login form), or an ApiError
   * 401, with the same rules and cache as `authenticate`.
   */
  async verifyCredentials(
    name: string,
    password: string,
    remoteAddress: string | undefined,
  ): Promise<UserRecord> {
    const user = this.lookup(name);
    if (user === undefined) {
      await verifyLogin(password, undefined, this.verify);
      throw notAuthorised('Login failed');
    }
    if (!(await this.matches(name, password, user.passwordHash))) throw notAuthorised('Login failed');
    // Re-read: the user may have been deleted or changed while scrypt ran.
    const current = this.lookup(name);
    if (current === undefined || current.passwordHash !== user.passwordHash)
      throw notAuthorised('Login failed');
    if (this.loopbackOnly(name) && !isLoopbackAddress(remoteAddress ?? '')) {
      throw notAuthorised(`user '${name}' can only log in via localhost`);
    }
    return current;
  }

  private async matches(name: string, password: string, passwordHash: string): Promise<boolean> {
    const key = createHmac('sha256', this.cacheKey)
      .update(name)
      .update('\0')
      .update(password)
      .digest('base64');
    const cached = this.cache.get(key);
    const now = this.now();
    if (cached !== undefined) {
      if (cached.passwordHash === passwordHash && now < cached.expiresAt) return true;
      this.cache.delete(key);
    }
    let pending = this.inflight.get(key);
    if (pending === undefined) {
      pending = verifyLogin(password, passwordHash, this.verify).finally(() => this.inflight.delete(key));
      this.inflight.set(key, pending);
    }
    const ok = await pending;
    if (ok) this.remember(key, { passwordHash, expiresAt: this.now() + CACHE_TTL_MS });
    return ok;
  }

  private remember(key: string, entry: CacheEntry): void {
    this.cache.delete(key);
    if (this.cache.size >= MAX_CACHE_ENTRIES) {
      const oldest = this.cache.keys().next();
      if (oldest.done !== true) this.cache.delete(oldest.value);
    }
    this.cache.set(key, entry);
  }
}

/** User and password from `Authorization: Basic ...`; undefined when absent or malformed. */
export function parseBasic(header: string | undefined): { user: string; password: string } | undefined {
  if (header === undefined) return undefined;
  const m = BASIC.exec(header);
  if (m === null) return undefined;
  const decoded = Buffer.from(m[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
