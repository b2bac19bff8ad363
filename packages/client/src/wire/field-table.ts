// Field-table helpers over the wire types (FieldTable, FieldValue), for the broker and the SDK.
// Tables are ordered sequences of entries; every helper keeps order and never mutates its input.
import type { FieldTable, FieldValue, FieldValueKind, FieldValueMap } from './types.ts';
import { FIELD_VALUE_KINDS } from './types.ts';
import { WireError } from './wire-error.ts';

const KINDS: ReadonlySet<string> = new Set(FIELD_VALUE_KINDS);

const EMPTY_TABLE: FieldTable = Object.freeze({
  entries: Object.freeze([]) as unknown as FieldTable['entries'],
});

/**
 * The member a FieldValue carries, or undefined when it carries none (only possible for bytes from
 * a broken peer, or a hand-built object). Works for plain objects and decoded instances alike.
 */
export function fieldValueKind(v: FieldValue): FieldValueKind | undefined {
  const record = v as unknown as Record<string, unknown>;
  // Own keys only: `for...in` would also walk a decoded instance's prototype (protobufjs puts every
  // field's default there), which made this a hot spot of dead-lettering (x-death reads).
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    if (KINDS.has(key) && record[key] != null) return key as FieldValueKind;
  }
  return undefined;
}

/** Like fieldValueKind, but a value with no member is a 502 SYNTAX_ERROR. */
export function requireFieldValueKind(v: FieldValue): FieldValueKind {
  const kind = fieldValueKind(v);
  if (kind === undefined) throw WireError.syntax('a field value carries no type member');
  return kind;
}

/** The payload of a FieldValue whose kind is known. */
export function fieldValuePayload<K extends FieldValueKind>(v: FieldValue, kind: K): FieldValueMap[K] {
  return (v as unknown as FieldValueMap)[kind];
}

/**
 * The value of the first entry named `key` (RabbitMQ's table_lookup takes the first too), or
 * undefined. A missing table (absent headers) has no entries.
 */
export function tableGet(table: FieldTable | null | undefined, key: string): FieldValue | undefined {
  if (table == null) return undefined;
  const entries = table.entries;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e !== undefined && e.key === key) return e.value;
  }
  return undefined;
}

/**
 * A new table with `key` set to `value`: the first entry named `key` is replaced in place (order
 * kept), or a new entry is appended. Later duplicates of `key`, if any, are left as they were.
 */
export function tableSet(table: FieldTable | null | undefined, key: string, value: FieldValue): FieldTable {
  const entries = (table ?? EMPTY_TABLE).entries;
  const out = entries.slice();
  const at = out.findIndex((e) => e.key === key);
  if (at < 0) out.push({ key, value });
  else out[at] = { key, value };
  return { entries: out };
}

/** A new table without any entry named `key` (all duplicates removed). */
export function tableDelete(table: FieldTable | null | undefined, key: string): FieldTable {
  const entries = (table ?? EMPTY_TABLE).entries;
  return { entries: entries.filter((e) => e.key !== key) };
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function numbersEqual(a: number, b: number): boolean {
  // NaN equals NaN here: re-declaring with the same (odd) argument is not a different argument.
  return a === b || (Number.isNaN(a) && Number.isNaN(b));
}

/**
 * Deep, type-exact equality: an i8 5 is not an i16 5, a short string is not a long string. Arrays
 * compare in order. Tables compare as maps (same keys, equal values, any order), which is what
 * re-declare equivalence needs; use entry order yourself where order matters (x-death).
 */
export function fieldValueEquals(a: FieldValue, b: FieldValue): boolean {
  const kind = fieldValueKind(a);
  if (kind === undefined || kind !== fieldValueKind(b)) return false;
  switch (kind) {
    case 'i8':
    case 'u8':
    case 'i16':
    case 'u16':
    case 'i32':
    case 'u32':
    case 'i64':
    case 'u64':
    case 'f32':
    case 'f64':
    case 'timestamp':
      return numbersEqual(fieldValuePayload(a, kind), fieldValuePayload(b, kind));
    case 'shortStr':
    case 'longStr':
    case 'bool':
      return fieldValuePayload(a, kind) === fieldValuePayload(b, kind);
    case 'decimal': {
      const x = fieldValuePayload(a, kind);
      const y = fieldValuePayload(b, kind);
      return x.scale === y.scale && x.value === y.value;
    }
    case 'byteArray':
      return bytesEqual(fieldValuePayload(a, kind), fieldValuePayload(b, kind));
    case 'void':
      return true;
    case 'array': {
      const x = fieldValuePayload(a, kind).values;
      const y = fieldValuePayload(b, kind).values;
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) {
        if (!fieldValueEquals(x[i] as FieldValue, y[i] as FieldValue)) return false;
      }
      return true;
    }
    case 'table':
      return fieldTableEquals(fieldValuePayload(a, kind), fieldValuePayload(b, kind));
  }
}

/**
 * Tables as maps: the same set of keys, each with a type-exactly equal value (first occurrence of
 * a duplicated key wins, as in tableGet). Missing tables equal empty ones.
 */
export function fieldTableEquals(
  a: FieldTable | null | undefined,
  b: FieldTable | null | undefined,
): boolean {
  const x = (a ?? EMPTY_TABLE).entries;
  const y = (b ?? EMPTY_TABLE).entries;
  const keys = new Set<string>();
  for (const e of x) keys.add(e.key);
  const otherKeys = new Set<string>();
  for (const e of y) otherKeys.add(e.key);
  if (keys.size !== otherKeys.size) return false;
  for (const key of keys) {
    const va = tableGet(a, key) as FieldValue;
    const vb = tableGet(b, key);
    if (vb === undefined || !fieldValueEquals(va, vb)) return false;
  }
  return true;
}
