import type { BasicProperties, FieldValue } from '@styx/client/wire';

/**
 * Sender-selected distribution (RabbitMQ's `CC` and `BCC` headers): extra routing keys given by the
 * publisher. Both add keys to route on; `BCC` is then removed from the message so no consumer sees
 * it, but its keys are kept beside the stored message (dead-lettering without a dead-letter routing
 * key routes on every original key, BCC included).
 */
export interface SenderRouting {
  /** CC keys then BCC keys; undefined when the message has neither header. */
  readonly keys: string[] | undefined;
  /** BCC keys; undefined when there is no BCC header. */
  readonly bcc: string[] | undefined;
  /** The properties to store and deliver: the input, or a copy without the BCC header. */
  readonly properties: BasicProperties;
}

const NONE = { keys: undefined, bcc: undefined };

/** Read CC/BCC from the headers. Returns the input properties untouched when neither is present. */
export function extractSenderRouting(properties: BasicProperties): SenderRouting {
  const entries = properties.headers?.entries;
  if (entries === undefined || entries.length === 0) return { ...NONE, properties };
  let cc: string[] | undefined;
  let bcc: string[] | undefined;
  let bccIndex = -1;
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    if (entry === undefined) continue;
    if (entry.key === 'CC') cc = routingKeysOf(entry.value);
    else if (entry.key === 'BCC') {
      bcc = routingKeysOf(entry.value);
      bccIndex = i;
    }
  }
  if (cc === undefined && bcc === undefined) return { ...NONE, properties };
  const keys = cc === undefined ? (bcc as string[]) : bcc === undefined ? cc : [...cc, ...bcc];
  if (bccIndex < 0) return { keys, bcc: undefined, properties };
  const headers = { entries: entries.filter((_, i) => i !== bccIndex) };
  return { keys, bcc, properties: { ...properties, headers } };
}

/** A CC/BCC value: an array of strings (RabbitMQ's form) or a single string. Other types route nowhere. */
function routingKeysOf(value: FieldValue): string[] {
  if (value.array != null) {
    const keys: string[] = [];
    for (const v of value.array.values ?? []) {
      const s = v.longStr ?? v.shortStr;
      if (s != null) keys.push(s);
    }
    return keys;
  }
  const s = value.longStr ?? value.shortStr;
  return s != null ? [s] : [];
}
