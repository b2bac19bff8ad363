import type { FieldTable, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import { consumerDisconnectedTimeoutMs } from './effective-config.ts';
import { validatePolicyDefinition } from './policy-definition.ts';
import { DEFAULT_CONSUMER_DISCONNECTED_TIMEOUT_MS, queueConfigFromArguments } from './queue-arguments.ts';
import type { PolicyDefinition, PolicyRecord } from './types.ts';

const KEY = 'x-consumer-disconnected-timeout';

function table(entries: Record<string, FieldValue>): FieldTable {
  return { entries: Object.entries(entries).map(([key, value]) => ({ key, value })) };
}

function policy(definition: PolicyDefinition): PolicyRecord {
  return { vhost: '/', name: 'P', pattern: '.*', applyTo: 'queues', priority: 0, definition };
}

function declared(value: FieldValue): { ok: boolean; code?: number; text?: string } {
  const r = queueConfigFromArguments(table({ [KEY]: value }), true, { vhost: '/', name: 'q' });
  return r.ok ? { ok: true } : { ok: false, code: r.code, text: r.text };
}

describe('the consumer-disconnected timeout (RabbitMQ 4.3 names)', () => {
  it('defaults to 60 s', () => {
    expect(DEFAULT_CONSUMER_DISCONNECTED_TIMEOUT_MS).toBe(60_000);
    expect(consumerDisconnectedTimeoutMs({ arguments: table({}) }, undefined)).toBe(60_000);
  });

  it('accepts x-consumer-disconnected-timeout as milliseconds, 0 to 2^32-1, any integer width', () => {
    for (const value of [{ i32: 0 }, { i32: 5_000 }, { u8: 1 }, { i64: 4_294_967_295 }] as FieldValue[])
      expect(declared(value)).toEqual({ ok: true });
  });

  it('refuses a bad argument with 406 PRECONDITION_FAILED naming it', () => {
    expect(declared({ i32: -1 })).toEqual({
      ok: false,
      code: 406,
      text: `invalid arg '${KEY}' for queue 'q' in vhost '/': {value_negative,-1}`,
    });
    expect(declared({ longStr: '5000' }).text).toContain('{unacceptable_type,longstr}');
    expect(declared({ i64: 2 ** 33 }).text).toContain('{value_too_large,8589934592,4294967295}');
    expect(declared({ f64: 1.5 }).code).toBe(406);
  });

  it('takes the policy key consumer-disconnected-timeout, refusing bad values with 406', () => {
    expect(validatePolicyDefinition({ 'consumer-disconnected-timeout': 5_000 })).toEqual({
      'consumer-disconnected-timeout': 5_000,
    });
    for (const bad of [-1, 1.5, '5000', 2 ** 32, true]) {
      const refused = validatePolicyDefinition({ 'consumer-disconnected-timeout': bad });
      expect(refused).toMatchObject({ type: 'error', code: 406 });
      expect((refused as { text: string }).text).toContain(
        "'consumer-disconnected-timeout' must be a timeout in ms, an integer from 0 to 4294967295",
      );
    }
  });

  it('the argument wins over the policy; the policy over the default', () => {
    const byPolicy = policy({ 'consumer-disconnected-timeout': 30_000 });
    expect(consumerDisconnectedTimeoutMs({ arguments: table({}) }, byPolicy)).toBe(30_000);
    expect(consumerDisconnectedTimeoutMs({ arguments: table({ [KEY]: { i32: 90_000 } }) }, byPolicy)).toBe(
      90_000,
    );
    expect(consumerDisconnectedTimeoutMs({ arguments: table({ [KEY]: { i32: 5_000 } }) }, byPolicy)).toBe(
      5_000,
    );
    expect(consumerDisconnectedTimeoutMs({ arguments: table({}) }, policy({ 'message-ttl': 5 }))).toBe(
      60_000,
    );
  });
});
