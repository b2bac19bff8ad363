/**
 * Byte primitives of the storage encodings: unsigned LEB128 varints for lengths, counts and ids
 * (safe integers, so up to 8 bytes), float64 big-endian, and UTF-8 strings with a varint length.
 *
 * Encoders work in two passes — measure, then write into one exactly sized `Buffer` — so an
 * encoding costs one allocation (Node's `Buffer.allocUnsafe` takes small ones from its pool).
 */
import { StoredBytesCorruptedError } from './errors.ts';

/** Bytes a varint of `n` takes (n: a non-negative safe integer). */
export function varintSize(n: number): number {
  if (n < 0x80) return 1;
  if (n < 0x4000) return 2;
  if (n < 0x20_0000) return 3;
  if (n < 0x1000_0000) return 4;
  let size = 4;
  let rest = Math.floor(n / 0x1000_0000);
  while (rest > 0) {
    size++;
    rest = Math.floor(rest / 0x80);
  }
  return size;
}

/** Throws unless `n` can be written as a varint. */
export function checkVarint(n: number, what: string): void {
  if (!Number.isSafeInteger(n) || n < 0)
    throw new RangeError(`${what} must be a non-negative safe integer, got ${n}`);
}

/** Write `n` at `pos`; returns the position after it. */
export function writeVarint(buf: Uint8Array, pos: number, n: number): number {
  // Bit operations are exact below 2^31; above, fall back to division.
  while (n >= 0x8000_0000) {
    buf[pos++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  while (n >= 0x80) {
    buf[pos++] = (n & 0x7f) | 0x80;
    n >>>= 7;
  }
  buf[pos++] = n;
  return pos;
}

/** UTF-8 byte length of `s`. */
export function utf8Size(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Write a string whose UTF-8 length is `size` as [varint size][UTF-8]; returns the next position. */
export function writeString(buf: Buffer, pos: number, s: string, size: number): number {
  pos = writeVarint(buf, pos, size);
  if (size > 0) buf.write(s, pos, size, 'utf8');
  return pos + size;
}

/** A `Buffer` view of `bytes` (no copy). */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Reads what the writers above wrote. Every read checks bounds and throws
 * `StoredBytesCorruptedError` (naming `what`) on truncated or malformed input.
 */
/** Whether `a` and `b` hold the same bytes (a loop: meant for short fields, where it beats a native call). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  const length = a.byteLength;
  if (length !== b.byteLength) return false;
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Whether `bytes[start, end)` holds exactly `kept`, compared in place (no view of the field made):
 * how a decoder recognises a field that repeats the last one it decoded.
 */
export function sameBytesAt(bytes: Uint8Array, start: number, end: number, kept: Uint8Array): boolean {
  const length = kept.byteLength;
  if (end - start !== length) return false;
  for (let i = 0; i < length; i++) if (bytes[start + i] !== kept[i]) return false;
  return true;
}

/** Text of a field that mostly repeats (repeated-text.ts `RepeatedText`). */
export interface RepeatedField {
  decodeAt(bytes: Uint8Array, start: number, end: number): string;
}

export class ByteCursor {
  readonly #buf: Buffer;
  readonly #what: string;
  #pos: number;

  constructor(bytes: Uint8Array, what: string, start = 0) {
    this.#buf = asBuffer(bytes);
    this.#what = what;
    this.#pos = start;
  }

  get position(): number {
    return this.#pos;
  }

  get remaining(): number {
    return this.#buf.length - this.#pos;
  }

  u8(): number {
    if (this.#pos >= this.#buf.length) this.#fail('truncated');
    return this.#buf[this.#pos++] as number;
  }

  varint(): number {
    const buf = this.#buf;
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      if (this.#pos >= buf.length) this.#fail('truncated varint');
      const byte = buf[this.#pos++] as number;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(result)) this.#fail('varint beyond 2^53');
        return result;
      }
      scale *= 0x80;
    }
    return this.#fail('varint longer than 8 bytes');
  }

  f64(): number {
    if (this.#pos + 8 > this.#buf.length) this.#fail('truncated float64');
    const value = this.#buf.readDoubleBE(this.#pos);
    this.#pos += 8;
    return value;
  }

  bool(): boolean {
    const byte = this.u8();
    if (byte > 1) this.#fail(`bad boolean ${byte}`);
    return byte === 1;
  }

  string(): string {
    const size = this.varint();
    if (size > this.remaining) this.#fail('truncated string');
    const start = this.#pos;
    this.#pos += size;
    return size === 0 ? '' : this.#buf.toString('utf8', start, this.#pos);
  }

  /** `string()` through `field`: a repeat of the last text it decoded comes back as the same string. */
  repeatedString(field: RepeatedField): string {
    const size = this.varint();
    if (size > this.remaining) this.#fail('truncated string');
    const start = this.#pos;
    this.#pos += size;
    return size === 0 ? '' : field.decodeAt(this.#buf, start, this.#pos);
  }

  /** Step over the next `size` bytes. */
  skip(size: number): void {
    if (size > this.remaining) this.#fail('truncated bytes');
    this.#pos += size;
  }

  /** The next `size` bytes, as a view (no copy). */
  bytes(size: number): Buffer {
    if (size > this.remaining) this.#fail('truncated bytes');
    const start = this.#pos;
    this.#pos += size;
    return this.#buf.subarray(start, this.#pos);
  }

  /** Everything after the current position, as a view (no copy). */
  rest(): Buffer {
    const start = this.#pos;
    this.#pos = this.#buf.length;
    return this.#buf.subarray(start);
  }

  /** Throws unless every byte was read. */
  end(): void {
    if (this.#pos !== this.#buf.length) this.#fail(`${this.remaining} unexpected trailing bytes`);
  }

  #fail(detail: string): never {
    throw new StoredBytesCorruptedError(this.#what, `${detail} at byte ${this.#pos}`);
  }
}
