/**
 * The web console's sessions, held in this node's memory (a session is per node: the console of
 * another node needs its own login). A session is a random 256-bit id sent as an HttpOnly cookie,
 * plus a random CSRF token the page sends back in a header on every state-changing request.
 *
 * A session ends when it was not used for `idleMs`, when it is `maxAgeMs` old however busy it was,
 * at logout, and when its user's password changed or the user was deleted (the caller checks the
 * stored hash on each use against `passwordHash`). At most `maxSessions` are kept: a new login past
 * the bound ends the session used least recently, so a flood of logins costs bounded memory.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** Most time a session may go unused, ms (30 min, as RabbitMQ's management UI login_session_timeout). */
export const SESSION_IDLE_MS = 30 * 60_000;
/** Most time a session lasts from login, ms (8 h: a working day; then the operator logs in again). */
export const SESSION_MAX_AGE_MS = 8 * 60 * 60_000;
/** Most sessions kept at once (about 300 bytes each). */
export const MAX_SESSIONS = 10_000;

export interface Session {
  readonly id: string;
  readonly csrfToken: string;
  readonly user: string;
  /** The user's stored password hash at login: a change of password ends the session. */
  readonly passwordHash: string;
  readonly createdAt: number;
  lastUsedAt: number;
}

export interface SessionStoreOptions {
  readonly idleMs?: number;
  readonly maxAgeMs?: number;
  readonly maxSessions?: number;
  /** Milliseconds since the epoch; Date.now unless a test substitutes one. */
  readonly now?: () => number;
}

/** 32 random bytes as base64url (43 characters, cookie- and header-safe). */
function randomToken(): string {
  return randomBytes(32).toString('base64url');
}

export class SessionStore {
  readonly idleMs: number;
  readonly maxAgeMs: number;
  private readonly maxSessions: number;
  private readonly now: () => number;
  /** By id, least recently used first (a use moves a session to the end). */
  private readonly sessions = new Map<string, Session>();

  constructor(options: SessionStoreOptions = {}) {
    this.idleMs = options.idleMs ?? SESSION_IDLE_MS;
    this.maxAgeMs = options.maxAgeMs ?? SESSION_MAX_AGE_MS;
    this.maxSessions = options.maxSessions ?? MAX_SESSIONS;
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** A new session for `user`, who has just proved its password. */
  create(user: string, passwordHash: string): Session {
    this.sweep();
    while (this.sessions.size >= this.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done === true) break;
      this.sessions.delete(oldest.value);
    }
    const now = this.now();
    const session: Session = {
      id: randomToken(),
      csrfToken: randomToken(),
      user,
      passwordHash,
      createdAt: now,
      lastUsedAt: now,
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session with this id, its idle clock restarted; undefined if unknown or expired. */
  use(id: string): Session | undefined {
    const session = this.sessions.get(id);
    if (session === undefined) return undefined;
    const now = this.now();
    if (this.expired(session, now)) {
      this.sessions.delete(id);
      return undefined;
    }
    session.lastUsedAt = now;
    this.sessions.delete(id);
    this.sessions.set(id, session);
    return session;
  }

  /** End a session (logout, or its user changed). */
  end(id: string): void {
    this.sessions.delete(id);
  }

  /** Drop expired sessions (least recently used first, so the scan stops at the first live one). */
  sweep(): void {
    const now = this.now();
    for (const [id, session] of this.sessions) {
      if (now - session.lastUsedAt <= this.idleMs) break;
      this.sessions.delete(id);
    }
  }

  private expired(session: Session, now: number): boolean {
    return now - session.lastUsedAt > this.idleMs || now - session.createdAt > this.maxAgeMs;
  }
}

/** Whether `presented` is the session's CSRF token (constant time in the token's length). */
export function csrfTokenMatches(session: Session, presented: string | undefined): boolean {
  if (presented === undefined) return false;
  const expected = Buffer.from(session.csrfToken);
  const actual = Buffer.from(presented);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}
