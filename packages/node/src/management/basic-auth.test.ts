import { describe, expect, it } from 'vitest';
import type { UserRecord } from '../metadata/types.ts';
import { ApiError } from './api-error.ts';
import { BasicAuthenticator, parseBasic } from './basic-auth.ts';

function header(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** An authenticator over a mutable user table whose "hash" is `hash:<password>`, counting checks. */
function setup(loopbackOnly: readonly string[] = []) {
  const users = new Map<string, UserRecord>([['bob', { name: 'bob', passwordHash: 'hash:pw', tags: [] }]]);
  let now = 1_000;
  const checks: string[] = [];
  const auth = new BasicAuthenticator({
    lookup: (name) => users.get(name),
    loopbackOnly: (name) => loopbackOnly.includes(name),
    verify: async (password, hash) => {
      checks.push(password);
      return hash === `hash:${password}`;
    },
    now: () => now,
  });
  return {
    auth,
    users,
    checks,
    advance(ms: number) {
      now += ms;
    },
  };
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('parseBasic', () => {
  it('splits at the first colon, so passwords may contain colons', () => {
    expect(parseBasic(header('bob', 'a:b:c'))).toEqual({ user: 'bob', password: 'a:b:c' });
    expect(parseBasic(`basic ${Buffer.from('u:').toString('base64')}`)).toEqual({ user: 'u', password: '' });
  });

  it('rejects anything else', () => {
    for (const h of [
      undefined,
      '',
      'Basic',
      'Bearer x',
      'Basic *',
      `Basic ${Buffer.from('nocolon').toString('base64')}`,
    ]) {
      expect(parseBasic(h)).toBeUndefined();
    }
  });
});

describe('BasicAuthenticator', () => {
  it('verifies once, then serves the same credentials from the cache until the TTL passes', async () => {
    const { auth, checks, advance } = setup();
    expect((await auth.authenticate(header('bob', 'pw'), '127.0.0.1')).name).toBe('bob');
    await auth.authenticate(header('bob', 'pw'), '127.0.0.1');
    expect(checks).toEqual(['pw']);
    advance(10_001);
    await auth.authenticate(header('bob', 'pw'), '127.0.0.1');
    expect(checks).toEqual(['pw', 'pw']);
  });

  it('never caches a failure', async () => {
    const { auth, checks } = setup();
    for (let i = 0; i < 3; i++) {
      expect((await refusal(auth.authenticate(header('bob', 'wrong'), '127.0.0.1'))).status).toBe(401);
    }
    expect(checks).toEqual(['wrong', 'wrong', 'wrong']);
  });

  it('shares one verification between concurrent requests with the same credentials', async () => {
    const { auth, checks } = setup();
    await Promise.all([1, 2, 3].map(() => auth.authenticate(header('bob', 'pw'), '127.0.0.1')));
    expect(checks).toEqual(['pw']);
  });

  it('drops a cached login when the stored hash changes or the user goes', async () => {
    const { auth, users } = setup();
    await auth.authenticate(header('bob', 'pw'), '127.0.0.1');
    users.set('bob', { name: 'bob', passwordHash: 'hash:new', tags: [] });
    expect((await refusal(auth.authenticate(header('bob', 'pw'), '127.0.0.1'))).message).toBe('Login failed');
    await auth.authenticate(header('bob', 'new'), '127.0.0.1');
    users.delete('bob');
    expect((await refusal(auth.authenticate(header('bob', 'new'), '127.0.0.1'))).status).toBe(401);
  });

  it('answers an unknown user as a wrong password', async () => {
    const { auth } = setup();
    const unknown = await refusal(auth.authenticate(header('eve', 'pw'), '127.0.0.1'));
    const wrong = await refusal(auth.authenticate(header('bob', 'nope'), '127.0.0.1'));
    expect([unknown.status, unknown.message]).toEqual([wrong.status, wrong.message]);
  });

  it('keeps loopback-only users to loopback addresses', async () => {
    const { auth } = setup(['bob']);
    await auth.authenticate(header('bob', 'pw'), '::ffff:127.0.0.1');
    await auth.authenticate(header('bob', 'pw'), '::1');
    const remote = await refusal(auth.authenticate(header('bob', 'pw'), '10.1.2.3'));
    expect([remote.status, remote.message]).toEqual([401, "user 'bob' can only log in via localhost"]);
  });
});
