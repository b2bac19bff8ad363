import { describe, expect, it } from 'vitest';
import { DECOY_PASSWORD_HASH, hashPassword, verifyPassword } from './passwords.ts';
import type { PasswordVerifier } from './verified-logins.ts';
import { VERIFIED_LOGIN_TTL_MS, VerifiedLogins } from './verified-logins.ts';

/**
 * A cache over a verifier whose "hash" is `hash:<password>`, counting its calls: `checks` against
 * users' hashes, `decoys` against the decoy hash. Never a timing: what is counted is the scrypt
 * calls a real verifier would have made.
 */
function setup(options: { maxEntries?: number } = {}) {
  let now = 1_000;
  const checks: string[] = [];
  const decoys: string[] = [];
  const verify: PasswordVerifier = async (password, hash) => {
    (hash === DECOY_PASSWORD_HASH ? decoys : checks).push(password);
    return hash === `hash:${password}`;
  };
  const logins = new VerifiedLogins({ verify, now: () => now, ...options });
  return {
    logins,
    checks,
    decoys,
    advance(ms: number) {
      now += ms;
    },
  };
}

describe('VerifiedLogins', () => {
  it('a second login with the same correct password skips scrypt (real scrypt hashes, counted)', async () => {
    const stored = await hashPassword('s3cret');
    const calls: string[] = [];
    const logins = new VerifiedLogins({
      verify: (password, hash) => {
        calls.push(password);
        return verifyPassword(password, hash);
      },
    });
    expect(await logins.verify('app', 's3cret', stored)).toBe(true);
    expect(await logins.verify('app', 's3cret', stored)).toBe(true);
    expect(await logins.verify('app', 's3cret', stored)).toBe(true);
    expect(calls).toEqual(['s3cret']);
    expect(logins.stats).toEqual({ hits: 2, verifications: 1 });
  });

  it('a changed password misses by construction: the old one is refused, the new one verified', async () => {
    const { logins, checks } = setup();
    expect(await logins.verify('bob', 'old', 'hash:old')).toBe(true);
    // The user's stored hash changed (a new password): the cache is not even asked to forget.
    expect(await logins.verify('bob', 'old', 'hash:new')).toBe(false);
    expect(await logins.verify('bob', 'new', 'hash:new')).toBe(true);
    expect(await logins.verify('bob', 'new', 'hash:new')).toBe(true);
    expect(checks).toEqual(['old', 'old', 'new']);
  });

  it('never caches a wrong password: each attempt costs a verification', async () => {
    const { logins, checks } = setup();
    for (let i = 0; i < 3; i++) expect(await logins.verify('bob', 'wrong', 'hash:pw')).toBe(false);
    expect(checks).toEqual(['wrong', 'wrong', 'wrong']);
    expect(logins.size).toBe(0);
  });

  it('never caches an unknown user: each attempt costs the decoy scrypt', async () => {
    const { logins, decoys } = setup();
    for (let i = 0; i < 3; i++) expect(await logins.verify('nobody', 'pw', undefined)).toBe(false);
    expect(decoys).toEqual(['pw', 'pw', 'pw']);
    expect(logins.size).toBe(0);
  });

  it('forgets a user on request (tags changed, same hash) and everything on clear', async () => {
    const { logins, checks } = setup();
    await logins.verify('bob', 'pw', 'hash:pw');
    await logins.verify('ann', 'pw2', 'hash:pw2');
    logins.forgetUser('bob');
    await logins.verify('bob', 'pw', 'hash:pw');
    await logins.verify('ann', 'pw2', 'hash:pw2');
    expect(checks).toEqual(['pw', 'pw2', 'pw']);
    logins.clear();
    expect(logins.size).toBe(0);
    await logins.verify('ann', 'pw2', 'hash:pw2');
    expect(checks).toEqual(['pw', 'pw2', 'pw', 'pw2']);
  });

  it('reuses a verification for the TTL from the scrypt, hits do not extend it', async () => {
    const { logins, checks, advance } = setup();
    await logins.verify('bob', 'pw', 'hash:pw');
    advance(VERIFIED_LOGIN_TTL_MS - 1);
    await logins.verify('bob', 'pw', 'hash:pw');
    advance(1);
    await logins.verify('bob', 'pw', 'hash:pw');
    expect(checks).toEqual(['pw', 'pw']);
  });

  it('holds at most maxEntries, evicting the least recently used', async () => {
    const { logins, checks } = setup({ maxEntries: 3 });
    for (const user of ['a', 'b', 'c']) await logins.verify(user, 'pw', 'hash:pw');
    await logins.verify('a', 'pw', 'hash:pw'); // a hit: 'a' is now the most recently used
    for (const user of ['d', 'e']) await logins.verify(user, 'pw', 'hash:pw');
    expect(logins.size).toBe(3);
    checks.length = 0;
    for (const user of ['a', 'd', 'e']) await logins.verify(user, 'pw', 'hash:pw');
    expect(checks).toEqual([]);
    for (const user of ['b', 'c']) await logins.verify(user, 'pw', 'hash:pw');
    expect(checks).toEqual(['pw', 'pw']);
    expect(logins.size).toBe(3);
  });

  it('shares one verification between concurrent logins with the same credentials', async () => {
    const { logins, checks } = setup();
    const answers = await Promise.all([1, 2, 3].map(() => logins.verify('bob', 'pw', 'hash:pw')));
    expect(answers).toEqual([true, true, true]);
    expect(checks).toEqual(['pw']);
  });

  it('keeps users apart whose fields would concatenate alike', async () => {
    const { logins, checks } = setup();
    await logins.verify('ab', 'c', 'hash:c');
    expect(await logins.verify('a', 'bc', 'hash:c')).toBe(false);
    expect(checks).toEqual(['c', 'bc']);
  });
});
