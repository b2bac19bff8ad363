import type { FieldValue } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload } from '@styx/client/wire';

/** Sender-selected distribution header: extra routing keys, visible to consumers. */
export const CC_HEADER = 'CC';
/** Sender-selected distribution header: extra routing keys, never shown to consumers. */
export const BCC_HEADER = 'BCC';

const NO_KEYS: readonly string[] = Object.freeze([]);

/**
 * The routing keys a `CC` or `BCC` header value carries: an array of strings (RabbitMQ's form; long
 * or short strings) or a single string (accepted by Styx's router too). Other types, and non-string
 * array elements, carry no key — the same reading as the node's sender routing, so the keys recorded
 * in `x-death` are the keys the message was routed on.
 */
export function routingKeysOfHeader(value: FieldValue | undefined): readonly string[] {
  if (value === undefined) return NO_KEYS;
  const kind = fieldValueKind(value);
  if (kind === 'longStr' || kind === 'shortStr') return [fieldValuePayload(value, kind)];
  if (kind !== 'array') return NO_KEYS;
  const values = fieldValuePayload(value, 'array').values ?? [];
  const keys: string[] = [];
  for (const v of values) {
    const k = fieldValueKind(v);
    if (k === 'longStr' || k === 'shortStr') keys.push(fieldValuePayload(v, k));
  }
  return keys;
}
