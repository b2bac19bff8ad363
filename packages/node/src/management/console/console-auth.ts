/**
 * Who a management request comes from, by either of two means:
 *
 * - HTTP basic auth (an `Authorization` header): tools, `styx ctl`, curl runbooks. Checked by
 *   BasicAuthenticator; no CSRF token. A browser does attach basic credentials it once cached to a
 *   form another site submits, so the server refuses, before this, any state-changing request that
 *   says it comes from another origin or whose body is not JSON (cross-site-guard.ts), and never
 *   challenges a browser to cache them.
 * - a console session (the `styx_session` cookie set at login): the web console's fetches. A
 *   state-changing request (anything but GET/HEAD) must also carry the session's CSRF token in the
 *   `X-CSRF-Token` header (and pass the same origin and JSON rules). The cookie is SameSite=Strict
 *   as well; the token is what a forged request cannot know.
 *
 * A 401 to a request with neither carries a basic-auth challenge, except to the console's own
 * fetches (`X-Requested-With: styx-console`) and to browsers (the server drops it): a browser
 * would answer the challenge with a prompt.
 *
 * Only users with one of RabbitMQ's management tags may hold a session; the user is read again
 * on every request, so a deleted user, a changed password or a lost tag ends the session at once.
 */
import type { IncomingMessage } from 'node:http';
import type { UserRecord } from '../../metadata/types.ts';
import { MANAGEMENT_TAGS } from '../access.ts';
import { ApiError, badRequest, forbidden, notAuthorised } from '../api-error.ts';
import type { BasicAuthenticator } from '../basic-auth.ts';
import { objectBody, readJsonBody, requiredString } from '../request-body.ts';
import type { Session, SessionStore } from './session-store.ts';
import { csrfTokenMatches } from './session-store.ts';

/** The tags that open the console: those that let a user use the management API at all. */
export const CONSOLE_TAGS: readonly string[] = MANAGEMENT_TAGS;
export const SESSION_COOKIE = 'styx_session';
export const CSRF_HEADER = 'x-csrf-token';
/** The `X-Requested-With` value of the console's fetches. */
export const CONSOLE_MARKER = 'styx-console';

const SAFE_METHODS = new Set(['GET', 'HEAD']);
/** Longest user name or password the login form takes, characters. */
const MAX_CREDENTIAL_LENGTH = 1024;

/** A 401 without `WWW-Authenticate`: the console's fetch must not make the browser prompt. */
function sessionRefused(reason: string): ApiError {
  return new ApiError(401, 'not_authorised', reason);
}

export interface ConsoleAuthOptions {
  readonly basic: BasicAuthenticator;
  /** The user with this name, from the metadata cache. */
  readonly lookup: (name: string) => UserRecord | undefined;
  readonly sessions: SessionStore;
}

/** A live session and its user as stored now. */
export interface SessionUser {
  readonly session: Session;
  readonly user: UserRecord;
}

export class ConsoleAuth {
  readonly sessions: SessionStore;
  private readonly basic: BasicAuthenticator;
  private readonly lookup: ConsoleAuthOptions['lookup'];

  constructor(options: ConsoleAuthOptions) {
    this.basic = options.basic;
    this.lookup = options.lookup;
    this.sessions = options.sessions;
  }

  /** The user of an /api/ request (basic auth, else a session with its CSRF rules), or an ApiError. */
  async authenticate(request: IncomingMessage): Promise<UserRecord> {
    const header = request.headers.authorization;
    if (header !== undefined) return this.basic.authenticate(header, request.socket.remoteAddress);
    const id = sessionId(request);
    if (id === undefined) {
      // The console's own fetch after logout: a challenge would make the browser prompt for a password.
      if (request.headers['x-requested-with'] === CONSOLE_MARKER) throw sessionRefused('not logged in');
      throw notAuthorised('basic authentication required');
    }
    const live = this.current(id);
    if (live === undefined) throw sessionRefused('your console session has ended: log in again');
    if (!SAFE_METHODS.has(request.method ?? 'GET')) checkForgery(request, live.session);
    return live.user;
  }

  /** The live session of the request's cookie, if any. */
  sessionOf(request: IncomingMessage): SessionUser | undefined {
    const id = sessionId(request);
    return id === undefined ? undefined : this.current(id);
  }

  /**
   * Log in with `{username, password}` (JSON): a new session (a fresh id even when the browser had
   * one, so an id planted before login is worth nothing). 401 for wrong credentials, 403 for a
   * user without a management tag.
   */
  async login(request: IncomingMessage): Promise<SessionUser> {
    // The server has refused a body that is not JSON (415) and another origin (403) already: a
    // cross-site HTML form cannot log a browser in (cross-site-guard.ts).
    const body = objectBody(await readJsonBody(request));
    const name = requiredString(body, 'username');
    const password = requiredString(body, 'password');
    if (name.length > MAX_CREDENTIAL_LENGTH || password.length > MAX_CREDENTIAL_LENGTH) {
      throw badRequest(`user name and password are at most ${MAX_CREDENTIAL_LENGTH} characters`);
    }
    let user: UserRecord;
    try {
      user = await this.basic.verifyCredentials(name, password, request.socket.remoteAddress);
    } catch (err) {
      if (err instanceof ApiError) throw sessionRefused(err.message);
      throw err;
    }
    if (!hasConsoleTag(user)) {
      throw forbidden(
        `user '${name}' has none of the tags that open the console (${CONSOLE_TAGS.join(', ')})`,
      );
    }
    const old = sessionId(request);
    if (old !== undefined) this.sessions.end(old);
    return { session: this.sessions.create(user.name, user.passwordHash), user };
  }

  /** End the request's session (a CSRF-checked state change like any other). */
  logout(request: IncomingMessage): void {
    const live = this.sessionOf(request);
    if (live === undefined) throw sessionRefused('no console session');
    checkForgery(request, live.session);
    this.sessions.end(live.session.id);
  }

  private current(id: string): SessionUser | undefined {
    const session = this.sessions.use(id);
    if (session === undefined) return undefined;
    const user = this.lookup(session.user);
    if (user === undefined || user.passwordHash !== session.passwordHash || !hasConsoleTag(user)) {
      this.sessions.end(id);
      return undefined;
    }
    return { session, user };
  }
}

export function hasConsoleTag(user: UserRecord): boolean {
  return user.tags.some((tag) => CONSOLE_TAGS.includes(tag));
}

/**
 * 403 unless the request carries the session's CSRF token (the server has checked its origin
 * already, for every means of authentication: cross-site-guard.ts).
 */
function checkForgery(request: IncomingMessage, session: Session): void {
  const token = request.headers[CSRF_HEADER];
  if (!csrfTokenMatches(session, typeof token === 'string' ? token : undefined)) {
    throw forbidden(`missing or wrong ${CSRF_HEADER} header (the console session's CSRF token)`);
  }
}

/** The session id of the request's `Cookie` header, if it has one. */
function sessionId(request: IncomingMessage): string | undefined {
  const header = request.headers.cookie;
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const value = part.slice(eq + 1).trim();
      return value === '' ? undefined : value;
    }
  }
  return undefined;
}

/**
 * The `Set-Cookie` value that gives the browser `session` (or, undefined, takes it back). Over https
 * (`secure`) the cookie is `Secure`: the browser never sends it over plain http, where anyone on the
 * path could read it (cookies do not keep to a port, so an http listener beside the https one would
 * otherwise receive it).
 */
export function sessionCookie(session: Session | undefined, maxAgeMs: number, secure = false): string {
  const value = session?.id ?? '';
  const maxAge = session === undefined ? 0 : Math.floor(maxAgeMs / 1000);
  return `${SESSION_COOKIE}=${value}; Path=/; HttpOnly;${secure ? ' Secure;' : ''} SameSite=Strict; Max-Age=${maxAge}`;
}

/** Whether `request` came over TLS (the https management listener). */
export function isTlsRequest(request: IncomingMessage): boolean {
  return (request.socket as { encrypted?: boolean }).encrypted === true;
}
