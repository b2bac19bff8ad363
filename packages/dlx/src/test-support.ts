/**
 * Helpers shared by this package's tests (not exported by the package): a typed, order-preserving
 * view of field tables in the fixture's notation, and a message builder.
 */
import type { BasicProperties, FieldTable, FieldValue } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload } from '@styx/client/wire';
import type { DeadLetterMessage } from './dead-letter-copy.ts';

/** A field value in the fixture's notation: AMQP type tag + value (tables and arrays nested). */
export interface Typed {
  t: string;
  v: unknown;
}

/** AMQP 0-9-1 field type tags as RabbitMQ writes them; other kinds show their own name. */
const TAGS: Partial<Record<string, string>> = {
  i8: 'b',
  u8: 'B',
  i16: 's',
  u16: 'u',
  i32: 'I',
  u32: 'i',
  i64: 'l',
  f32: 'f',
  f64: 'd',
  decimal: 'D',
  longStr: 'S',
  bool: 't',
  timestamp: 'T',
  array: 'A',
  table: 'F',
  byteArray: 'x',
  void: 'V',
};

/** `v` in the fixture's notation. */
export function typedValue(v: FieldValue): Typed {
  const kind = fieldValueKind(v);
  if (kind === undefined) throw new Error('field value without a member');
  if (kind === 'array') return { t: 'A', v: (fieldValuePayload(v, 'array').values ?? []).map(typedValue) };
  if (kind === 'table') return { t: 'F', v: typedTable(fieldValuePayload(v, 'table')) };
  return { t: TAGS[kind] ?? kind, v: fieldValuePayload(v, kind) };
}

/** A table in the fixture's notation; key order is the table's (JSON.stringify shows it). */
export function typedTable(table: FieldTable | null | undefined): Record<string, Typed> {
  const out: Record<string, Typed> = {};
  for (const e of table?.entries ?? []) out[e.key] = typedValue(e.value);
  return out;
}

/** The fixture's notation back to wire values (S, l, b, T, A, F: the tags the fixture uses). */
export function fromTyped({ t, v }: Typed): FieldValue {
  switch (t) {
    case 'S':
      return { longStr: v as string };
    case 'l':
      return { i64: v as number };
    case 'b':
      return { i8: v as number };
    case 'T':
      return { timestamp: v as number };
    case 'A':
      return { array: { values: (v as Typed[]).map(fromTyped) } };
    case 'F':
      return { table: tableFromTyped(v as Record<string, Typed>) };
    default:
      throw new Error(`fixture tag ${t} not handled`);
  }
}

export function tableFromTyped(obj: Record<string, Typed>): FieldTable {
  return { entries: Object.entries(obj).map(([key, value]) => ({ key, value: fromTyped(value) })) };
}

/** A long-string array value, as CC/BCC headers carry routing keys. */
export function keysValue(...keys: string[]): FieldValue {
  return { array: { values: keys.map((k) => ({ longStr: k })) } };
}

/** A message published to `exchange` with `routingKey`, optional headers/properties/BCC keys. */
export function message(
  init: {
    exchange?: string;
    routingKey?: string;
    headers?: Record<string, FieldValue>;
    properties?: BasicProperties;
    bcc?: string[];
    body?: string;
  } = {},
): DeadLetterMessage {
  const headers = init.headers
    ? { entries: Object.entries(init.headers).map(([key, value]) => ({ key, value })) }
    : undefined;
  return {
    exchange: init.exchange ?? 'ex',
    routingKey: init.routingKey ?? 'rk',
    properties: { contentType: 'text/plain', ...init.properties, ...(headers ? { headers } : {}) },
    body: new TextEncoder().encode(init.body ?? 'body'),
    bcc: init.bcc,
  };
}
