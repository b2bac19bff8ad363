// BasicProperties (and their FieldTables) encoded and decoded by hand, exactly as protobufjs does it.
//
// Why: headers are the costly part of a frame. An x-death header (an array of tables) is a few dozen
// messages, and protobufjs decodes each field value by assigning its oneof, whose setter deletes the
// other 18 members one by one: about half a microsecond per value, several per header.
//
// Decoding builds the very objects protobufjs builds: instances of the schema's own message
// constructors (so absent fields read their defaults from the prototype, exactly one FieldValue member
// is an own property, and so on), with the same own properties and values, and fails where protobufjs
// fails (wire-reader.ts's primitives; same nesting limit). Encoding writes the bytes protobufjs writes for
// the same object: own, non-null fields in field-number order, presence fields even when zero, other
// scalars only when not their default, every FieldValue member set. A value whose JavaScript type is not
// the schema's (a string where a number goes, …), which protobufjs would coerce its own ways, is handed
// to protobufjs. properties-codec.test.ts checks both directions against protobufjs.
import protobuf from 'protobufjs';
import { PropertiesType, wireType } from './schema.ts';
import type { BasicProperties, Decimal, FieldArray, FieldEntry, FieldTable, FieldValue } from './types.ts';
import { FIELD_VALUE_KINDS } from './types.ts';
import {
  checkDepth,
  cursor,
  FIXED32,
  FIXED64,
  LEN,
  outOfRange,
  readBool,
  readBytes,
  readDouble,
  readFloat,
  readSint32,
  readSint64,
  readSize,
  readString,
  readTag,
  readUint32,
  readUint64,
  skipField,
  VARINT,
} from './wire-reader.ts';
import {
  alloc,
  lenFieldSize,
  splitSint64,
  splitUint64,
  utf8Length,
  varint32Size,
  varint64Size,
  writeDouble,
  writeFloat,
  writeStringField,
  writeVarint32,
  writeVarint64,
  zigzag32,
} from './wire-writer.ts';

type Ctor<T> = new () => T;
type Mutable = Record<string, unknown>;

const PropertiesCtor = PropertiesType.ctor as unknown as Ctor<BasicProperties>;
const TableCtor = wireType('FieldTable').ctor as unknown as Ctor<FieldTable>;
const EntryCtor = wireType('FieldEntry').ctor as unknown as Ctor<FieldEntry>;
const ValueCtor = wireType('FieldValue').ctor as unknown as Ctor<Mutable>;
const ArrayCtor = wireType('FieldArray').ctor as unknown as Ctor<FieldArray>;
const DecimalCtor = wireType('Decimal').ctor as unknown as Ctor<Decimal>;
const VoidCtor = wireType('Void').ctor as unknown as Ctor<Mutable>;

const hasOwn = Object.prototype.hasOwnProperty;

/** FieldValue members by field number (1..19): FIELD_VALUE_KINDS lists them in proto/styx.proto's order. */
const VALUE_MEMBERS: readonly string[] = ['', ...FIELD_VALUE_KINDS];

// ================================================================================================ decode

/** The end of a length-delimited message field's content (its start is then `cursor.pos`). */
function messageEnd(end: number): number {
  const length = readSize(end);
  const stop = cursor.pos + length;
  if (stop > end) throw outOfRange(length, end);
  return stop;
}

/**
 * A BasicProperties message from `cursor.pos` to `end`, at nesting `depth` (3 inside a frame of a batch,
 * 0 on its own), merged into `into` when given (a repeated message field merges).
 */
export function readPropertiesMessage(end: number, depth: number, into?: BasicProperties): BasicProperties {
  checkDepth(depth);
  const m = into ?? new PropertiesCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    switch (field) {
      case 1:
        if (wireType !== LEN) break;
        m.contentType = readString(end);
        continue;
      case 2:
        if (wireType !== LEN) break;
        m.contentEncoding = readString(end);
        continue;
      case 3: {
        if (wireType !== LEN) break;
        const stop = messageEnd(end);
        m.headers = readTable(stop, depth + 1, m.headers ?? undefined);
        continue;
      }
      case 4:
        if (wireType !== VARINT) break;
        m.deliveryMode = readUint32(end);
        continue;
      case 5:
        if (wireType !== VARINT) break;
        m.priority = readUint32(end);
        continue;
      case 6:
        if (wireType !== LEN) break;
        m.correlationId = readString(end);
        continue;
      case 7:
        if (wireType !== LEN) break;
        m.replyTo = readString(end);
        continue;
      case 8:
        if (wireType !== LEN) break;
        m.expiration = readString(end);
        continue;
      case 9:
        if (wireType !== LEN) break;
        m.messageId = readString(end);
        continue;
      case 10:
        if (wireType !== VARINT) break;
        m.timestamp = readUint64(end);
        continue;
      case 11:
        if (wireType !== LEN) break;
        m.type = readString(end);
        continue;
      case 12:
        if (wireType !== LEN) break;
        m.userId = readString(end);
        continue;
      case 13:
        if (wireType !== LEN) break;
        m.appId = readString(end);
        continue;
      case 14:
        if (wireType !== LEN) break;
        m.clusterId = readString(end);
        continue;
      default:
        break;
    }
    skipField(wireType, depth, field, end);
  }
  return m;
}

function readTable(end: number, depth: number, into: FieldTable | undefined): FieldTable {
  checkDepth(depth);
  const m = into ?? new TableCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    if (tag >>> 3 === 1 && (tag & 7) === LEN) {
      const stop = messageEnd(end);
      // The prototype's default is a shared empty array: a table's first entry gets its own.
      if (!(m.entries && m.entries.length > 0)) m.entries = [];
      m.entries.push(readEntry(stop, depth + 1));
    } else {
      skipField(tag & 7, depth, tag >>> 3, end);
    }
  }
  return m;
}

function readEntry(end: number, depth: number): FieldEntry {
  checkDepth(depth);
  const m = new EntryCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === LEN) {
      // A field without presence: '' is the default, read from the prototype.
      const key = readString(end);
      if (key.length !== 0) m.key = key;
      else if (hasOwn.call(m, 'key')) delete (m as Partial<FieldEntry>).key;
    } else if (field === 2 && wireType === LEN) {
      const stop = messageEnd(end);
      m.value = readValue(stop, depth + 1, (m.value ?? undefined) as Mutable | undefined) as FieldValue;
    } else {
      skipField(wireType, depth, field, end);
    }
  }
  return m;
}

function readArray(end: number, depth: number, into: FieldArray | undefined): FieldArray {
  checkDepth(depth);
  const m = into ?? new ArrayCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    if (tag >>> 3 === 1 && (tag & 7) === LEN) {
      const stop = messageEnd(end);
      if (!(m.values && m.values.length > 0)) m.values = [];
      m.values.push(readValue(stop, depth + 1, undefined) as FieldValue);
    } else {
      skipField(tag & 7, depth, tag >>> 3, end);
    }
  }
  return m;
}

function readDecimal(end: number, depth: number, into: Decimal | undefined): Decimal {
  checkDepth(depth);
  const m = into ?? new DecimalCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 1 && wireType === VARINT) {
      const scale = readUint32(end);
      if (scale !== 0) m.scale = scale;
      else if (hasOwn.call(m, 'scale')) delete (m as Partial<Decimal>).scale;
    } else if (field === 2 && wireType === VARINT) {
      const value = readSint32(end);
      if (value !== 0) m.value = value;
      else if (hasOwn.call(m, 'value')) delete (m as Partial<Decimal>).value;
    } else {
      skipField(wireType, depth, field, end);
    }
  }
  return m;
}

function readVoid(end: number, depth: number, into: Mutable | undefined): Mutable {
  checkDepth(depth);
  const m = into ?? new VoidCtor();
  while (cursor.pos < end) {
    const tag = readTag(end);
    // protobufjs's decoder of a message without fields passes the whole tag where the field number
    // goes: a group's end tag never matches it, and only a zero tag is "field number 0".
    skipField(tag & 7, depth, tag, end);
  }
  return m;
}

/**
 * A FieldValue. Its members form a oneof: setting one removes the others (protobufjs's oneof setter), so
 * at most one, the last read, is an own property; a message member read again merges into itself.
 */
function readValue(end: number, depth: number, into: Mutable | undefined): Mutable {
  checkDepth(depth);
  const m = into ?? new ValueCtor();
  let member = into === undefined ? '' : ownMember(into);
  while (cursor.pos < end) {
    const tag = readTag(end);
    const field = tag >>> 3;
    const wireType = tag & 7;
    let value: unknown;
    switch (field) {
      case 1:
      case 3:
      case 5:
        if (wireType !== VARINT) break;
        value = readSint32(end);
        break;
      case 2:
      case 4:
      case 6:
        if (wireType !== VARINT) break;
        value = readUint32(end);
        break;
      case 7:
        if (wireType !== VARINT) break;
        value = readSint64(end);
        break;
      case 8:
      case 15:
        if (wireType !== VARINT) break;
        value = readUint64(end);
        break;
      case 9:
        if (wireType !== FIXED32) break;
        value = readFloat(end);
        break;
      case 10:
        if (wireType !== FIXED64) break;
        value = readDouble(end);
        break;
      case 11:
        if (wireType !== LEN) break;
        value = readDecimal(
          messageEnd(end),
          depth + 1,
          member === 'decimal' ? (m.decimal as Decimal) : undefined,
        );
        break;
      case 12:
      case 13:
        if (wireType !== LEN) break;
        value = readString(end);
        break;
      case 14:
        if (wireType !== VARINT) break;
        value = readBool(end);
        break;
      case 16:
        if (wireType !== LEN) break;
        value = readArray(
          messageEnd(end),
          depth + 1,
          member === 'array' ? (m.array as FieldArray) : undefined,
        );
        break;
      case 17:
        if (wireType !== LEN) break;
        value = readTable(
          messageEnd(end),
          depth + 1,
          member === 'table' ? (m.table as FieldTable) : undefined,
        );
        break;
      case 18:
        if (wireType !== LEN) break;
        value = readBytes(end);
        break;
      case 19:
        if (wireType !== LEN) break;
        value = readVoid(messageEnd(end), depth + 1, member === 'void' ? (m.void as Mutable) : undefined);
        break;
      default:
        break;
    }
    if (value === undefined) {
      skipField(wireType, depth, field, end);
      continue;
    }
    const name = VALUE_MEMBERS[field] as string;
    if (member !== '' && member !== name) delete m[member];
    m[name] = value;
    member = name;
  }
  return m;
}

/** The one member a decoded FieldValue owns ('' for none). */
function ownMember(v: Mutable): string {
  for (const key of Object.keys(v)) if (memberField(key) !== 0) return key;
  return '';
}

// ================================================================================================ encode
//
// Two passes over the same object graph, in the same order: `measure*` computes every nested message's
// size and every string's UTF-8 length, recording them in `sizes` in pre-order (a nested message's slot
// is taken before its content's); `write*` writes, taking them back in that order, so every length
// prefix is known when it is written. Field reads use static names (one shape per read site).

const sizes: number[] = [];
let next = 0;

/** Tags (as varint values) of the FieldValue members numbered 16 and up: two bytes each. */
const ARRAY_TAG = (16 << 3) | LEN;
const TABLE_TAG = (17 << 3) | LEN;
const BYTE_ARRAY_TAG = (18 << 3) | LEN;
const VOID_TAG = (19 << 3) | LEN;

/** protobufjs's encoders refuse to nest deeper than util.recursionLimit: read once per encode. */
let encodeDepthLimit = 100;

function checkEncodeDepth(depth: number): void {
  if (depth > encodeDepthLimit) throw new Error('max depth exceeded');
}

/**
 * Thrown by the measuring pass for what the hand encoder leaves to protobufjs: a value protobufjs
 * would coerce its own ways (a string where a number goes, …), or a FieldValue with several members
 * whose keys are not in field order.
 */
const TO_PROTOBUFJS = new Error('encoded by protobufjs');

/** What protobufjs's encoder tests before writing a field: set, and an own property. */
function own(m: object, value: unknown, name: string): boolean {
  return value != null && hasOwn.call(m, name);
}

/** FieldValue member name → field number (0: not a member). */
function memberField(key: string): number {
  switch (key) {
    case 'i8':
      return 1;
    case 'u8':
      return 2;
    case 'i16':
      return 3;
    case 'u16':
      return 4;
    case 'i32':
      return 5;
    case 'u32':
      return 6;
    case 'i64':
      return 7;
    case 'u64':
      return 8;
    case 'f32':
      return 9;
    case 'f64':
      return 10;
    case 'decimal':
      return 11;
    case 'shortStr':
      return 12;
    case 'longStr':
      return 13;
    case 'bool':
      return 14;
    case 'timestamp':
      return 15;
    case 'array':
      return 16;
    case 'table':
      return 17;
    case 'byteArray':
      return 18;
    case 'void':
      return 19;
    default:
      return 0;
  }
}

/** Takes a slot for a nested message's size, to be filled by `closeNested`. */
function openNested(): number {
  sizes.push(0);
  return sizes.length - 1;
}

/** Records a nested message's size; returns the bytes its field takes (tag, length, content). */
function closeNested(slot: number, tagBytes: number, size: number): number {
  sizes[slot] = size;
  return tagBytes + varint32Size(size) + size;
}

function measureString(s: unknown): number {
  if (typeof s !== 'string') throw TO_PROTOBUFJS;
  const length = utf8Length(s);
  sizes.push(length);
  return 1 + varint32Size(length) + length;
}

function measureUint32(n: unknown): number {
  if (typeof n !== 'number') throw TO_PROTOBUFJS;
  return 1 + varint32Size(n >>> 0);
}

function measureUint64(n: unknown): number {
  if (typeof n !== 'number') throw TO_PROTOBUFJS;
  splitUint64(n);
  return 1 + varint64Size();
}

function measureProperties(p: BasicProperties, depth: number): number {
  checkEncodeDepth(depth);
  let size = 0;
  if (own(p, p.contentType, 'contentType')) size += measureString(p.contentType);
  if (own(p, p.contentEncoding, 'contentEncoding')) size += measureString(p.contentEncoding);
  if (own(p, p.headers, 'headers'))
    size += closeNested(openNested(), 1, measureTable(p.headers as FieldTable, depth + 1));
  if (own(p, p.deliveryMode, 'deliveryMode')) size += measureUint32(p.deliveryMode);
  if (own(p, p.priority, 'priority')) size += measureUint32(p.priority);
  if (own(p, p.correlationId, 'correlationId')) size += measureString(p.correlationId);
  if (own(p, p.replyTo, 'replyTo')) size += measureString(p.replyTo);
  if (own(p, p.expiration, 'expiration')) size += measureString(p.expiration);
  if (own(p, p.messageId, 'messageId')) size += measureString(p.messageId);
  if (own(p, p.timestamp, 'timestamp')) size += measureUint64(p.timestamp);
  if (own(p, p.type, 'type')) size += measureString(p.type);
  if (own(p, p.userId, 'userId')) size += measureString(p.userId);
  if (own(p, p.appId, 'appId')) size += measureString(p.appId);
  if (own(p, p.clusterId, 'clusterId')) size += measureString(p.clusterId);
  return size;
}

function measureTable(t: FieldTable, depth: number): number {
  checkEncodeDepth(depth);
  if (typeof t !== 'object') throw TO_PROTOBUFJS;
  const entries = t.entries;
  let size = 0;
  if (entries != null && entries.length > 0) {
    if (!Array.isArray(entries)) throw TO_PROTOBUFJS;
    for (let i = 0; i < entries.length; i++) {
      size += closeNested(openNested(), 1, measureEntry(entries[i] as FieldEntry, depth + 1));
    }
  }
  return size;
}

function measureEntry(e: FieldEntry, depth: number): number {
  checkEncodeDepth(depth);
  if (typeof e !== 'object' || e === null) throw TO_PROTOBUFJS;
  let size = 0;
  if (own(e, e.key, 'key') && e.key !== '') size += measureString(e.key);
  if (own(e, e.value, 'value')) {
    size += closeNested(openNested(), 1, measureValue(e.value as unknown as Mutable, depth + 1));
  }
  return size;
}

function measureArray(a: FieldArray, depth: number): number {
  checkEncodeDepth(depth);
  if (typeof a !== 'object') throw TO_PROTOBUFJS;
  const values = a.values;
  let size = 0;
  if (values != null && values.length > 0) {
    if (!Array.isArray(values)) throw TO_PROTOBUFJS;
    for (let i = 0; i < values.length; i++) {
      size += closeNested(openNested(), 1, measureValue(values[i] as unknown as Mutable, depth + 1));
    }
  }
  return size;
}

function measureDecimal(d: Decimal, depth: number): number {
  checkEncodeDepth(depth);
  if (typeof d !== 'object') throw TO_PROTOBUFJS;
  let size = 0;
  if (own(d, d.scale, 'scale')) {
    if (typeof d.scale !== 'number') throw TO_PROTOBUFJS;
    if (d.scale !== 0) size += 1 + varint32Size(d.scale >>> 0);
  }
  if (own(d, d.value, 'value')) {
    if (typeof d.value !== 'number') throw TO_PROTOBUFJS;
    if (d.value !== 0) size += 1 + varint32Size(zigzag32(d.value));
  }
  return size;
}

/**
 * A FieldValue: every member set (normally exactly one), in field order. Records the number of members,
 * then for each its field number (and whatever its content records).
 */
function measureValue(v: Mutable, depth: number): number {
  checkEncodeDepth(depth);
  if (typeof v !== 'object' || v === null) throw TO_PROTOBUFJS;
  const countSlot = openNested();
  const keys = Object.keys(v);
  let count = 0;
  let last = 0;
  let size = 0;
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const field = memberField(key);
    if (field === 0) continue;
    const x = v[key];
    if (x == null) continue;
    if (field < last) throw TO_PROTOBUFJS;
    last = field;
    count++;
    sizes.push(field);
    size += measureMember(field, x, depth);
  }
  sizes[countSlot] = count;
  return size;
}

function measureMember(field: number, x: unknown, depth: number): number {
  switch (field) {
    case 1:
    case 3:
    case 5:
      if (typeof x !== 'number') throw TO_PROTOBUFJS;
      return 1 + varint32Size(zigzag32(x));
    case 2:
    case 4:
    case 6:
      return measureUint32(x);
    case 7:
      if (typeof x !== 'number') throw TO_PROTOBUFJS;
      splitSint64(x);
      return 1 + varint64Size();
    case 8:
    case 15:
      return measureUint64(x);
    case 9:
      if (typeof x !== 'number') throw TO_PROTOBUFJS;
      return 5;
    case 10:
      if (typeof x !== 'number') throw TO_PROTOBUFJS;
      return 9;
    case 11:
      return closeNested(openNested(), 1, measureDecimal(x as Decimal, depth + 1));
    case 12:
    case 13:
      return measureString(x);
    case 14:
      if (typeof x !== 'boolean') throw TO_PROTOBUFJS;
      return 2;
    case 16:
      return closeNested(openNested(), 2, measureArray(x as FieldArray, depth + 1));
    case 17:
      return closeNested(openNested(), 2, measureTable(x as FieldTable, depth + 1));
    case 18:
      if (!(x instanceof Uint8Array)) throw TO_PROTOBUFJS;
      return 1 + lenFieldSize(x.length);
    default:
      // 19, void: an empty message (whatever the object holds, it has no field to write).
      if (typeof x !== 'object') throw TO_PROTOBUFJS;
      checkEncodeDepth(depth + 1);
      return closeNested(openNested(), 2, 0);
  }
}

function writeString(out: Uint8Array, p: number, tag: number, s: unknown): number {
  return writeStringField(out, p, tag, s as string, sizes[next++] as number);
}

function writeTag(out: Uint8Array, p: number, tag: number): number {
  out[p] = tag;
  return p + 1;
}

/** Writes a nested message field's tag (the varint `tag`) and its measured length. */
function writeNestedHeader(out: Uint8Array, p: number, tag: number): number {
  return writeVarint32(out, writeVarint32(out, p, tag), sizes[next++] as number);
}

function writeProperties(out: Uint8Array, p: number, m: BasicProperties): number {
  if (own(m, m.contentType, 'contentType')) p = writeString(out, p, 0x0a, m.contentType);
  if (own(m, m.contentEncoding, 'contentEncoding')) p = writeString(out, p, 0x12, m.contentEncoding);
  if (own(m, m.headers, 'headers'))
    p = writeTable(out, writeNestedHeader(out, p, 0x1a), m.headers as FieldTable);
  if (own(m, m.deliveryMode, 'deliveryMode'))
    p = writeVarint32(out, writeTag(out, p, 0x20), (m.deliveryMode as number) >>> 0);
  if (own(m, m.priority, 'priority'))
    p = writeVarint32(out, writeTag(out, p, 0x28), (m.priority as number) >>> 0);
  if (own(m, m.correlationId, 'correlationId')) p = writeString(out, p, 0x32, m.correlationId);
  if (own(m, m.replyTo, 'replyTo')) p = writeString(out, p, 0x3a, m.replyTo);
  if (own(m, m.expiration, 'expiration')) p = writeString(out, p, 0x42, m.expiration);
  if (own(m, m.messageId, 'messageId')) p = writeString(out, p, 0x4a, m.messageId);
  if (own(m, m.timestamp, 'timestamp')) {
    splitUint64(m.timestamp as number);
    p = writeVarint64(out, writeTag(out, p, 0x50));
  }
  if (own(m, m.type, 'type')) p = writeString(out, p, 0x5a, m.type);
  if (own(m, m.userId, 'userId')) p = writeString(out, p, 0x62, m.userId);
  if (own(m, m.appId, 'appId')) p = writeString(out, p, 0x6a, m.appId);
  if (own(m, m.clusterId, 'clusterId')) p = writeString(out, p, 0x72, m.clusterId);
  return p;
}

function writeTable(out: Uint8Array, p: number, t: FieldTable): number {
  const entries = t.entries;
  if (entries != null && entries.length > 0) {
    for (let i = 0; i < entries.length; i++) {
      p = writeEntry(out, writeNestedHeader(out, p, 0x0a), entries[i] as FieldEntry);
    }
  }
  return p;
}

function writeEntry(out: Uint8Array, p: number, e: FieldEntry): number {
  if (own(e, e.key, 'key') && e.key !== '') p = writeString(out, p, 0x0a, e.key);
  if (own(e, e.value, 'value'))
    p = writeValue(out, writeNestedHeader(out, p, 0x12), e.value as unknown as Mutable);
  return p;
}

function writeArray(out: Uint8Array, p: number, a: FieldArray): number {
  const values = a.values;
  if (values != null && values.length > 0) {
    for (let i = 0; i < values.length; i++) {
      p = writeValue(out, writeNestedHeader(out, p, 0x0a), values[i] as unknown as Mutable);
    }
  }
  return p;
}

function writeDecimal(out: Uint8Array, p: number, d: Decimal): number {
  if (own(d, d.scale, 'scale') && d.scale !== 0)
    p = writeVarint32(out, writeTag(out, p, 0x08), d.scale >>> 0);
  if (own(d, d.value, 'value') && d.value !== 0)
    p = writeVarint32(out, writeTag(out, p, 0x10), zigzag32(d.value));
  return p;
}

function writeValue(out: Uint8Array, p: number, v: Mutable): number {
  let count = sizes[next++] as number;
  while (count-- > 0) {
    const field = sizes[next++] as number;
    const x = v[VALUE_MEMBERS[field] as string];
    switch (field) {
      case 1:
      case 3:
      case 5:
        p = writeVarint32(out, writeTag(out, p, field << 3), zigzag32(x as number));
        break;
      case 2:
      case 4:
      case 6:
        p = writeVarint32(out, writeTag(out, p, field << 3), (x as number) >>> 0);
        break;
      case 7:
        splitSint64(x as number);
        p = writeVarint64(out, writeTag(out, p, 0x38));
        break;
      case 8:
      case 15:
        splitUint64(x as number);
        p = writeVarint64(out, writeTag(out, p, field << 3));
        break;
      case 9:
        p = writeFloat(out, writeTag(out, p, 0x4d), x as number);
        break;
      case 10:
        p = writeDouble(out, writeTag(out, p, 0x51), x as number);
        break;
      case 11:
        p = writeDecimal(out, writeNestedHeader(out, p, 0x5a), x as Decimal);
        break;
      case 12:
        p = writeString(out, p, 0x62, x);
        break;
      case 13:
        p = writeString(out, p, 0x6a, x);
        break;
      case 14:
        out[p++] = 0x70;
        out[p++] = x ? 1 : 0;
        break;
      case 16:
        p = writeArray(out, writeNestedHeader(out, p, ARRAY_TAG), x as FieldArray);
        break;
      case 17:
        p = writeTable(out, writeNestedHeader(out, p, TABLE_TAG), x as FieldTable);
        break;
      case 18: {
        const bytes = x as Uint8Array;
        p = writeVarint32(out, writeVarint32(out, p, BYTE_ARRAY_TAG), bytes.length);
        out.set(bytes, p);
        p += bytes.length;
        break;
      }
      default:
        p = writeNestedHeader(out, p, VOID_TAG);
        break;
    }
  }
  return p;
}

/**
 * The protobuf encoding of `properties`: the bytes protobufjs's encoder writes for the same object
 * (members and fields read as own enumerable properties). Throws protobufjs's "max depth exceeded" for
 * headers nested beyond its recursion limit.
 */
export function encodePropertiesMessage(properties: BasicProperties): Uint8Array {
  sizes.length = 0;
  encodeDepthLimit = protobuf.util.recursionLimit;
  let size: number;
  try {
    size = measureProperties(properties, 0);
  } catch (err) {
    if (err !== TO_PROTOBUFJS) throw err;
    return PropertiesType.encode(properties).finish();
  }
  const out = alloc(size);
  next = 0;
  const end = writeProperties(out, 0, properties);
  if (end !== size) throw new Error(`BasicProperties encoding wrote ${end} bytes of ${size}`);
  return out;
}
