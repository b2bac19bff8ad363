/**
 * HTTP basic authentication against the metadata store's users.
 *
 * A management client sends its credentials on every request (`styx ctl list_queues` in a watch
 * loop), so verified logins come from the node's `VerifiedLogins` (metadata/verified-logins.ts),
 * the cache every login path shares: a repeated correct password skips scrypt, a wrong one always
 * pays it, an unknown name pays the decoy scrypt, and concurrent requests with the same
 * credentials share one verification.
 *
 * Never logs a password, a hash or the Authorization header.
 */
import { isLoopbackAddress } from '../broker/loopback.ts';
import type { UserRecord } from '../metadata/types.ts';
import type { PasswordVerifier } from '../metadata/verified-logins.ts';
import { VerifiedLogins } from '../metadata/verified-logins.ts';
import { notAuthorised } from './api-error.ts';

const BASIC = /^Basic[ \t]+([A-Za-z0-9+/]+={0,2})[ \t]*$/i;

export interface BasicAuthOptions {
  /** The user with this name, from the metadata cache. */
  readonly lookup: (name: string) => UserRecord | undefined;
  /** Whether this user may only log in from a loopback address (RabbitMQ's `loopback_users`). */
  readonly loopbackOnly: (name: string) => boolean;
  /**
   * The node's verified-login cache (the broker's `logins`, which it evicts on user changes). By
   * default one of its own, over `verify` and `now`.
   */
  readonly logins?: VerifiedLogins;
  /** Password check for a cache of its own; `verifyPassword` (scrypt) unless a test substitutes one. */
  readonly verify?: PasswordVerifier;
  /** Milliseconds since the epoch for a cache of its own; Date.now unless a test substitutes one. */
  readonly now?: () => number;
}

export class BasicAuthenticator {
  private readonly lookup: BasicAuthOptions['lookup'];
  private readonly loopbackOnly: BasicAuthOptions['loopbackOnly'];
  private readonly logins: VerifiedLogins;

  constructor(options: BasicAuthOptions) {
    this.lookup = options.lookup;
    this.loopbackOnly = options.loopbackOnly;
    this.logins =
      options.logins ??
      new VerifiedLogins({
        ...(options.verify === undefined ? {} : { verify: options.verify }),
        ...(options.now === undefined ? {} : { now: options.now }),
      });
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
    if (!(await this.logins.verify(name, password, user?.passwordHash)) || user === undefined) {
      throw notAuthorised('Login failed');
    }
    // Re-read: the user may have been deleted or changed while scrypt ran.
    const current = this.lookup(name);
    if (current === undefined || current.passwordHash !== user.passwordHash)
      throw notAuthorised('Login failed');
    if (this.loopbackOnly(name) && !isLoopbackAddress(remoteAddress ?? '')) {
      throw notAuthorised(`user '${name}' can only log in via localhost`);
    }
    return current;
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
