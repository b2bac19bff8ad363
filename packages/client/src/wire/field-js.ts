// Conversion between wire field tables and the plain JS values amqplib applications use.
//
// To JS: amqplib's decoded shapes (lib/codec.js decodeFields): every integer and float type is a
// number, strings are strings, 't' a boolean, 'V' null, 'x' a Buffer (a Uint8Array where there is
// no Buffer), 'A' an array, 'F' an object, and the two types a number cannot carry tagged as
// `{ '!': 'timestamp', value }` and `{ '!': 'decimal', value: { places, digits } }`.
//
// From JS: amqplib's inference rules (lib/codec.js encodeFieldValue): a fractional number is a
// double; an integer takes the smallest signed width that holds it (b, s, I, l); a string is a long
// string; a boolean is 't'; null is void; an array is 'A'; a Buffer is 'x'; any other object is a
// nested table (keys with undefined values skipped, inherited enumerable keys included, as amqplib's
// for-in does); `{ '!': type, value }` forces a type by amqplib's names.
//
// Deliberate differences from amqplib, each where amqplib would send nonsense or throw later:
// - any Uint8Array is a byte array (amqplib encodes a non-Buffer Uint8Array as a table of indexes);
// - NaN, ±Infinity and integers of magnitude >= 2^63 are doubles (amqplib writes a garbage int64);
// - out-of-range explicit types throw RangeError up front;
// - a decimal's digits are a signed 32-bit integer (the wire schema's sint32), where AMQP's are
//   unsigned: digits above 2^31 - 1 throw RangeError;
// - `{ '!': 'uint64', value }` selects the schema's u64, which amqplib has no name for;
// - a key named `__proto__` becomes an own property instead of replacing the object's prototype.
import { fieldValuePayload, requireFieldValueKind } from './field-table.ts';
import type { FieldTable, FieldValue } from './types.ts';

/** amqplib's tagged value: `{ '!': 'timestamp', value: 1795308382 }`. */
export interface TypedJsValue {
  '!': string;
  value: unknown;
}

/** A JS value as amqplib decodes a field value. */
export type JsFieldValue =
  | number
  | string
  | boolean
  | null
  | Uint8Array
  | { '!': 'timestamp'; value: number }
  | { '!': 'decimal'; value: { places: number; digits: number } }
  | JsFieldValue[]
  | JsFieldTable;

/** A JS object as amqplib decodes a field table. */
export interface JsFieldTable {
  [key: string]: JsFieldValue;
}

const TWO_31 = 2 ** 31;
const TWO_32 = 2 ** 32;
const TWO_50 = 2 ** 50;
const TWO_63 = 2 ** 63;
const TWO_64 = 2 ** 64;
/** Longest table key in UTF-8 bytes: keys are AMQP short strings. */
const MAX_KEY_BYTES = 255;

type NodeBufferClass = typeof Buffer;
const NodeBuffer: NodeBufferClass | undefined = (globalThis as { Buffer?: NodeBufferClass }).Buffer;

/** A Buffer view of `bytes` under Node (what amqplib returns), the bytes themselves elsewhere. */
function asPlatformBytes(bytes: Uint8Array): Uint8Array {
  if (NodeBuffer === undefined || NodeBuffer.isBuffer(bytes)) return bytes;
  return NodeBuffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function setKey(obj: JsFieldTable, key: string, value: JsFieldValue): void {
  if (key === '__proto__') {
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    obj[key] = value;
  }
}

/** The JS value amqplib would decode for `v`. Throws WireError 502 if `v` carries no member. */
export function fieldValueToJs(v: FieldValue): JsFieldValue {
  const kind = requireFieldValueKind(v);
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
      return fieldValuePayload(v, kind);
    case 'shortStr':
    case 'longStr':
      return fieldValuePayload(v, kind);
    case 'bool':
      return fieldValuePayload(v, kind);
    case 'timestamp':
      return { '!': 'timestamp', value: fieldValuePayload(v, kind) };
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      return { '!': 'decimal', value: { places: d.scale, digits: d.value } };
    }
    case 'array':
      return fieldValuePayload(v, kind).values.map(fieldValueToJs);
    case 'table':
      return fieldTableToJs(fieldValuePayload(v, kind));
    case 'byteArray':
      return asPlatformBytes(fieldValuePayload(v, kind));
    case 'void':
      return null;
  }
}

/**
 * The JS object amqplib would decode for `t`, keys in table order. A key that occurs twice keeps its
 * first position and its last value, as amqplib's decoder does. A missing table is an empty object.
 */
export function fieldTableToJs(t: FieldTable | null | undefined): JsFieldTable {
  const out: JsFieldTable = {};
  if (t == null) return out;
  for (const entry of t.entries) setKey(out, entry.key, fieldValueToJs(entry.value));
  return out;
}

function requireNumber(type: string, val: unknown): number {
  if (typeof val !== 'number')
    throw new TypeError(`Value for type ${type} must be a number, got ${typeof val}`);
  return val;
}

function requireInteger(type: string, val: unknown, min: number, max: number): number {
  const n = requireNumber(type, val);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new RangeError(`Value for type ${type} must be an integer in [${min}, ${max}], got ${n}`);
  }
  // Integers have no negative zero on the wire; normalise so values compare equal before and after.
  return n === 0 ? 0 : n;
}

/** amqplib's choice of type for a plain JS number (see the module comment for the NaN/2^63 case). */
function inferNumberType(n: number): string {
  if (!Number.isFinite(n) || Math.abs(n) >= TWO_63) return 'double';
  if (Math.abs(n) < TWO_50 && Math.floor(n) !== n) return 'double';
  if (n >= -128 && n < 128) return 'byte';
  if (n >= -0x8000 && n < 0x8000) return 'short';
  if (n >= -TWO_31 && n < TWO_31) return 'int';
  return 'long';
}

function isTyped(value: unknown): value is TypedJsValue {
  return typeof value === 'object' && value !== null && Object.hasOwn(value, '!');
}

/**
 * The field value amqplib would encode for a JS value. Throws TypeError for what amqplib cannot
 * encode (undefined, functions, symbols, bigints, unknown `'!'` types) and RangeError for values out
 * of their explicit type's range.
 */
export function jsToFieldValue(value: unknown): FieldValue {
  let type: string = typeof value;
  let val: unknown = value;
  if (isTyped(value)) {
    type = String(value['!']);
    val = value.value;
  }
  if (type === 'number') type = inferNumberType(requireNumber('number', val));

  switch (type) {
    case 'string':
      if (typeof val !== 'string')
        throw new TypeError(`Value for type string must be a string, got ${typeof val}`);
      return { longStr: val };
    case 'boolean':
      return { bool: Boolean(val) };
    case 'object':
      if (val === null) return { void: {} };
      if (Array.isArray(val)) return { array: { values: val.map(jsToFieldValue) } };
      if (val instanceof Uint8Array) return { byteArray: val };
      return { table: jsToFieldTable(val as Record<string, unknown>) };
    case 'double':
    case 'float64':
      return { f64: requireNumber(type, val) };
    case 'float':
      return { f32: requireNumber(type, val) };
    case 'byte':
    case 'int8':
      return { i8: requireInteger(type, val, -128, 127) };
    case 'unsignedbyte':
    case 'uint8':
      return { u8: requireInteger(type, val, 0, 0xff) };
    case 'short':
    case 'int16':
      return { i16: requireInteger(type, val, -0x8000, 0x7fff) };
    case 'unsignedshort':
    case 'uint16':
      return { u16: requireInteger(type, val, 0, 0xffff) };
    case 'int':
    case 'int32':
      return { i32: requireInteger(type, val, -TWO_31, TWO_31 - 1) };
    case 'unsignedint':
    case 'uint32':
      return { u32: requireInteger(type, val, 0, TWO_32 - 1) };
    case 'long':
    case 'int64':
      return { i64: requireInteger(type, val, -TWO_63, TWO_63 - 1) };
    case 'unsignedlong':
    case 'uint64':
      return { u64: requireInteger(type, val, 0, TWO_64 - 1) };
    case 'timestamp':
      return { timestamp: requireInteger(type, val, 0, TWO_64 - 1) };
    case 'decimal': {
      const d = val as { places?: unknown; digits?: unknown } | null;
      if (
        d === null ||
        typeof d !== 'object' ||
        !Object.hasOwn(d, 'places') ||
        !Object.hasOwn(d, 'digits') ||
        typeof d.places !== 'number' ||
        !(d.places >= 0 && d.places < 256)
      ) {
        throw new TypeError(
          `Decimal value must be {'places': 0..255, 'digits': int32}, got ${JSON.stringify(val)}`,
        );
      }
      return {
        decimal: {
          scale: requireInteger('decimal places', d.places, 0, 255),
          value: requireInteger('decimal digits', d.digits, -TWO_31, TWO_31 - 1),
        },
      };
    }
    default:
      throw new TypeError(`Unknown type to encode: ${type}`);
  }
}

function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      // A surrogate pair is one 4-byte code point.
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * The field table amqplib would encode for a JS object: every enumerable key, own or inherited, in
 * for-in order, except those whose value is undefined. A missing object is an empty table.
 * Throws RangeError for a key longer than 255 UTF-8 bytes (AMQP keys are short strings).
 */
export function jsToFieldTable(obj: Record<string, unknown> | null | undefined): FieldTable {
  const entries: FieldTable['entries'] = [];
  if (obj == null) return { entries };
  for (const key in obj) {
    const val = obj[key];
    if (val === undefined) continue;
    if (key.length > MAX_KEY_BYTES / 3 && utf8Length(key) > MAX_KEY_BYTES) {
      throw new RangeError(
        `Field table key longer than ${MAX_KEY_BYTES} UTF-8 bytes: ${key.slice(0, 40)}...`,
      );
    }
    entries.push({ key, value: jsToFieldValue(val) });
  }
  return { entries };
}
