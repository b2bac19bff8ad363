import { describe, expect, it } from 'vitest';
import { bootstrapCommands, MetadataMachine } from './metadata-machine.ts';
import { canAccess, canUseVhost } from './permissions.ts';
import type { MetadataCommand } from './types.ts';

function machine(...commands: MetadataCommand[]): MetadataMachine {
  const m = new MetadataMachine();
  for (const c of [...bootstrapCommands({ passwordHash: 'h' }), ...commands]) {
    const reply = m.apply(c);
    if (reply.type !== 'ok') throw new Error(reply.text);
  }
  return m;
}

const bob: MetadataCommand = { type: 'putUser', name: 'bob', passwordHash: 'h', tags: [] };

describe('canAccess', () => {
  it("gives '.*' everything, including the default exchange's empty name", () => {
    const m = machine();
    for (const kind of ['configure', 'write', 'read'] as const) {
      expect(canAccess(m, 'guest', '/', kind, 'anything')).toBe(true);
      expect(canAccess(m, 'guest', '/', kind, '')).toBe(true);
    }
  });

  it("gives '' nothing", () => {
    const m = machine(bob, {
      type: 'setPermissions',
      user: 'bob',
      vhost: '/',
      configure: '',
      write: '',
      read: '',
    });
    expect(canAccess(m, 'bob', '/', 'read', '')).toBe(false);
    expect(canAccess(m, 'bob', '/', 'write', 'x')).toBe(false);
  });

  it('matches unanchored, as RabbitMQ, and each kind with its own regex', () => {
    const m = machine(bob, {
      type: 'setPermissions',
      user: 'bob',
      vhost: '/',
      configure: '^bob-',
      write: 'logs',
      read: '^(amq\\.gen-.*|bob-.*)$',
    });
    expect(canAccess(m, 'bob', '/', 'configure', 'bob-q')).toBe(true);
    expect(canAccess(m, 'bob', '/', 'configure', 'alice-bob-q')).toBe(false);
    expect(canAccess(m, 'bob', '/', 'write', 'app.logs.errors')).toBe(true);
    expect(canAccess(m, 'bob', '/', 'write', 'metrics')).toBe(false);
    expect(canAccess(m, 'bob', '/', 'read', 'amq.gen-123')).toBe(true);
    expect(canAccess(m, 'bob', '/', 'read', 'x-bob-1')).toBe(false);
  });

  it('denies without a permission entry, for unknown users and vhosts', () => {
    const m = machine(bob, { type: 'addVhost', name: 'v2' });
    expect(canAccess(m, 'bob', '/', 'read', 'q')).toBe(false);
    expect(canAccess(m, 'guest', 'v2', 'read', 'q')).toBe(false);
    expect(canAccess(m, 'nobody', '/', 'read', 'q')).toBe(false);
  });

  it('sees permission changes at once (the cache is per record, not per user)', () => {
    const m = machine(bob, {
      type: 'setPermissions',
      user: 'bob',
      vhost: '/',
      configure: '',
      write: '^a$',
      read: '',
    });
    expect(canAccess(m, 'bob', '/', 'write', 'a')).toBe(true);
    m.apply({ type: 'setPermissions', user: 'bob', vhost: '/', configure: '', write: '^b$', read: '' });
    expect(canAccess(m, 'bob', '/', 'write', 'a')).toBe(false);
    expect(canAccess(m, 'bob', '/', 'write', 'b')).toBe(true);
    m.apply({ type: 'clearPermissions', user: 'bob', vhost: '/' });
    expect(canAccess(m, 'bob', '/', 'write', 'b')).toBe(false);
  });
});

describe('canUseVhost', () => {
  it('needs an existing user with a permission entry in an existing vhost', () => {
    const m = machine(bob, { type: 'addVhost', name: 'v2' });
    expect(canUseVhost(m, 'guest', '/')).toBe(true);
    expect(canUseVhost(m, 'bob', '/')).toBe(false);
    expect(canUseVhost(m, 'guest', 'v2')).toBe(false);
    expect(canUseVhost(m, 'guest', 'v3')).toBe(false);
    m.apply({ type: 'setPermissions', user: 'bob', vhost: 'v2', configure: '', write: '', read: '' });
    // Even all-empty permissions allow connecting, as in RabbitMQ.
    expect(canUseVhost(m, 'bob', 'v2')).toBe(true);
    m.apply({ type: 'deleteVhost', name: 'v2' });
    expect(canUseVhost(m, 'bob', 'v2')).toBe(false);
  });
});
