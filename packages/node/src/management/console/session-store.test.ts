import { describe, expect, it } from 'vitest';
import { csrfTokenMatches, SessionStore } from './session-store.ts';

function clock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

describe('SessionStore', () => {
  it('gives random ids and CSRF tokens, 43 base64url characters each, and finds a session by id', () => {
    const store = new SessionStore();
    const a = store.create('alice', 'h');
    const b = store.create('alice', 'h');
    expect(a.id).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(a.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(new Set([a.id, b.id, a.csrfToken, b.csrfToken]).size).toBe(4);
    expect(store.use(a.id)?.user).toBe('alice');
    expect(store.use('nope')).toBeUndefined();
  });

  it('ends a session unused for the idle time, and any session at its maximum age however busy', () => {
    const c = clock();
    const store = new SessionStore({ idleMs: 1000, maxAgeMs: 5000, now: c.now });
    const idle = store.create('u', 'h');
    c.advance(1001);
    expect(store.use(idle.id)).toBeUndefined();
    const busy = store.create('u', 'h');
    for (let i = 0; i < 5; i++) {
      c.advance(900);
      expect(store.use(busy.id)).toBeDefined();
    }
    c.advance(900); // 5400 ms old, used 900 ms ago
    expect(store.use(busy.id)).toBeUndefined();
  });

  it('keeps at most maxSessions, ending the least recently used first', () => {
    const store = new SessionStore({ maxSessions: 2 });
    const a = store.create('a', 'h');
    const b = store.create('b', 'h');
    store.use(a.id);
    const c = store.create('c', 'h');
    expect(store.size).toBe(2);
    expect(store.use(b.id)).toBeUndefined();
    expect(store.use(a.id)).toBeDefined();
    expect(store.use(c.id)).toBeDefined();
  });

  it('sweeps idle sessions when a new one is made', () => {
    const c = clock();
    const store = new SessionStore({ idleMs: 1000, now: c.now });
    store.create('a', 'h');
    store.create('b', 'h');
    c.advance(2000);
    store.create('c', 'h');
    expect(store.size).toBe(1);
  });

  it('matches the CSRF token exactly', () => {
    const session = new SessionStore().create('u', 'h');
    expect(csrfTokenMatches(session, session.csrfToken)).toBe(true);
    expect(csrfTokenMatches(session, undefined)).toBe(false);
    expect(csrfTokenMatches(session, '')).toBe(false);
    expect(csrfTokenMatches(session, `${session.csrfToken}x`)).toBe(false);
    expect(
      csrfTokenMatches(
        session,
        session.csrfToken.replace(/.$/, (ch) => (ch === 'A' ? 'B' : 'A')),
      ),
    ).toBe(false);
  });
});
