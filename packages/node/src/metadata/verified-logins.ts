/**
 * A bounded per-process cache of logins whose password was verified, shared by every login path
 * (client connections, management basic auth, the console's login form).
 *
 * Why: passwords are stored with scrypt (tens of ms and ~16 MiB per check, on purpose), and when a
 * node dies all its clients reconnect to the others at once: 1,000 connections cost 1,000 scrypts,
 * 18 s on this machine against RabbitMQ's 2.4 s. Clients usually share a few accounts, so a
 * repeated login with a password already verified skips scrypt here, and concurrent logins with
 * the same credentials share one verification. How passwords are stored does not change.
 *
 * What an entry is: an HMAC-SHA256, under a random key made when the process starts, of the user
 * name, the password and the stored hash the password matched. The cache never holds a password,
 * nor a hash anyone could test guesses against without that key, and the stored hash is part of
 * the key: a password change (a new hash, a new salt) misses by construction. Entries are also
 * dropped explicitly on any change to their user (`forgetUser`: password, tags, deletion) and all
 * at once when the metadata is replaced by a snapshot (`clear`).
 *
 * Rules that keep the guarantees of passwords.ts `verifyLogin`:
 * - a failure is never cached: a wrong password always costs a scrypt;
 * - an unknown user is never cached: it costs the decoy scrypt every time, so names cannot be
 *   probed by timing (a fast answer only ever means "this exact password was right a moment
 *   ago", which the asker already knew);
 * - bounded in size (`MAX_VERIFIED_LOGINS`, least recently used evicted first) and in time
 *   (`VERIFIED_LOGIN_TTL_MS` from the verification, not extended by hits).
 */
import { createHmac, randomBytes } from 'node:crypto';
import { verifyLogin, verifyPassword } from './passwords.ts';

/**
 * How long a verified login is reused, ms, counted from the scrypt that verified it. Staleness is
 * not the concern (a changed user misses or is evicted); this bounds how long evidence of a login
 * stays in memory, where a dump of the process (which holds the HMAC key too) would let guesses of
 * that password be tested at HMAC speed rather than scrypt speed. 60 s covers a reconnection
 * storm and clients that reconnect often, at one scrypt per account and minute.
 */
export const VERIFIED_LOGIN_TTL_MS = 60_000;

/**
 * Most verified logins kept, entries (about 200 bytes each, so under 1 MiB). Past it the least
 * recently used entry is evicted: a storm of more distinct accounts than this pays scrypt again
 * for the oldest, never unbounded memory.
 */
export const MAX_VERIFIED_LOGINS = 4_096;

/** Checks a password against a stored hash: passwords.ts `verifyPassword` unless a test counts calls. */
export type PasswordVerifier = (password: string, encodedHash: string) => Promise<boolean>;

export interface VerifiedLoginsOptions {
  /** Default `verifyPassword` (scrypt). */
  readonly verify?: PasswordVerifier;
  /** Milliseconds since the epoch; default `Date.now`. */
  readonly now?: () => number;
  /** Default `VERIFIED_LOGIN_TTL_MS`. */
  readonly ttlMs?: number;
  /** Default `MAX_VERIFIED_LOGINS`. */
  readonly maxEntries?: number;
}

interface Entry {
  /** The user, for `forgetUser`. */
  readonly user: string;
  readonly expiresAt: number;
}

/** See the module comment. */
export class VerifiedLogins {
  readonly #verify: PasswordVerifier;
  readonly #now: () => number;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #key = randomBytes(32);
  /** In least recently used order (a hit moves its entry to the end). */
  readonly #entries = new Map<string, Entry>();
  readonly #inflight = new Map<string, Promise<boolean>>();
  #hits = 0;
  #verifications = 0;

  constructor(options: VerifiedLoginsOptions = {}) {
    this.#verify = options.verify ?? verifyPassword;
    this.#now = options.now ?? Date.now;
    this.#ttlMs = options.ttlMs ?? VERIFIED_LOGIN_TTL_MS;
    this.#maxEntries = options.maxEntries ?? MAX_VERIFIED_LOGINS;
  }

  /**
   * Whether `password` is `user`'s, whose stored hash is `storedHash` (undefined: no such user).
   * Costs one scrypt, as `verifyLogin`, unless the same user, password and hash were verified
   * within the TTL or are being verified right now.
   */
  async verify(user: string, password: string, storedHash: string | undefined): Promise<boolean> {
    if (storedHash === undefined) {
      this.#verifications++;
      return verifyLogin(password, undefined, this.#verify);
    }
    const key = this.#keyOf(user, password, storedHash);
    const entry = this.#entries.get(key);
    if (entry !== undefined) {
      this.#entries.delete(key);
      if (this.#now() < entry.expiresAt) {
        this.#entries.set(key, entry);
        this.#hits++;
        return true;
      }
    }
    let pending = this.#inflight.get(key);
    if (pending === undefined) {
      this.#verifications++;
      pending = verifyLogin(password, storedHash, this.#verify).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    const ok = await pending;
    if (ok) this.#remember(key, { user, expiresAt: this.#now() + this.#ttlMs });
    return ok;
  }

  /** Drop every entry of `user` (its password, tags or existence changed). */
  forgetUser(user: string): void {
    for (const [key, entry] of this.#entries) if (entry.user === user) this.#entries.delete(key);
  }

  /** Drop every entry (the users were replaced at once, by a snapshot). */
  clear(): void {
    this.#entries.clear();
  }

  /** Entries held now (expired ones included until touched or evicted). */
  get size(): number {
    return this.#entries.size;
  }

  /** Logins answered from the cache, and logins that ran a verification, since the start. */
  get stats(): { readonly hits: number; readonly verifications: number } {
    return { hits: this.#hits, verifications: this.#verifications };
  }

  /** Each field length-prefixed, so no two (user, password, hash) triples share an input. */
  #keyOf(user: string, password: string, storedHash: string): string {
    const hmac = createHmac('sha256', this.#key);
    for (const field of [user, password, storedHash]) {
      const bytes = Buffer.from(field, 'utf8');
      const length = Buffer.alloc(4);
      length.writeUInt32BE(bytes.byteLength);
      hmac.update(length).update(bytes);
    }
    return hmac.digest('base64');
  }

  #remember(key: string, entry: Entry): void {
    this.#entries.delete(key);
    while (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, entry);
  }
}
