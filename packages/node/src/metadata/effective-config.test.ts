import type { FieldTable, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { QueueConfig } from '../queue/types.ts';
import { effectiveQueueConfig, StoredQueueArgumentsError, sameQueueConfig } from './effective-config.ts';
import type { PolicyDefinition, PolicyRecord, QueueRecord } from './types.ts';

function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

function queue(args: Record<string, FieldValue> = {}, durable = true): QueueRecord {
  return {
    vhost: '/',
    name: 'q',
    durable,
    exclusiveOwner: undefined,
    autoDelete: false,
    arguments: table(args),
    groupId: 'g',
  };
}

function policy(definition: PolicyDefinition, name = 'P'): PolicyRecord {
  return { vhost: '/', name, pattern: '.*', applyTo: 'queues', priority: 0, definition };
}

function effective(args: Record<string, FieldValue>, definition?: PolicyDefinition): QueueConfig {
  return effectiveQueueConfig(queue(args), definition === undefined ? undefined : policy(definition)).config;
}

describe('effectiveQueueConfig', () => {
  it('without a policy is the arguments alone, with no policy name', () => {
    const result = effectiveQueueConfig(queue({ 'x-message-ttl': { i32: 10 } }), undefined);
    expect(result.policyName).toBeUndefined();
    expect(result.config).toEqual({
      messageTtl: 10,
      expires: undefined,
      maxLength: undefined,
      maxLengthBytes: undefined,
      overflow: 'drop-head',
      deliveryLimit: undefined,
      deadLetterExchange: undefined,
      deadLetterRoutingKey: undefined,
      deadLetterStrategy: 'at-least-once',
    });
  });

  it('names the policy even when the arguments override all of it', () => {
    const result = effectiveQueueConfig(
      queue({ 'x-dead-letter-exchange': { longStr: 'mine' } }),
      policy({ 'dead-letter-exchange': 'theirs' }, 'DLX'),
    );
    expect(result.policyName).toBe('DLX');
    expect(result.config.deadLetterExchange).toBe('mine');
  });

  // The limits: the smaller of argument and policy; either alone applies.
  it.each([
    ['x-message-ttl', 'message-ttl', 'messageTtl'],
    ['x-expires', 'expires', 'expires'],
    ['x-max-length', 'max-length', 'maxLength'],
    ['x-max-length-bytes', 'max-length-bytes', 'maxLengthBytes'],
    ['x-delivery-limit', 'delivery-limit', 'deliveryLimit'],
  ] as const)('%s / %s: the smaller of the two wins', (argKey, policyKey, field) => {
    expect(effective({}, { [policyKey]: 500 })[field]).toBe(500);
    expect(effective({ [argKey]: { i32: 700 } }, {})[field]).toBe(700);
    expect(effective({ [argKey]: { i32: 700 } }, { [policyKey]: 500 })[field]).toBe(500);
    expect(effective({ [argKey]: { i64: 300 } }, { [policyKey]: 500 })[field]).toBe(300);
    expect(effective({}, { 'dead-letter-exchange': 'x' })[field]).toBeUndefined();
  });

  it('message-ttl 0 from either side is smaller than any other TTL', () => {
    expect(effective({ 'x-message-ttl': { i32: 0 } }, { 'message-ttl': 100 }).messageTtl).toBe(0);
    expect(effective({ 'x-message-ttl': { i32: 100 } }, { 'message-ttl': 0 }).messageTtl).toBe(0);
  });

  // The choices: the argument wins whenever it was declared.
  it.each([
    ['x-dead-letter-exchange', 'dead-letter-exchange', 'deadLetterExchange', 'arg-dlx', 'policy-dlx'],
    ['x-overflow', 'overflow', 'overflow', 'reject-publish', 'reject-publish-dlx'],
    ['x-dead-letter-strategy', 'dead-letter-strategy', 'deadLetterStrategy', 'at-most-once', 'at-least-once'],
  ] as const)('%s / %s: the argument wins', (argKey, policyKey, field, argValue, policyValue) => {
    expect(effective({}, { [policyKey]: policyValue })[field]).toBe(policyValue);
    expect(effective({ [argKey]: { longStr: argValue } }, { [policyKey]: policyValue })[field]).toBe(
      argValue,
    );
  });

  it('x-dead-letter-routing-key / dead-letter-routing-key: the argument wins, each key decided alone', () => {
    const dlx = { 'x-dead-letter-exchange': { longStr: 'a' } };
    expect(effective(dlx, { 'dead-letter-routing-key': 'pk' }).deadLetterRoutingKey).toBe('pk');
    expect(
      effective(
        { ...dlx, 'x-dead-letter-routing-key': { longStr: 'ak' } },
        { 'dead-letter-routing-key': 'pk' },
      ).deadLetterRoutingKey,
    ).toBe('ak');
    // Argument DLX, policy DLX and DLK: the DLX from the argument, the routing key from the policy.
    const mixed = effective(dlx, { 'dead-letter-exchange': 'b', 'dead-letter-routing-key': 'pk' });
    expect([mixed.deadLetterExchange, mixed.deadLetterRoutingKey]).toEqual(['a', 'pk']);
  });

  it("the empty string is a DLX (the default exchange): a declared '' still wins over a policy", () => {
    expect(
      effective({ 'x-dead-letter-exchange': { longStr: '' } }, { 'dead-letter-exchange': 'p' }),
    ).toMatchObject({
      deadLetterExchange: '',
    });
    expect(effective({}, { 'dead-letter-exchange': '' }).deadLetterExchange).toBe('');
  });

  it('a declared default still counts as declared (x-overflow drop-head beats the policy)', () => {
    expect(
      effective({ 'x-overflow': { longStr: 'drop-head' } }, { overflow: 'reject-publish' }).overflow,
    ).toBe('drop-head');
  });

  it('keeps the durable-dependent default strategy unless a side sets it', () => {
    const transient = effectiveQueueConfig(queue({}, false), policy({ 'message-ttl': 1 }));
    expect(transient.config.deadLetterStrategy).toBe('at-most-once');
    const durable = effectiveQueueConfig(queue({}, true), policy({ 'message-ttl': 1 }));
    expect(durable.config.deadLetterStrategy).toBe('at-least-once');
    const set = effectiveQueueConfig(queue({}, false), policy({ 'dead-letter-strategy': 'at-least-once' }));
    expect(set.config.deadLetterStrategy).toBe('at-least-once');
  });

  it('applies the worked example of the module comment', () => {
    expect(
      effective(
        { 'x-message-ttl': { i32: 60000 }, 'x-overflow': { longStr: 'reject-publish' } },
        { 'message-ttl': 5000, overflow: 'drop-head', 'dead-letter-exchange': 'dlx' },
      ),
    ).toMatchObject({ messageTtl: 5000, overflow: 'reject-publish', deadLetterExchange: 'dlx' });
  });

  it('throws StoredQueueArgumentsError for stored arguments that fail validation (corrupt state)', () => {
    expect(() => effectiveQueueConfig(queue({ 'x-message-ttl': { longStr: 'soon' } }), undefined)).toThrow(
      StoredQueueArgumentsError,
    );
  });
});

describe('sameQueueConfig', () => {
  it('compares every field', () => {
    const base = effective({});
    expect(sameQueueConfig(base, { ...base })).toBe(true);
    const changes: Partial<QueueConfig>[] = [
      { messageTtl: 1 },
      { expires: 1 },
      { maxLength: 1 },
      { maxLengthBytes: 1 },
      { overflow: 'reject-publish' },
      { deliveryLimit: 1 },
      { deadLetterExchange: '' },
      { deadLetterRoutingKey: 'k' },
      { deadLetterStrategy: 'at-most-once' },
    ];
    for (const change of changes) expect(sameQueueConfig(base, { ...base, ...change })).toBe(false);
  });
});
