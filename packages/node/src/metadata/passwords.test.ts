import { describe, expect, it } from 'vitest';
import { hashPassword, scryptHashProblem, verifyPassword } from './passwords.ts';

describe('passwords', () => {
  it('hashes with scrypt parameters in the encoding and a random salt', async () => {
    const a = await hashPassword('guest');
    const b = await hashPassword('guest');
    expect(a).toMatch(/^\$scrypt\$N=16384,r=8,p=1\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('guest');
  });

  it('verifies the right password and rejects a wrong one', async () => {
    const hash = await hashPassword('s3cret-ünïcode');
    expect(await verifyPassword('s3cret-ünïcode', hash)).toBe(true);
    expect(await verifyPassword('s3cret-unicode', hash)).toBe(false);
    expect(await verifyPassword('', hash)).toBe(false);
  });

  it('rejects malformed hashes and hostile parameters without throwing', async () => {
    const hash = await hashPassword('pw');
    const [, , params, salt, key] = hash.split('$');
    expect(params).toBe('N=16384,r=8,p=1');
    const cases = [
      '',
      'plain',
      `$scrypt$${params}$${salt}`,
      `$bcrypt$${params}$${salt}$${key}`,
      `$scrypt$N=1048577,r=8,p=1$${salt}$${key}`,
      `$scrypt$N=2097152,r=8,p=1$${salt}$${key}`,
      `$scrypt$N=1000,r=8,p=1$${salt}$${key}`,
      `$scrypt$N=16384,r=0,p=1$${salt}$${key}`,
      `$scrypt$N=16384,r=8,p=99$${salt}$${key}`,
      `$scrypt$N=16384,r=8,p=1$${salt}$AAAA`,
    ];
    for (const encoded of cases) expect(await verifyPassword('pw', encoded)).toBe(false);
  });

  it('bounds what a stored hash may ask of a login: N <= 2^17, r <= 16, p <= 4, 128*N*r <= 64 MiB', async () => {
    const [, , , salt, key] = (await hashPassword('pw')).split('$');
    const withParams = (params: string) => `$scrypt$${params}$${salt}$${key}`;
    for (const affordable of ['N=16384,r=8,p=1', 'N=131072,r=4,p=4', 'N=32768,r=16,p=2']) {
      expect(scryptHashProblem(withParams(affordable))).toBeUndefined();
    }
    for (const [params, problem] of [
      ['N=262144,r=1,p=1', /N=262144,r=1,p=1 are too costly/],
      ['N=16384,r=32,p=1', /too costly/],
      ['N=16384,r=8,p=5', /too costly/],
      ['N=131072,r=8,p=1', /need 128 MiB per login/],
      ['N=1000,r=8,p=1', /not a power of two/],
    ] as const) {
      expect(scryptHashProblem(withParams(params))).toMatch(problem);
      // One already stored (from before the bound) matches nothing rather than costing the login.
      expect(await verifyPassword('pw', withParams(params))).toBe(false);
    }
  });
});
