// AMQP 0-9-1 field tables and arrays with RabbitMQ's type tags (its errata to the 0-9-1 spec:
// 's' is a signed 16-bit integer, not a short string; 'l' is a signed 64-bit integer; 'x' is a
// byte array; there is no 'L'), mapped onto the wire types the WebSocket protocol uses
// (@styx/client/wire FieldTable), so a table decoded from AMQP can be sent on as protobuf and an
// x-death written by the broker comes back out byte for byte.
//
// tag  AMQP type          FieldValue member
// t    boolean            bool
// b/B  int8 / uint8       i8 / u8
// s/u  int16 / uint16     i16 / u16
// I/i  int32 / uint32     i32 / u32
// l    int64              i64   (u64 is written as 'l': RabbitMQ has no unsigned 64-bit tag)
// f/d  float / double     f32 / f64
// D    decimal            decimal (scale octet + 32-bit value, kept as its signed reading)
// S    long string        longStr (shortStr is written as 'S': 's' means int16 here); an 'S'
//                         whose bytes are not UTF-8 decodes to byteArray so no byte is lost
// x    byte array         byteArray
// T    timestamp          timestamp (seconds, unsigned 64-bit)
// A/F  array / table      array / table
// V    void               void
import { isUtf8 } from 'node:buffer';
import type { FieldTable, FieldValue } from '@styx/client/wire';
import { fieldValuePayload, requireFieldValueKind } from '@styx/client/wire';
import type { AmqpReader } from './amqp-reader.ts';
import type { AmqpWriter } from './amqp-writer.ts';
import { AmqpEncodeError, syntaxError } from './codec-error.ts';

/**
 * Deepest nesting of tables and arrays accepted (a header table counts 1). Decoding recurses, and
 * a 128 KiB frame could otherwise nest ~20,000 levels and overflow the stack; real tables nest a
 * few levels (x-death: headers → array → table → array is 4).
 */
export const MAX_FIELD_NESTING = 64;

const EMPTY: FieldTable = { entries: [] };

/** Reads a field table (long size + entries); `depth` is how many containers enclose it. */
export function readFieldTable(r: AmqpReader, depth = 0): FieldTable {
  const size = r.long();
  r.need(size, 'field table');
  if (size === 0) return { entries: [] };
  checkDepth(r, depth);
  const outerEnd = r.end;
  const end = r.pos + size;
  // Narrow the reader to the table so a value that claims more bytes than the table holds is a
  // truncation error rather than a read into whatever follows the table.
  r.end = end;
  const entries: FieldTable['entries'] = [];
  while (r.pos < end) {
    const key = r.shortstr();
    entries.push({ key, value: readFieldValue(r, depth + 1) });
  }
  r.end = outerEnd;
  return { entries };
}

function readFieldArray(r: AmqpReader, depth: number): FieldValue[] {
  const size = r.long();
  r.need(size, 'field array');
  const values: FieldValue[] = [];
  if (size === 0) return values;
  checkDepth(r, depth);
  const outerEnd = r.end;
  const end = r.pos + size;
  r.end = end;
  while (r.pos < end) values.push(readFieldValue(r, depth + 1));
  r.end = outerEnd;
  return values;
}

function checkDepth(r: AmqpReader, depth: number): void {
  if (depth >= MAX_FIELD_NESTING) {
    throw syntaxError(`field tables nested deeper than ${MAX_FIELD_NESTING}`, r.classId, r.methodId);
  }
}

/** Reads one tagged field value. */
export function readFieldValue(r: AmqpReader, depth: number): FieldValue {
  const tag = r.octet();
  switch (tag) {
    case 0x74: // t
      return { bool: r.octet() !== 0 };
    case 0x62: // b
      return { i8: r.int8() };
    case 0x42: // B
      return { u8: r.octet() };
    case 0x73: // s
      return { i16: r.int16() };
    case 0x75: // u
      return { u16: r.short() };
    case 0x49: // I
      return { i32: r.int32() };
    case 0x69: // i
      return { u32: r.long() };
    case 0x6c: // l
      return { i64: r.int64() };
    case 0x66: // f
      return { f32: r.float() };
    case 0x64: // d
      return { f64: r.double() };
    case 0x44: {
      // D
      const scale = r.octet();
      return { decimal: { scale, value: r.int32() } };
    }
    case 0x53: {
      // S
      const bytes = r.longstr();
      return isUtf8(bytes) ? { longStr: bytes.toString('utf8') } : { byteArray: Buffer.from(bytes) };
    }
    case 0x78: // x
      return { byteArray: Buffer.from(r.longstr()) };
    case 0x54: // T
      return { timestamp: r.longlong() };
    case 0x41: // A
      return { array: { values: readFieldArray(r, depth) } };
    case 0x46: // F
      return { table: readFieldTable(r, depth) };
    case 0x56: // V
      return { void: {} };
    default:
      throw syntaxError(
        `unknown field table type tag 0x${tag.toString(16).padStart(2, '0')}`,
        r.classId,
        r.methodId,
      );
  }
}

/** Writes a field table; an absent table is written empty. */
export function writeFieldTable(w: AmqpWriter, table: FieldTable | null | undefined, depth = 0): void {
  const entries = (table ?? EMPTY).entries;
  if (entries.length > 0 && depth >= MAX_FIELD_NESTING) {
    throw new AmqpEncodeError(`field tables nested deeper than ${MAX_FIELD_NESTING}`);
  }
  w.ensure(4);
  const sizeAt = w.pos;
  w.pos += 4;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i] as FieldTable['entries'][number];
    w.shortstr(e.key);
    writeFieldValue(w, e.value, depth + 1);
  }
  w.buf.writeUInt32BE(w.pos - sizeAt - 4, sizeAt);
}

function writeFieldArray(w: AmqpWriter, values: readonly FieldValue[], depth: number): void {
  if (values.length > 0 && depth >= MAX_FIELD_NESTING) {
    throw new AmqpEncodeError(`field arrays nested deeper than ${MAX_FIELD_NESTING}`);
  }
  w.ensure(4);
  const sizeAt = w.pos;
  w.pos += 4;
  for (let i = 0; i < values.length; i++) writeFieldValue(w, values[i] as FieldValue, depth + 1);
  w.buf.writeUInt32BE(w.pos - sizeAt - 4, sizeAt);
}

/** Writes one tagged field value. */
export function writeFieldValue(w: AmqpWriter, v: FieldValue, depth: number): void {
  let kind: ReturnType<typeof requireFieldValueKind>;
  try {
    kind = requireFieldValueKind(v);
  } catch (e) {
    throw new AmqpEncodeError((e as Error).message);
  }
  switch (kind) {
    case 'bool':
      w.octet(0x74);
      w.octet(fieldValuePayload(v, kind) ? 1 : 0);
      return;
    case 'i8':
      w.octet(0x62);
      w.int8(fieldValuePayload(v, kind));
      return;
    case 'u8':
      w.octet(0x42);
      w.octet(fieldValuePayload(v, kind));
      return;
    case 'i16':
      w.octet(0x73);
      w.int16(fieldValuePayload(v, kind));
      return;
    case 'u16':
      w.octet(0x75);
      w.short(fieldValuePayload(v, kind));
      return;
    case 'i32':
      w.octet(0x49);
      w.int32(fieldValuePayload(v, kind));
      return;
    case 'u32':
      w.octet(0x69);
      w.long(fieldValuePayload(v, kind));
      return;
    case 'i64':
    case 'u64':
      w.octet(0x6c);
      w.int64(fieldValuePayload(v, kind));
      return;
    case 'f32':
      w.octet(0x66);
      w.float(fieldValuePayload(v, kind));
      return;
    case 'f64':
      w.octet(0x64);
      w.double(fieldValuePayload(v, kind));
      return;
    case 'decimal': {
      const d = fieldValuePayload(v, kind);
      w.octet(0x44);
      w.octet(d.scale);
      w.int32(d.value);
      return;
    }
    case 'shortStr':
    case 'longStr':
      w.octet(0x53);
      w.longstr(fieldValuePayload(v, kind));
      return;
    case 'byteArray':
      w.octet(0x78);
      w.longstr(fieldValuePayload(v, kind));
      return;
    case 'timestamp':
      w.octet(0x54);
      w.longlong(fieldValuePayload(v, kind));
      return;
    case 'array':
      w.octet(0x41);
      writeFieldArray(w, fieldValuePayload(v, kind).values, depth);
      return;
    case 'table':
      w.octet(0x46);
      writeFieldTable(w, fieldValuePayload(v, kind), depth);
      return;
    case 'void':
      w.octet(0x56);
      return;
  }
}
