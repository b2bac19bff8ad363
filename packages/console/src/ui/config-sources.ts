// Where each setting of a queue's effective configuration comes from: its declare argument, the
// policy that applies, or the default. The node decides the effective value (its precedence rules:
// limits take the smaller, choices the argument); this only attributes the value it reports to
// the source that holds the same value, so the console never re-implements those rules.
import type { EffectiveConfig, QueueInfo } from './model.ts';

export type ConfigSource = 'argument' | 'policy' | 'default';

export interface ConfigSetting {
  /** Short name for a badge: 'DLX', 'TTL', ... */
  readonly label: string;
  /** What it is, for people: 'dead-letter exchange'. */
  readonly title: string;
  readonly value: string | number | null;
  readonly source: ConfigSource;
  /** The declare argument's value and the policy's, where set (the argument vs policy view). */
  readonly argument: unknown;
  readonly policyValue: unknown;
  /** Whether it is one of the limits (max length, TTL, ...) rather than a dead-lettering choice. */
  readonly limit: boolean;
}

interface Spec {
  readonly key: keyof EffectiveConfig;
  readonly argument: string;
  readonly policyKey: string;
  readonly label: string;
  readonly title: string;
  readonly limit: boolean;
}

const SPECS: readonly Spec[] = [
  {
    key: 'dead_letter_exchange',
    argument: 'x-dead-letter-exchange',
    policyKey: 'dead-letter-exchange',
    label: 'DLX',
    title: 'dead-letter exchange',
    limit: false,
  },
  {
    key: 'dead_letter_routing_key',
    argument: 'x-dead-letter-routing-key',
    policyKey: 'dead-letter-routing-key',
    label: 'DLK',
    title: 'dead-letter routing key',
    limit: false,
  },
  {
    key: 'dead_letter_strategy',
    argument: 'x-dead-letter-strategy',
    policyKey: 'dead-letter-strategy',
    label: 'strategy',
    title: 'dead-letter strategy',
    limit: false,
  },
  {
    key: 'message_ttl',
    argument: 'x-message-ttl',
    policyKey: 'message-ttl',
    label: 'TTL',
    title: 'message TTL (ms)',
    limit: true,
  },
  {
    key: 'expires',
    argument: 'x-expires',
    policyKey: 'expires',
    label: 'expires',
    title: 'queue expiry (ms unused)',
    limit: true,
  },
  {
    key: 'max_length',
    argument: 'x-max-length',
    policyKey: 'max-length',
    label: 'max-length',
    title: 'maximum messages',
    limit: true,
  },
  {
    key: 'max_length_bytes',
    argument: 'x-max-length-bytes',
    policyKey: 'max-length-bytes',
    label: 'max-bytes',
    title: 'maximum body bytes',
    limit: true,
  },
  {
    key: 'overflow',
    argument: 'x-overflow',
    policyKey: 'overflow',
    label: 'overflow',
    title: 'overflow behaviour',
    limit: true,
  },
  {
    key: 'delivery_limit',
    argument: 'x-delivery-limit',
    policyKey: 'delivery-limit',
    label: 'delivery-limit',
    title: 'delivery limit',
    limit: true,
  },
];

/** Every setting of the queue's effective configuration, with its source. */
export function configSettings(q: QueueInfo): ConfigSetting[] {
  return SPECS.map((spec) => {
    const value = q.effective_config[spec.key];
    const argument = q.arguments[spec.argument];
    const policyValue = q.effective_policy_definition[spec.policyKey];
    const source: ConfigSource =
      argument !== undefined && argument === value
        ? 'argument'
        : policyValue !== undefined && policyValue === value
          ? 'policy'
          : 'default';
    return { label: spec.label, title: spec.title, value, source, argument, policyValue, limit: spec.limit };
  });
}

/**
 * The settings worth a badge in a list: those an argument or a policy set, and the strategy of a
 * queue that dead-letters (at-most-once can lose a message; an operator wants to see which).
 */
export function badgeSettings(q: QueueInfo): ConfigSetting[] {
  const deadLetters = q.effective_config.dead_letter_exchange !== null;
  return configSettings(q).filter(
    (s) => (s.value !== null && s.source !== 'default') || (s.label === 'strategy' && deadLetters),
  );
}
