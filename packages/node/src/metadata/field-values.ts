/**
 * Field-table helpers the metadata store needs beyond `@styx/client/wire`'s: copying tables into
 * plain objects before they enter the state, RabbitMQ's type names for messages, declare-argument
 * equivalence, and a canonical key for binding identity.
 */

import type { FieldTable, FieldValue, FieldValueKind } from '@styx/client/wire';
import { fieldValueEquals, fieldValueKind, fieldValuePayload } from '@styx/client/wire';

/**
 * A deep copy of `table` made of plain objects: decoded protobuf instances (prototype defaults,
 * Buffers viewing a whole frame batch) become `{ key, value: { kind: payload } }` objects and
 * standalone Uint8Arrays, so the state holds no reference into a network buffer and snapshots
 * see exactly one member per value. Undefined when a value carries no type member (malformed).
 */
export function plainTable(table: FieldTable | null | undefined): FieldTable | undefined {
  const entries = table?.entries ?? [];
  const out: FieldTable['entries'] = [];
  for (const e of entries) {
    const value = plainValue(e.value);
    if (value === undefined || typeof e.key !== 'string') return undefined;
    out.push({ key: e.key, value });
  }
  return { entries: out };
}

function plainValue(v: FieldValue | null | undefined): FieldValue | undefined {
  if (v == null) return undefined;
  const kind = fieldValueKind(v);
  if (kind === undefined) return undefined;
  switch (kind) {
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return { decimal: { scale: d.scale, value: d.value } };
    }
    case 'byteArray':
      return { byteArray: Uint8Array.from(fieldValuePayload(v, kind)) };
    case 'void':
      return { void: {} };
    case 'array': {
      const values: FieldValue[] = [];
      for (const item of fieldValuePayload(v, kind).values ?? []) {
        const copy = plainValue(item);
        if (copy === undefined) return undefined;
        values.push(copy);
      }
      return { array: { values } };
    }
    case 'table': {
      const table = plainTable(fieldValuePayload(v, kind));
      return table === undefined ? undefined : { table };
    }
    default:
      return { [kind]: fieldValuePayload(v, kind) } as unknown as FieldValue;
  }
}

/** RabbitMQ's names for the AMQP types, as its error messages print them. */
const TYPE_NAMES: Record<FieldValueKind, string> = {
  i8: 'byte',
  u8: 'unsignedbyte',
  i16: 'short',
  u16: 'unsignedshort',
  i32: 'signedint',
  u32: 'unsignedint',
  i64: 'long',
  // No 0-9-1 type; named in RabbitMQ's style.
  u64: 'unsignedlong',
  f32: 'float',
  f64: 'double',
  decimal: 'decimal',
  shortStr: 'shortstr',
  longStr: 'longstr',
  bool: 'bool',
  timestamp: 'timestamp',
  array: 'array',
  table: 'table',
  byteArray: 'bytearray',
  void: 'void',
};

export function typeName(v: FieldValue): string {
  const kind = fieldValueKind(v);
  return kind === undefined ? 'unknown' : TYPE_NAMES[kind];
}

/** A value printed the way RabbitMQ's messages print an Erlang term (strings bare). */
export function valueText(v: FieldValue): string {
  const kind = fieldValueKind(v);
  if (kind === undefined) return 'undefined';
  switch (kind) {
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return `{${d.scale},${d.value}}`;
    }
    case 'byteArray':
      return `<<${Array.from(fieldValuePayload(v, kind)).join(',')}>>`;
    case 'void':
      return 'undefined';
    case 'array':
      return `[${fieldValuePayload(v, kind).values.map(valueText).join(',')}]`;
    case 'table':
      return `[${fieldValuePayload(v, kind)
        .entries.map((e) => `{${e.key},${typeName(e.value)},${valueText(e.value)}}`)
        .join(',')}]`;
    default:
      return String(fieldValuePayload(v, kind));
  }
}

/** RabbitMQ's `val/1` for argument equivalence messages: "the value '1000' of type 'signedint'" or "none". */
export function describeArgument(v: FieldValue | undefined): string {
  return v === undefined ? 'none' : `the value '${valueText(v)}' of type '${typeName(v)}'`;
}

/**
 * RabbitMQ's `type_class`: integers of every width are one class (a client that sends x-max-length
 * as a long must match one that sent a signedint), floats are one class, and Styx's short strings
 * (not a 0-9-1 table type) count as long strings.
 */
function typeClass(kind: FieldValueKind): string {
  switch (kind) {
    case 'i8':
    case 'u8':
    case 'i16':
    case 'u16':
    case 'i32':
    case 'u32':
    case 'i64':
    case 'u64':
      return 'int';
    case 'f32':
    case 'f64':
      return 'float';
    case 'shortStr':
    case 'longStr':
      return 'longstr';
    default:
      return kind;
  }
}

/**
 * Declare-argument equivalence as RabbitMQ's `assert_args_equivalence`: same type class and equal
 * value. Nested arrays and tables compare type-exactly (RabbitMQ compares them as tagged terms).
 */
export function argumentsEquivalent(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const ka = fieldValueKind(a);
  const kb = fieldValueKind(b);
  if (ka === undefined || kb === undefined || typeClass(ka) !== typeClass(kb)) return false;
  if (ka === kb) return fieldValueEquals(a, b);
  // Same class, different member: integers of different widths, f32 vs f64, short vs long string.
  return fieldValuePayload(a, ka) === fieldValuePayload(b, kb);
}

/** JSON replacer for state that holds field tables: bytes and non-finite numbers survive. */
export function fieldJsonReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Uint8Array)
    return { $bytes: Buffer.from(value.buffer, value.byteOffset, value.length).toString('base64') };
  if (typeof value === 'number' && !Number.isFinite(value)) return { $num: String(value) };
  return value;
}

/** The reviver matching `fieldJsonReplacer`. */
export function fieldJsonReviver(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>;
    if (typeof o.$bytes === 'string') return Uint8Array.from(Buffer.from(o.$bytes, 'base64'));
    if (typeof o.$num === 'string') return Number(o.$num);
  }
  return value;
}

/**
 * A string identifying a table up to entry order, as RabbitMQ identifies binding arguments (it
 * sorts them by key). Values stay type-exact: an i8 1 and an i32 1 are different bindings.
 * Only for plain tables (see plainTable), whose value objects have exactly one member.
 */
export function canonicalTableKey(table: FieldTable): string {
  if (table.entries.length === 0) return '';
  const sorted = table.entries.slice().sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
  return JSON.stringify(
    sorted.map((e) => [e.key, canonicalValue(e.value)]),
    fieldJsonReplacer,
  );
}

function canonicalValue(v: FieldValue): unknown {
  const kind = fieldValueKind(v) as FieldValueKind;
  switch (kind) {
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return [kind, d.scale, d.value];
    }
    case 'void':
      return [kind];
    case 'array':
      return [kind, fieldValuePayload(v, kind).values.map(canonicalValue)];
    case 'table':
      return [kind, canonicalTableKey(fieldValuePayload(v, kind))];
    default:
      return [kind, fieldValuePayload(v, kind)];
  }
}
