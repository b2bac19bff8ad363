// Reading protobuf by hand, exactly as protobufjs 8 reads it: the primitives of the hand-written decoders
// (fast-codec.ts, properties-codec.ts). Each mirrors one protobuf.Reader method (or number-reader.ts's
// 64-bit ones), its limits and its failures included, so a hand decoder accepts exactly what the
// generated protobufjs decoder accepts and gives the same values:
//  - a tag has at most 5 bytes, the fifth carrying 4 bits (Reader#tag);
//  - a length has at most 5 bytes, the fifth at most 7, so below 2^31 (Reader#size);
//  - a uint32 is the low 32 bits of a varint of at most 10 bytes (Reader#uint32);
//  - a bool is true when any of at most 10 varint bytes has a bit set (Reader#bool);
//  - 64-bit varints become numbers, exact up to 2^53 - 1 (number-reader.ts);
//  - strings must be valid UTF-8 (Reader#stringVerify, what proto3 strings use);
//  - bytes are views of the input (a Buffer when the input is one), never copies;
//  - unknown fields are skipped by wire type, groups nested at most to protobufjs's recursion limit.
//
// The input and the read position are one shared cursor rather than a reader object per message, so
// reading allocates nothing. Decoding is synchronous and never re-entered.
import protobuf from 'protobufjs';
import { scanVarint64, sint64Value, uint64Value } from './number-reader.ts';
import { EMPTY_BYTES } from './schema.ts';

const utf8 = protobuf.util.utf8;

/** Wire types. */
export const VARINT = 0;
export const FIXED64 = 1;
export const LEN = 2;
export const FIXED32 = 5;

/** What is being read: `buf`, at `pos`. Set by the decoder that starts reading (see `startReading`). */
export const cursor: { buf: Uint8Array; pos: number } = { buf: EMPTY_BYTES, pos: 0 };

/** protobufjs's nesting limit, Reader.recursionLimit: read once per decode (see `startReading`). */
let depthLimit = 100;

/** Reads `bytes` from the start. */
export function startReading(bytes: Uint8Array): void {
  cursor.buf = bytes;
  cursor.pos = 0;
  depthLimit = protobuf.Reader.recursionLimit;
}

/** Releases the input, so it does not outlive the decode through the cursor. */
export function stopReading(): void {
  cursor.buf = EMPTY_BYTES;
  cursor.pos = 0;
}

export function outOfRange(need: number, end: number): RangeError {
  return new RangeError(`index out of range: ${cursor.pos} + ${need} > ${end}`);
}

/** Fails as protobufjs does for a message (or a group) nested deeper than its limit. */
export function checkDepth(depth: number): void {
  if (depth > depthLimit) throw new Error('max depth exceeded');
}

/** A varint of at most 4 bytes ending before `end` (how protobufjs reads a varint32 near a limit). */
function readVarint32NearEnd(end: number): number {
  const buf = cursor.buf;
  let value = 0;
  for (let i = 0; i < 4; i++) {
    if (cursor.pos >= end) throw outOfRange(1, end);
    const b = buf[cursor.pos++] as number;
    value = (value | ((b & 127) << (i * 7))) >>> 0;
    if (b < 128) return value;
  }
  throw outOfRange(1, end);
}

/**
 * The first four bytes of a multi-byte varint32 (at least 5 bytes are left before the limit): the value
 * so far (below 2^28). `fifthByteDue` tells whether the varint continues into a fifth byte, then at `pos`.
 */
let fifthByteDue = false;
function readVarint32Head(): number {
  const buf = cursor.buf;
  let p = cursor.pos;
  let b = buf[p++] as number;
  let value = b & 127;
  b = buf[p++] as number;
  value |= (b & 127) << 7;
  if (b < 128) {
    cursor.pos = p;
    fifthByteDue = false;
    return value;
  }
  b = buf[p++] as number;
  value |= (b & 127) << 14;
  if (b < 128) {
    cursor.pos = p;
    fifthByteDue = false;
    return value;
  }
  b = buf[p++] as number;
  value |= (b & 127) << 21;
  cursor.pos = p;
  fifthByteDue = b >= 128;
  return value;
}

/** A field tag (Reader#tag). */
export function readTag(end: number): number {
  if (cursor.pos >= end) throw outOfRange(1, end);
  const first = cursor.buf[cursor.pos] as number;
  if (first < 128) {
    cursor.pos++;
    return first;
  }
  if (end - cursor.pos < 5) return readVarint32NearEnd(end);
  const value = readVarint32Head();
  if (!fifthByteDue) return value;
  const b = cursor.buf[cursor.pos++] as number;
  if (b < 128 && (b & 112) === 0) return (value | (b << 28)) >>> 0;
  throw new Error('invalid tag encoding');
}

/** A length prefix (Reader#size). */
export function readSize(end: number): number {
  if (cursor.pos >= end) throw outOfRange(1, end);
  const first = cursor.buf[cursor.pos] as number;
  if (first < 128) {
    cursor.pos++;
    return first;
  }
  if (end - cursor.pos < 5) return readVarint32NearEnd(end);
  const value = readVarint32Head();
  if (!fifthByteDue) return value;
  const b = cursor.buf[cursor.pos++] as number;
  if (b > 7) throw new Error('invalid length encoding');
  return (value | (b << 28)) >>> 0;
}

/** A uint32 (Reader#uint32). */
export function readUint32(end: number): number {
  if (cursor.pos >= end) throw outOfRange(1, end);
  const first = cursor.buf[cursor.pos] as number;
  if (first < 128) {
    cursor.pos++;
    return first;
  }
  if (end - cursor.pos < 5) return readVarint32NearEnd(end);
  let value = readVarint32Head();
  if (!fifthByteDue) return value;
  const b = cursor.buf[cursor.pos++] as number;
  value = (value | ((b & 15) << 28)) >>> 0;
  if (b < 128) return value;
  // Bytes 6..10 carry bits beyond 32: skipped, as protobufjs does.
  for (let i = 0; i < 5; i++) {
    if (cursor.pos >= end) throw outOfRange(1, end);
    if ((cursor.buf[cursor.pos++] as number) < 128) return value;
  }
  throw new Error('invalid varint encoding');
}

/** A zigzag sint32 (Reader#sint32). */
export function readSint32(end: number): number {
  const value = readUint32(end);
  return ((value >>> 1) ^ -(value & 1)) | 0;
}

/** A bool (Reader#bool). */
export function readBool(end: number): boolean {
  const buf = cursor.buf;
  let value = false;
  for (let i = 0; i < 10; i++) {
    if (cursor.pos >= end) throw outOfRange(1, end);
    const b = buf[cursor.pos++] as number;
    if ((b & 127) !== 0) value = true;
    if (b < 128) return value;
  }
  throw new Error('invalid varint encoding');
}

/** A varint of at most 10 bytes into number-reader.ts's `lo`/`hi` (its `scanVarint64`). */
function readVarint64(end: number): void {
  const next = scanVarint64(cursor.buf, cursor.pos, end);
  if (next < 0) {
    cursor.pos = end;
    throw outOfRange(1, end);
  }
  cursor.pos = next;
}

/** A uint64 as a number (number-reader.ts's uint64). */
export function readUint64(end: number): number {
  const first = cursor.buf[cursor.pos] as number;
  if (cursor.pos < end && first < 128) {
    cursor.pos++;
    return first;
  }
  readVarint64(end);
  return uint64Value();
}

/** A zigzag sint64 as a number (number-reader.ts's sint64). */
export function readSint64(end: number): number {
  readVarint64(end);
  return sint64Value();
}

// Little-endian float conversion through shared scratch memory, as protobufjs's util.float does.
const scratch = new Uint8Array(8);
const scratchView = new DataView(scratch.buffer);

/** A float (Reader#float). */
export function readFloat(end: number): number {
  if (cursor.pos + 4 > end) throw outOfRange(4, end);
  const buf = cursor.buf;
  const p = cursor.pos;
  for (let i = 0; i < 4; i++) scratch[i] = buf[p + i] as number;
  cursor.pos = p + 4;
  return scratchView.getFloat32(0, true);
}

/** A double (Reader#double). */
export function readDouble(end: number): number {
  if (cursor.pos + 8 > end) throw outOfRange(8, end);
  const buf = cursor.buf;
  const p = cursor.pos;
  for (let i = 0; i < 8; i++) scratch[i] = buf[p + i] as number;
  cursor.pos = p + 8;
  return scratchView.getFloat64(0, true);
}

/** The start of a length-delimited field's content, whose end is then `pos` (checked against `end`). */
export function readLengthDelimited(end: number): number {
  const length = readSize(end);
  const start = cursor.pos;
  if (start + length > end) throw outOfRange(length, end);
  cursor.pos = start + length;
  return start;
}

/** A string (Reader#stringVerify): invalid UTF-8 throws. */
export function readString(end: number): string {
  const start = readLengthDelimited(end);
  return start === cursor.pos ? '' : utf8.readStrict(cursor.buf, start, cursor.pos);
}

/** Bytes (Reader#bytes): a view of the input, empty ones too. */
export function readBytes(end: number): Uint8Array {
  const start = readLengthDelimited(end);
  return cursor.buf.subarray(start, cursor.pos);
}

/** Bytes of a field without presence: empty reads as the decoder's default, the shared EMPTY_BYTES. */
export function readBytesOrDefault(end: number): Uint8Array {
  const start = readLengthDelimited(end);
  return start === cursor.pos ? EMPTY_BYTES : cursor.buf.subarray(start, cursor.pos);
}

function skipBytes(n: number, end: number): void {
  if (cursor.pos + n > end) throw outOfRange(n, end);
  cursor.pos += n;
}

/**
 * Skips one field of wire type `wireType` (Reader#skipType) in a message at nesting `depth` (the Batch,
 * or a BasicProperties decoded on its own, is 0).
 */
export function skipField(wireType: number, depth: number, field: number, end: number): void {
  checkDepth(depth);
  if (field === 0) throw new Error('illegal tag: field number 0');
  switch (wireType) {
    case 0: {
      const buf = cursor.buf;
      do {
        if (cursor.pos >= end) throw outOfRange(1, end);
      } while (((buf[cursor.pos++] as number) & 128) !== 0);
      return;
    }
    case 1:
      skipBytes(8, end);
      return;
    case 2:
      skipBytes(readSize(end), end);
      return;
    case 3:
      for (;;) {
        const tag = readTag(end);
        const nested = tag >>> 3;
        if (nested === 0) throw new Error('illegal tag: field number 0');
        if ((tag & 7) === 4) {
          if (nested !== field) throw new Error('invalid end group tag');
          return;
        }
        skipField(tag & 7, depth + 1, nested, end);
      }
    case 5:
      skipBytes(4, end);
      return;
    default:
      throw new Error(`invalid wire type ${wireType} at offset ${cursor.pos}`);
  }
}
