/**
 * Policy definitions: the keys Styx knows, the values each accepts, and validation of a definition
 * as received (JSON from the management API, or out of the log).
 *
 * RabbitMQ refuses a definition with an unknown key or a bad value as a whole ("Validation
 * failed"), and so does Styx: a typo in a key must not silently leave a queue without its DLX.
 * Bounds match the queue arguments (queue-arguments.ts): `message-ttl` 0..2^32-1 ms, `expires`
 * 1..2^32-1 ms, `consumer-disconnected-timeout` 0..2^32-1 ms, lengths and the delivery limit any
 * non-negative safe integer.
 */
import { ReplyCode } from '@styx/client/wire';
import { checkLength } from './names.ts';
import { MAX_EXPIRY_MS } from './queue-arguments.ts';
import { error } from './replies.ts';
import type { MetadataError, PolicyDefinition } from './types.ts';

type KeySpec =
  | { readonly kind: 'integer'; readonly min: number; readonly max: number; readonly what: string }
  | { readonly kind: 'choice'; readonly choices: readonly string[] }
  | { readonly kind: 'name' };

/** Every policy key Styx implements, with the values it accepts. */
const KEY_SPECS: Readonly<Record<keyof PolicyDefinition, KeySpec>> = {
  'dead-letter-exchange': { kind: 'name' },
  'dead-letter-routing-key': { kind: 'name' },
  'dead-letter-strategy': { kind: 'choice', choices: ['at-most-once', 'at-least-once'] },
  'message-ttl': { kind: 'integer', min: 0, max: MAX_EXPIRY_MS, what: 'a TTL in ms' },
  expires: { kind: 'integer', min: 1, max: MAX_EXPIRY_MS, what: 'an expiry in ms' },
  'max-length': { kind: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER, what: 'a message count' },
  'max-length-bytes': { kind: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER, what: 'a byte count' },
  overflow: { kind: 'choice', choices: ['drop-head', 'reject-publish', 'reject-publish-dlx'] },
  'delivery-limit': { kind: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER, what: 'a delivery count' },
  'consumer-disconnected-timeout': { kind: 'integer', min: 0, max: MAX_EXPIRY_MS, what: 'a timeout in ms' },
};

/** The policy keys Styx accepts, in a stable order (for messages and help text). */
export const POLICY_KEYS: readonly (keyof PolicyDefinition)[] = Object.keys(
  KEY_SPECS,
) as (keyof PolicyDefinition)[];

function isPolicyKey(key: string): key is keyof PolicyDefinition {
  return Object.hasOwn(KEY_SPECS, key);
}

function refused(problem: string): MetadataError {
  return error(ReplyCode.PRECONDITION_FAILED, `Validation failed: ${problem}`);
}

/** The reason `value` does not fit `spec`, or undefined when it does. */
function valueProblem(key: string, spec: KeySpec, value: unknown): string | undefined {
  const shown = JSON.stringify(value) ?? String(value);
  switch (spec.kind) {
    case 'integer':
      if (
        typeof value === 'number' &&
        Number.isSafeInteger(value) &&
        value >= spec.min &&
        value <= spec.max
      ) {
        return undefined;
      }
      return `'${key}' must be ${spec.what}, an integer from ${spec.min} to ${spec.max}; got ${shown}`;
    case 'choice':
      if (typeof value === 'string' && spec.choices.includes(value)) return undefined;
      return `'${key}' must be one of ${spec.choices.join(', ')}; got ${shown}`;
    case 'name': {
      if (typeof value !== 'string') return `'${key}' must be a string; got ${shown}`;
      return checkLength(`'${key}'`, value)?.text;
    }
  }
}

/**
 * A validated, frozen copy of `definition` (keys in the order given, so every replica stores and
 * snapshots the same bytes), or the 406 error that refuses it.
 */
export function validatePolicyDefinition(
  definition: Readonly<Record<string, unknown>>,
): PolicyDefinition | MetadataError {
  const keys = Object.keys(definition);
  if (keys.length === 0) return refused('no policy provided: the definition is empty');
  const unknown = keys.filter((k) => !isPolicyKey(k));
  if (unknown.length > 0) {
    const list = unknown.map((k) => `'${k}'`).join(', ');
    return refused(
      `${list} ${unknown.length === 1 ? 'is not a' : 'are not'} recognised policy setting${
        unknown.length === 1 ? '' : 's'
      } (Styx knows ${POLICY_KEYS.join(', ')})`,
    );
  }
  const copy: Record<string, unknown> = {};
  for (const key of keys as (keyof PolicyDefinition)[]) {
    const value = definition[key];
    const problem = valueProblem(key, KEY_SPECS[key], value);
    if (problem !== undefined) return refused(problem);
    copy[key] = value;
  }
  return Object.freeze(copy) as PolicyDefinition;
}
