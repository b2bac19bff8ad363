import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from './passwords.ts';

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
});
