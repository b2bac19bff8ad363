// Writing protobuf by hand: the primitives of the hand-written encoders (fast-codec.ts,
// properties-codec.ts). Encoders measure first, allocate once, then write front to back; every writer
// takes the output and a position and returns the position after what it wrote. Values are converted as
// protobufjs's Writer converts them (uint32 `>>> 0`, sint32 zigzag of `| 0`, 64-bit numbers through
// LongBits.fromNumber), so the bytes are the ones protobufjs writes.
//
// Strings are written as well-formed UTF-8: a lone surrogate becomes U+FFFD (3 bytes), as TextEncoder
// and Node's Buffer write it. protobufjs writes a lone surrogate in strings under 40 characters as its
// own 3 bytes, which are not UTF-8 and which its own decoder then refuses; every other string gives the
// same bytes.
import protobuf from 'protobufjs';

const NodeBuffer = protobuf.util.Buffer as unknown as typeof Buffer | null;
const TWO_32 = 4294967296;

/** Strings longer than this (in UTF-16 units) are written by TextEncoder, shorter ones by a loop. */
const ENCODER_MIN_LENGTH = 64;
const textEncoder = new TextEncoder();

/** `size` bytes to write into, uninitialised (a Buffer from Node's pool when small). */
export function alloc(size: number): Uint8Array {
  return NodeBuffer !== null ? NodeBuffer.allocUnsafe(size) : new Uint8Array(size);
}

/** Bytes of `n` (0 ≤ n < 2^32) as a varint. */
export function varint32Size(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
}

/** Writes `n` (0 ≤ n < 2^32) as a varint. */
export function writeVarint32(out: Uint8Array, p: number, n: number): number {
  while (n > 127) {
    out[p++] = (n & 127) | 128;
    n >>>= 7;
  }
  out[p++] = n;
  return p;
}

/** Bytes of a length-delimited field of `length` bytes with a one-byte tag. */
export function lenFieldSize(length: number): number {
  return 1 + varint32Size(length) + length;
}

/** The zigzag encoding of a sint32 (Writer#sint32). */
export function zigzag32(value: number): number {
  return ((value << 1) ^ (value >> 31)) >>> 0;
}

// A 64-bit varint's two 32-bit halves, set by splitUint64 / splitSint64 and read by varint64Size /
// writeVarint64 (measure, then write, with nothing split in between).
let lo = 0;
let hi = 0;

/** `n` as protobufjs's LongBits.fromNumber splits it: two's complement when negative, fractions cut. */
export function splitUint64(n: number): void {
  const negative = n < 0;
  const magnitude = negative ? -n : n;
  lo = magnitude >>> 0;
  hi = ((magnitude - lo) / TWO_32) >>> 0;
  if (negative) {
    hi = ~hi >>> 0;
    lo = (~lo + 1) >>> 0;
    if (lo === 0) hi = (hi + 1) >>> 0;
  }
}

/** `n` zigzag-encoded as a sint64 (LongBits.fromNumber, then zzEncode). */
export function splitSint64(n: number): void {
  splitUint64(n);
  const mask = hi >> 31;
  hi = (((hi << 1) | (lo >>> 31)) ^ mask) >>> 0;
  lo = ((lo << 1) ^ mask) >>> 0;
}

/** Bytes of the last split 64-bit value as a varint. */
export function varint64Size(): number {
  return hi === 0 ? varint32Size(lo) : Math.ceil((64 - Math.clz32(hi)) / 7);
}

/** Writes the last split 64-bit value as a varint. */
export function writeVarint64(out: Uint8Array, p: number): number {
  let l = lo;
  let h = hi;
  while (h !== 0) {
    out[p++] = (l & 127) | 128;
    l = ((l >>> 7) | (h << 25)) >>> 0;
    h >>>= 7;
  }
  return writeVarint32(out, p, l);
}

/** UTF-8 bytes of `s` (a lone surrogate counts 3, as U+FFFD). */
export function utf8Length(s: string): number {
  let length = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) length += 1;
    else if ((c & 0xfc00) === 0xd800 && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      // A pair: 2 units, 4 bytes.
      length += 2;
      i++;
    } else length += 2;
  }
  return length;
}

/** Writes `s` as UTF-8 (`length` = utf8Length(s)); returns the position after it. */
export function writeUtf8(out: Uint8Array, p: number, s: string, length: number): number {
  if (s.length > ENCODER_MIN_LENGTH) {
    textEncoder.encodeInto(s, out.subarray(p, p + length));
    return p + length;
  }
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[p++] = c;
    } else if (c < 0x800) {
      out[p++] = (c >> 6) | 0xc0;
      out[p++] = (c & 63) | 0x80;
    } else {
      if ((c & 0xf800) === 0xd800) {
        const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if ((c & 0xfc00) === 0xd800 && (next & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c & 0x3ff) << 10) + (next & 0x3ff);
          i++;
          out[p++] = (c >> 18) | 0xf0;
          out[p++] = ((c >> 12) & 63) | 0x80;
          out[p++] = ((c >> 6) & 63) | 0x80;
          out[p++] = (c & 63) | 0x80;
          continue;
        }
        c = 0xfffd; // a lone surrogate
      }
      out[p++] = (c >> 12) | 0xe0;
      out[p++] = ((c >> 6) & 63) | 0x80;
      out[p++] = (c & 63) | 0x80;
    }
  }
  return p;
}

/** Writes a string field (tag, length, UTF-8), `length` being its utf8Length. */
export function writeStringField(out: Uint8Array, p: number, tag: number, s: string, length: number): number {
  out[p++] = tag;
  p = writeVarint32(out, p, length);
  return writeUtf8(out, p, s, length);
}

/** Writes a bytes field (tag, length, bytes). */
export function writeBytesField(out: Uint8Array, p: number, tag: number, bytes: Uint8Array): number {
  out[p++] = tag;
  p = writeVarint32(out, p, bytes.length);
  out.set(bytes, p);
  return p + bytes.length;
}

// Little-endian float conversion through shared scratch memory, as protobufjs's util.float does.
const scratch = new Uint8Array(8);
const scratchView = new DataView(scratch.buffer);

/** Writes a float (Writer#float): 4 bytes, little-endian. */
export function writeFloat(out: Uint8Array, p: number, value: number): number {
  scratchView.setFloat32(0, value, true);
  for (let i = 0; i < 4; i++) out[p + i] = scratch[i] as number;
  return p + 4;
}

/** Writes a double (Writer#double): 8 bytes, little-endian. */
export function writeDouble(out: Uint8Array, p: number, value: number): number {
  scratchView.setFloat64(0, value, true);
  for (let i = 0; i < 8; i++) out[p + i] = scratch[i] as number;
  return p + 8;
}
