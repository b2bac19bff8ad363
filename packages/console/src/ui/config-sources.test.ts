import { describe, expect, it } from 'vitest';
import { badgeSettings, configSettings } from './config-sources.ts';
import type { EffectiveConfig, QueueInfo } from './model.ts';

const NO_CONFIG: EffectiveConfig = {
  message_ttl: null,
  expires: null,
  max_length: null,
  max_length_bytes: null,
  overflow: 'drop-head',
  delivery_limit: null,
  dead_letter_exchange: null,
  dead_letter_routing_key: null,
  dead_letter_strategy: 'at-least-once',
};

function queue(
  config: Partial<EffectiveConfig>,
  args: Record<string, unknown>,
  policy: Record<string, unknown> | null,
): QueueInfo {
  return {
    effective_config: { ...NO_CONFIG, ...config },
    arguments: args,
    effective_policy_definition: policy ?? {},
    policy: policy === null ? null : 'P',
  } as unknown as QueueInfo;
}

function sources(q: QueueInfo): Record<string, string> {
  return Object.fromEntries(configSettings(q).map((s) => [s.label, s.source]));
}

describe('where a queue setting comes from', () => {
  it("attributes the node's effective value to the argument or the policy holding it", () => {
    // The guide's worked example: TTL 60000 by argument, 5000 by policy: the smaller (policy) wins;
    // overflow by both: the argument wins; DLX by the policy only.
    const q = queue(
      { message_ttl: 5000, overflow: 'reject-publish', dead_letter_exchange: 'dlx' },
      { 'x-message-ttl': 60000, 'x-overflow': 'reject-publish' },
      { 'message-ttl': 5000, overflow: 'drop-head', 'dead-letter-exchange': 'dlx' },
    );
    expect(sources(q)).toMatchObject({ TTL: 'policy', overflow: 'argument', DLX: 'policy', DLK: 'default' });
    const ttl = configSettings(q).find((s) => s.label === 'TTL');
    expect(ttl).toMatchObject({ value: 5000, argument: 60000, policyValue: 5000 });
  });

  it('prefers the argument when both hold the value in force', () => {
    const q = queue({ max_length: 10 }, { 'x-max-length': 10 }, { 'max-length': 10 });
    expect(sources(q)['max-length']).toBe('argument');
  });

  it('badges what an argument or policy set, and the strategy of a queue that dead-letters', () => {
    const plain = queue({}, {}, null);
    expect(badgeSettings(plain)).toEqual([]);
    const dlx = queue({ dead_letter_exchange: 'my-dlx' }, {}, { 'dead-letter-exchange': 'my-dlx' });
    expect(badgeSettings(dlx).map((s) => `${s.label}:${s.source}`)).toEqual([
      'DLX:policy',
      'strategy:default',
    ]);
  });
});
