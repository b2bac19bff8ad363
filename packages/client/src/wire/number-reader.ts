// protobufjs readers that decode 64-bit integers to plain JS numbers instead of Long objects.
//
// protobufjs picks Long or number once, globally, from whether the `long` package is present (it
// always is: protobufjs depends on it). Subclassing the reader keeps the choice local to the wire
// codec. Numbers are exact up to 2^53 - 1; above that the nearest double is returned, as amqplib
// does for its own 64-bit fields.
import protobuf from 'protobufjs';

const TWO_32 = 4294967296;

// The two 32-bit halves of the last varint read. Module-level so reading allocates nothing.
let lo = 0;
let hi = 0;

/**
 * Scans a base-128 varint of up to 10 bytes at `buf[pos]`, not reading at or past `end`, into the
 * module's `lo`/`hi` halves. Returns the position after it, or -1 when `end` cuts it short; throws
 * when it runs past 10 bytes. Shared by the protobufjs readers here and the hand-written decoder
 * (wire-reader.ts), which read the halves with `uint64Value` / `sint64Value`.
 */
export function scanVarint64(buf: Uint8Array, pos: number, end: number): number {
  let l = 0;
  let h = 0;
  for (let i = 0; i < 10; i++) {
    if (pos >= end) return -1;
    const b = buf[pos++] as number;
    const bits = b & 0x7f;
    if (i < 4) {
      l |= bits << (7 * i);
    } else if (i === 4) {
      // Bits 28..34: the low 4 bits finish `lo`, the high 3 start `hi`.
      l |= bits << 28;
      h |= bits >>> 4;
    } else {
      h |= bits << (7 * i - 32);
    }
    if (b < 0x80) {
      lo = l >>> 0;
      hi = h >>> 0;
      return pos;
    }
  }
  throw new Error('invalid varint encoding');
}

/** The last scanned varint as an unsigned number (exact up to 2^53 - 1). */
export function uint64Value(): number {
  return unsignedValue();
}

/** The last scanned varint as a zigzag-encoded signed number (sint64). */
export function sint64Value(): number {
  zigzagDecode();
  return signedValue();
}

/** Reads a base-128 varint of up to 10 bytes into `lo`/`hi` (both unsigned 32-bit). */
function readVarint64(r: protobuf.Reader): void {
  const next = scanVarint64(r.buf, r.pos, r.len);
  if (next < 0) {
    r.pos = r.len;
    throw new RangeError(`index out of range: ${r.pos} >= ${r.len}`);
  }
  r.pos = next;
}

/** Reads 8 little-endian bytes into `lo`/`hi`. */
function readFixed64(r: protobuf.Reader): void {
  if (r.pos + 8 > r.len) throw new RangeError(`index out of range: ${r.pos} + 8 > ${r.len}`);
  const b = r.buf;
  const p = r.pos;
  lo =
    ((b[p] as number) |
      ((b[p + 1] as number) << 8) |
      ((b[p + 2] as number) << 16) |
      ((b[p + 3] as number) << 24)) >>>
    0;
  hi =
    ((b[p + 4] as number) |
      ((b[p + 5] as number) << 8) |
      ((b[p + 6] as number) << 16) |
      ((b[p + 7] as number) << 24)) >>>
    0;
  r.pos = p + 8;
}

function unsignedValue(): number {
  return hi * TWO_32 + lo;
}

/** The two's-complement value of `hi:lo`. */
function signedValue(): number {
  if (hi >>> 31 === 0) return hi * TWO_32 + lo;
  // Negate: invert and add one, carrying from the low half into the high half.
  const nlo = (~lo + 1) >>> 0;
  let nhi = ~hi >>> 0;
  if (nlo === 0) nhi = (nhi + 1) >>> 0;
  return -(nhi * TWO_32 + nlo);
}

/** Undoes zigzag encoding in place: 0 → 0, 1 → -1, 2 → 1, 3 → -2, ... */
function zigzagDecode(): void {
  const mask = -(lo & 1);
  lo = (((lo >>> 1) | (hi << 31)) ^ mask) >>> 0;
  hi = ((hi >>> 1) ^ mask) >>> 0;
}

const numberMethods = {
  int64(this: protobuf.Reader): number {
    readVarint64(this);
    return signedValue();
  },
  uint64(this: protobuf.Reader): number {
    readVarint64(this);
    return unsignedValue();
  },
  sint64(this: protobuf.Reader): number {
    readVarint64(this);
    return sint64Value();
  },
  fixed64(this: protobuf.Reader): number {
    readFixed64(this);
    return unsignedValue();
  },
  sfixed64(this: protobuf.Reader): number {
    readFixed64(this);
    return signedValue();
  },
};

/** A Uint8Array reader (browsers, or plain Uint8Arrays in Node); bytes fields are subarray views. */
class NumberReader extends protobuf.Reader {
  constructor(buffer: Uint8Array) {
    super(buffer);
    // Unknown fields (from a newer peer) are skipped rather than kept on the message.
    this.discardUnknown = true;
  }
}

/** A Node Buffer reader: faster strings, and bytes fields are Buffer views into the input. */
class NumberBufferReader extends protobuf.BufferReader {
  constructor(buffer: Buffer) {
    super(buffer);
    this.discardUnknown = true;
  }
}

Object.assign(NumberReader.prototype, numberMethods);
Object.assign(NumberBufferReader.prototype, numberMethods);

/**
 * A reader over `bytes` that yields numbers for 64-bit fields. A Node Buffer gets a BufferReader, so
 * decoded bytes fields are Buffers (what amqplib hands applications); anything else gets Uint8Arrays.
 */
export function createNumberReader(bytes: Uint8Array): protobuf.Reader {
  const NodeBuffer = protobuf.util.Buffer as typeof Buffer | null;
  if (NodeBuffer?.isBuffer(bytes)) return new NumberBufferReader(bytes);
  return new NumberReader(bytes);
}
