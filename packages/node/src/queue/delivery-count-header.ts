/**
 * `x-delivery-count`: how many times a message came back to its queue before this delivery (a
 * nack/reject with requeue, its channel closing or its connection lost, basic.recover), as RabbitMQ
 * quorum queues show it — 0 on the first delivery, a signed 64-bit integer ('l'), the headers table
 * then sorted by key (RabbitMQ's `rabbit_basic:add_header` → `set_table_value`: replace or add, then
 * sort; see the fixture `rabbitmq-3.10-x-death.json`, `as_received_from_q1`). Classic queues do not
 * add it, and a queue declared without `x-queue-type` is a classic queue in RabbitMQ (its default
 * type), so only queues declared `x-queue-type: quorum` show it.
 *
 * Only the delivered copy of the properties carries it: the stored message is never changed, so a
 * dead-lettered copy does not inherit it. Built per delivery: a properties object, one entries
 * array, and for counts of 16 and more one entry; the common small counts use shared entries.
 */
import type { BasicProperties, FieldEntry, FieldTable } from '@styx/client/wire';
import { BASIC_PROPERTY_NAMES, fieldValueKind, fieldValuePayload, tableGet } from '@styx/client/wire';
import { compareKeys } from '@styx/dlx';

/** The header's name. */
export const X_DELIVERY_COUNT_HEADER = 'x-delivery-count';

/** Shared entries for counts 0..15 (frozen: they are only ever read). */
const SMALL_COUNT_ENTRIES: readonly FieldEntry[] = Array.from({ length: 16 }, (_, count) =>
  Object.freeze({
    key: X_DELIVERY_COUNT_HEADER,
    value: Object.freeze({ i64: count }) as FieldEntry['value'],
  }),
);

const OTHER_PROPERTIES = BASIC_PROPERTY_NAMES.filter((name) => name !== 'headers');

function byKey(a: FieldEntry, b: FieldEntry): number {
  return compareKeys(a.key, b.key);
}

/** `properties` with `x-delivery-count: deliveryCount` set (see the module comment); the input is not changed. */
export function withDeliveryCount(properties: BasicProperties, deliveryCount: number): BasicProperties {
  const entry: FieldEntry =
    deliveryCount < SMALL_COUNT_ENTRIES.length
      ? (SMALL_COUNT_ENTRIES[deliveryCount] as FieldEntry)
      : { key: X_DELIVERY_COUNT_HEADER, value: { i64: deliveryCount } };
  const entries = properties.headers?.entries;
  let headers: FieldEntry[];
  if (entries === undefined || entries.length === 0) {
    headers = [entry];
  } else {
    headers = entries.slice();
    // keystore: the first entry with the key is replaced in place, else the entry is appended.
    const at = headers.findIndex((e) => e.key === X_DELIVERY_COUNT_HEADER);
    if (at < 0) headers.push(entry);
    else headers[at] = entry;
    // Stable, and nearly sorted input is the common case: O(n).
    headers.sort(byKey);
  }
  const out: BasicProperties = { headers: { entries: headers } };
  const target = out as Record<string, unknown>;
  for (const name of OTHER_PROPERTIES) {
    const value = properties[name];
    if (value != null) target[name] = value;
  }
  return out;
}

/**
 * Whether a queue declared with `args` shows `x-delivery-count`: only one declared
 * `x-queue-type: quorum`, as in RabbitMQ. Every Styx queue is replicated and counts deliveries
 * (so `x-delivery-limit` works on all of them), but what consumers see follows the declared type,
 * and RabbitMQ's default type is classic: an application written against RabbitMQ that declares
 * no type must not find a header it never had.
 */
export function showsDeliveryCount(args: FieldTable | null | undefined): boolean {
  const type = tableGet(args, 'x-queue-type');
  if (type === undefined) return false;
  const kind = fieldValueKind(type);
  if (kind !== 'longStr' && kind !== 'shortStr') return false;
  return fieldValuePayload(type, kind) === 'quorum';
}
