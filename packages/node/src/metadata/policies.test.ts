import { describe, expect, it } from 'vitest';
import { metadataCommandCodec } from './command-codec.ts';
import { bootstrapCommands, MetadataMachine } from './metadata-machine.ts';
import type { MetadataCommand, MetadataError, MetadataOk, MetadataReply } from './types.ts';

const META = { index: 1, term: 1, ts: 0 };

type SetPolicy = Extract<MetadataCommand, { type: 'setPolicy' }>;

function okReply(reply: MetadataReply): MetadataOk {
  if (reply.type !== 'ok') throw new Error(`expected ok, got ${reply.code} ${reply.text}`);
  return reply;
}

function errReply(reply: MetadataReply): MetadataError {
  if (reply.type !== 'error') throw new Error('expected an error reply');
  return reply;
}

function fresh(): MetadataMachine {
  const m = new MetadataMachine();
  for (const c of bootstrapCommands({ passwordHash: 'hash' })) okReply(m.apply(c, META));
  return m;
}

function policy(name: string, over: Partial<SetPolicy> = {}): SetPolicy {
  return {
    type: 'setPolicy',
    vhost: '/',
    name,
    pattern: '.*',
    applyTo: 'queues',
    priority: 0,
    definition: { 'dead-letter-exchange': 'my-dlx' },
    ...over,
  };
}

describe('setPolicy and clearPolicy', () => {
  it('creates, replaces (keeping its place) and clears policies', () => {
    const m = fresh();
    expect(okReply(m.apply(policy('DLX'), META)).created).toBe(true);
    expect(okReply(m.apply(policy('TTL', { definition: { 'message-ttl': 1000 } }), META)).created).toBe(true);
    const replaced = okReply(m.apply(policy('DLX', { pattern: '^orders', priority: 3 }), META));
    expect(replaced.created).toBe(false);
    expect(m.policies('/').map((p) => [p.name, p.pattern, p.priority])).toEqual([
      ['DLX', '^orders', 3],
      ['TTL', '.*', 0],
    ]);
    expect(m.policy('/', 'DLX')).toEqual({
      vhost: '/',
      name: 'DLX',
      pattern: '^orders',
      applyTo: 'queues',
      priority: 3,
      definition: { 'dead-letter-exchange': 'my-dlx' },
    });
    expect(okReply(m.apply({ type: 'clearPolicy', vhost: '/', name: 'DLX' }, META)).removed).toBe(true);
    expect(m.policies('/').map((p) => p.name)).toEqual(['TTL']);
  });

  it('answers 404 for a missing policy or vhost', () => {
    const m = fresh();
    const missing = errReply(m.apply({ type: 'clearPolicy', vhost: '/', name: 'nope' }, META));
    expect(missing).toMatchObject({ code: 404, text: "no policy 'nope' in vhost '/'" });
    expect(errReply(m.apply(policy('p', { vhost: 'other' }), META)).code).toBe(404);
    expect(errReply(m.apply({ type: 'clearPolicy', vhost: 'other', name: 'p' }, META)).code).toBe(404);
  });

  it('accepts every known key with a value of the right type', () => {
    const m = fresh();
    const definition = {
      'dead-letter-exchange': '',
      'dead-letter-routing-key': 'dead',
      'dead-letter-strategy': 'at-least-once',
      'message-ttl': 0,
      expires: 1,
      'max-length': 10,
      'max-length-bytes': 1024,
      overflow: 'reject-publish-dlx',
      'delivery-limit': 3,
    };
    okReply(m.apply(policy('all-keys', { definition }), META));
    expect(m.policy('/', 'all-keys')?.definition).toEqual(definition);
    expect(Object.isFrozen(m.policy('/', 'all-keys')?.definition)).toBe(true);
  });

  it.each([
    [{}, 'no policy provided'],
    [{ 'dead-letter-exchnage': 'x' }, "'dead-letter-exchnage' is not a recognised policy setting"],
    [{ 'ha-mode': 'all', foo: 1 }, "'ha-mode', 'foo' are not recognised policy settings"],
    [{ 'dead-letter-exchange': 7 }, "'dead-letter-exchange' must be a string; got 7"],
    [{ 'dead-letter-routing-key': null }, "'dead-letter-routing-key' must be a string; got null"],
    [{ 'dead-letter-strategy': 'once' }, "'dead-letter-strategy' must be one of at-most-once, at-least-once"],
    [{ 'message-ttl': -1 }, "'message-ttl' must be a TTL in ms, an integer from 0 to 4294967295; got -1"],
    [
      { 'message-ttl': '1000' },
      '\'message-ttl\' must be a TTL in ms, an integer from 0 to 4294967295; got "1000"',
    ],
    [{ 'message-ttl': 4294967296 }, "'message-ttl' must be a TTL in ms"],
    [{ expires: 0 }, "'expires' must be an expiry in ms, an integer from 1 to 4294967295; got 0"],
    [{ 'max-length': 1.5 }, "'max-length' must be a message count"],
    [{ 'max-length-bytes': -5 }, "'max-length-bytes' must be a byte count"],
    [{ overflow: 'drop-tail' }, "'overflow' must be one of drop-head, reject-publish, reject-publish-dlx"],
    [{ 'delivery-limit': true }, "'delivery-limit' must be a delivery count"],
    [{ 'dead-letter-exchange': 'x'.repeat(256) }, 'is too long: 256 bytes in UTF-8, at most 255'],
  ])('refuses the definition %j with 406', (definition, text) => {
    const m = fresh();
    const reply = errReply(m.apply(policy('p', { definition }), META));
    expect(reply.code).toBe(406);
    expect(reply.text).toContain('Validation failed: ');
    expect(reply.text).toContain(text);
    expect(m.policies('/')).toEqual([]);
  });

  it('refuses a pattern that does not compile, an unknown apply-to, and bad names with 406', () => {
    const m = fresh();
    const badPattern = errReply(m.apply(policy('p', { pattern: '(' }), META));
    expect(badPattern.code).toBe(406);
    expect(badPattern.text).toContain("pattern '(' is not a valid regular expression");
    const badApplyTo = errReply(m.apply(policy('p', { applyTo: 'streams' }), META));
    expect(badApplyTo).toMatchObject({
      code: 406,
      text: "Validation failed: apply-to 'streams' is not one of queues, exchanges, all",
    });
    expect(errReply(m.apply(policy(''), META)).code).toBe(406);
    expect(errReply(m.apply(policy('n'.repeat(256)), META)).code).toBe(406);
    expect(m.policies('/')).toEqual([]);
  });

  it('refuses malformed commands (priority not an integer, definition not an object) with 503', () => {
    const m = fresh();
    for (const bad of [
      { ...policy('p'), priority: 1.5 },
      { ...policy('p'), priority: '1' },
      { ...policy('p'), definition: null },
      { ...policy('p'), definition: [] },
      { ...policy('p'), definition: 'x' },
      { ...policy('p'), pattern: 1 },
      { type: 'clearPolicy', vhost: '/' },
    ]) {
      expect(errReply(m.apply(bad as unknown as MetadataCommand, META)).code).toBe(503);
    }
    expect(m.policies('/')).toEqual([]);
  });

  it('accepts negative priorities', () => {
    const m = fresh();
    okReply(m.apply(policy('low', { priority: -10 }), META));
    expect(m.policyFor('/', 'queue', 'q')?.name).toBe('low');
  });

  it('deleting a vhost deletes its policies', () => {
    const m = fresh();
    okReply(m.apply({ type: 'addVhost', name: 'v' }, META));
    okReply(m.apply(policy('p', { vhost: 'v' }), META));
    okReply(m.apply({ type: 'deleteVhost', name: 'v' }, META));
    okReply(m.apply({ type: 'addVhost', name: 'v' }, META));
    expect(m.policies('v')).toEqual([]);
    expect(m.policyFor('v', 'queue', 'q')).toBeUndefined();
  });
});

describe('policyFor', () => {
  it('matches unanchored patterns against the name, within the vhost', () => {
    const m = fresh();
    okReply(m.apply({ type: 'addVhost', name: 'v' }, META));
    okReply(m.apply(policy('orders', { pattern: 'orders' }), META));
    expect(m.policyFor('/', 'queue', 'eu.orders.new')?.name).toBe('orders');
    expect(m.policyFor('/', 'queue', 'invoices')).toBeUndefined();
    expect(m.policyFor('v', 'queue', 'orders')).toBeUndefined();
    expect(m.policyFor('nope', 'queue', 'orders')).toBeUndefined();
  });

  it('honours apply-to', () => {
    const m = fresh();
    okReply(m.apply(policy('q', { pattern: '^q', applyTo: 'queues' }), META));
    okReply(m.apply(policy('x', { pattern: '^x', applyTo: 'exchanges' }), META));
    okReply(m.apply(policy('a', { pattern: '^a', applyTo: 'all' }), META));
    expect(m.policyFor('/', 'queue', 'q1')?.name).toBe('q');
    expect(m.policyFor('/', 'exchange', 'q1')).toBeUndefined();
    expect(m.policyFor('/', 'exchange', 'x1')?.name).toBe('x');
    expect(m.policyFor('/', 'queue', 'x1')).toBeUndefined();
    expect(m.policyFor('/', 'queue', 'a1')?.name).toBe('a');
    expect(m.policyFor('/', 'exchange', 'a1')?.name).toBe('a');
  });

  it('picks the highest priority, then the name that sorts first, whatever the creation order', () => {
    const m = fresh();
    okReply(m.apply(policy('zeta', { priority: 1 }), META));
    okReply(m.apply(policy('beta', { priority: 1 }), META));
    okReply(m.apply(policy('alpha', { priority: 0 }), META));
    okReply(m.apply(policy('narrow', { pattern: '^special$', priority: 5 }), META));
    expect(m.policyFor('/', 'queue', 'anything')?.name).toBe('beta');
    expect(m.policyFor('/', 'queue', 'special')?.name).toBe('narrow');
    okReply(m.apply({ type: 'clearPolicy', vhost: '/', name: 'beta' }, META));
    expect(m.policyFor('/', 'queue', 'anything')?.name).toBe('zeta');
  });

  it('sees a replaced policy at once (no stale compiled pattern)', () => {
    const m = fresh();
    okReply(m.apply(policy('p', { pattern: '^a' }), META));
    expect(m.policyFor('/', 'queue', 'abc')?.name).toBe('p');
    okReply(m.apply(policy('p', { pattern: '^b' }), META));
    expect(m.policyFor('/', 'queue', 'abc')).toBeUndefined();
    expect(m.policyFor('/', 'queue', 'bcd')?.name).toBe('p');
  });
});

describe('policies in snapshots and the log', () => {
  it('round-trips policies through a snapshot, byte for byte', () => {
    const m = fresh();
    okReply(m.apply({ type: 'addVhost', name: 'v' }, META));
    okReply(
      m.apply(
        policy('b', { priority: 2, definition: { 'message-ttl': 5, overflow: 'reject-publish' } }),
        META,
      ),
    );
    okReply(m.apply(policy('a', { vhost: 'v', applyTo: 'all', pattern: '^x' }), META));
    const bytes = m.snapshot();
    const r = new MetadataMachine();
    r.restore(bytes, META);
    expect(r.snapshot()).toEqual(bytes);
    expect(r.policies('/')).toEqual(m.policies('/'));
    expect(r.policies('v')).toEqual(m.policies('v'));
    expect(r.policyFor('v', 'exchange', 'xy')?.name).toBe('a');
  });

  it('restores a version 1 snapshot (before policies) with no policies', () => {
    const m = fresh();
    const v2 = JSON.parse(new TextDecoder().decode(m.snapshot())) as {
      version: number;
      vhosts: { policies?: unknown }[];
    };
    v2.version = 1;
    for (const vh of v2.vhosts) delete vh.policies;
    const r = new MetadataMachine();
    r.restore(new TextEncoder().encode(JSON.stringify(v2)), META);
    expect(r.vhosts()).toEqual(m.vhosts());
    expect(r.policies('/')).toEqual([]);
    okReply(r.apply(policy('p'), META));
    expect(r.policyFor('/', 'queue', 'q')?.name).toBe('p');
  });

  it('encodes and decodes policy commands', () => {
    for (const command of [
      policy('p', { priority: -3, definition: { 'dead-letter-exchange': '', 'delivery-limit': 2 } }),
      { type: 'clearPolicy', vhost: '/', name: 'p' } as const,
    ]) {
      expect(metadataCommandCodec.decode(metadataCommandCodec.encode(command))).toEqual(command);
    }
  });
});
