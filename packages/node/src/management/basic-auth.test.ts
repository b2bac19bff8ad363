import { describe, expect, it } from 'vitest';
import { DECOY_PASSWORD_HASH, hashPassword, verifyPassword } from '../metadata/passwords.ts';
import type { UserRecord } from '../metadata/types.ts';
import { VERIFIED_LOGIN_TTL_MS } from '../metadata/verified-logins.ts';
import { ApiError } from './api-error.ts';
import { BasicAuthenticator, parseBasic } from './basic-auth.ts';

function header(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/**
 * An authenticator over a mutable user table whose "hash" is `hash:<password>`, counting checks:
 * `checks` against users' hashes, `decoys` against the decoy hash an unknown name is checked with.
 */
function setup(loopbackOnly: readonly string[] = []) {
  const users = new Map<string, UserRecord>([['bob', { name: 'bob', passwordHash: 'hash:pw', tags: [] }]]);
  let now = 1_000;
  const checks: string[] = [];
  const decoys: string[] = [];
  const auth = new BasicAuthenticator({
    lookup: (name) => users.get(name),
    loopbackOnly: (name) => loopbackOnly.includes(name),
    verify: async (password, hash) => {
      (hash === DECOY_PASSWORD_HASH ? decoys : checks).push(password);
      return hash === `hash:${password}`;
    },
    now: () => now,
  });
  return {
    auth,
    users,
    checks,
    decoys,
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
    advance(VERIFIED_LOGIN_TTL_MS);
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

  it('makes an unknown name cost the scrypt work of a wrong password (basic auth and the console login alike)', async () => {
    const { auth, checks, decoys } = setup();
    await refusal(auth.authenticate(header('eve', 'pw1'), '127.0.0.1'));
    await refusal(auth.verifyCredentials('mallory', 'pw2', '127.0.0.1'));
    expect(decoys).toEqual(['pw1', 'pw2']);
    expect(checks).toEqual([]);
    // A user whose stored hash costs no scrypt (RabbitMQ's salted SHA-256 here) pays the decoy too.
    await refusal(auth.authenticate(header('bob', 'nope'), '127.0.0.1'));
    expect([checks, decoys]).toEqual([['nope'], ['pw1', 'pw2', 'nope']]);
    await auth.authenticate(header('bob', 'pw'), '127.0.0.1');
    expect(decoys).toHaveLength(3);
  });

  it('checks an unknown name against a decoy scrypt hash of the node parameters that nothing matches', async () => {
    expect(DECOY_PASSWORD_HASH).toMatch(/^\$scrypt\$N=16384,r=8,p=1\$/);
    expect(DECOY_PASSWORD_HASH.split('$')[2]).toBe((await hashPassword('x')).split('$')[2]);
    expect(await verifyPassword('', DECOY_PASSWORD_HASH)).toBe(false);
    expect(await verifyPassword('guest', DECOY_PASSWORD_HASH)).toBe(false);
  });

  it('keeps loopback-only users to loopback addresses', async () => {
    const { auth } = setup(['bob']);
    await auth.authenticate(header('bob', 'pw'), '::ffff:127.0.0.1');
    await auth.authenticate(header('bob', 'pw'), '::1');
    const remote = await refusal(auth.authenticate(header('bob', 'pw'), '10.1.2.3'));
    expect([remote.status, remote.message]).toEqual([401, "user 'bob' can only log in via localhost"]);
  });
});
