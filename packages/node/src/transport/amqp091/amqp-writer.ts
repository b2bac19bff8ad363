import { AmqpEncodeError } from './codec-error.ts';

const TWO_32 = 0x1_0000_0000;
const MAX_U64 = 2n ** 64n - 1n;
const MIN_I64 = -(2n ** 63n);
const MAX_I64 = 2n ** 63n - 1n;

function checkInt(v: number, min: number, max: number, what: string): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new AmqpEncodeError(`${what} must be an integer in ${min}..${max}, got ${v}`);
  }
}

/**
 * A growable buffer writing AMQP 0-9-1's primitive types big-endian. Values out of a type's range
 * throw AmqpEncodeError (our bug, not the peer's) before anything is written. Reused across
 * frames: `reset()` keeps the grown buffer, so steady-state encoding allocates only the frame
 * that is handed out (`take()`).
 */
export class AmqpWriter {
  buf: Buffer;
  pos = 0;

  constructor(initialCapacity = 512) {
    this.buf = Buffer.allocUnsafe(initialCapacity);
  }

  reset(): this {
    this.pos = 0;
    return this;
  }

  /** Makes room for `n` more bytes. */
  ensure(n: number): void {
    const needed = this.pos + n;
    if (needed <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < needed) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** A copy of what was written, sized exactly (the writer's buffer is reused). */
  take(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }

  octet(v: number): void {
    checkInt(v, 0, 0xff, 'octet');
    this.ensure(1);
    this.buf[this.pos++] = v;
  }

  int8(v: number): void {
    checkInt(v, -0x80, 0x7f, 'signed octet');
    this.ensure(1);
    this.buf.writeInt8(v, this.pos++);
  }

  short(v: number): void {
    checkInt(v, 0, 0xffff, 'short');
    this.ensure(2);
    this.buf.writeUInt16BE(v, this.pos);
    this.pos += 2;
  }

  int16(v: number): void {
    checkInt(v, -0x8000, 0x7fff, 'signed short');
    this.ensure(2);
    this.buf.writeInt16BE(v, this.pos);
    this.pos += 2;
  }

  long(v: number): void {
    checkInt(v, 0, 0xffff_ffff, 'long');
    this.ensure(4);
    this.buf.writeUInt32BE(v, this.pos);
    this.pos += 4;
  }

  int32(v: number): void {
    checkInt(v, -0x8000_0000, 0x7fff_ffff, 'signed long');
    this.ensure(4);
    this.buf.writeInt32BE(v, this.pos);
    this.pos += 4;
  }

  /** Unsigned 64-bit from a JS number (integers only; exact up to 2^53 - 1). */
  longlong(v: number): void {
    this.ensure(8);
    if (Number.isSafeInteger(v) && v >= 0) {
      const high = Math.floor(v / TWO_32);
      this.buf.writeUInt32BE(high, this.pos);
      this.buf.writeUInt32BE(v - high * TWO_32, this.pos + 4);
    } else {
      if (!Number.isInteger(v) || BigInt(v) < 0n || BigInt(v) > MAX_U64) {
        throw new AmqpEncodeError(`longlong must be an integer in 0..2^64-1, got ${v}`);
      }
      this.buf.writeBigUInt64BE(BigInt(v), this.pos);
    }
    this.pos += 8;
  }

  /** Signed 64-bit from a JS number (integers only; exact within ±(2^53 - 1)). */
  int64(v: number): void {
    if (!Number.isInteger(v) || BigInt(v) < MIN_I64 || BigInt(v) > MAX_I64) {
      throw new AmqpEncodeError(`signed longlong must be an integer in -2^63..2^63-1, got ${v}`);
    }
    this.ensure(8);
    this.buf.writeBigInt64BE(BigInt(v), this.pos);
    this.pos += 8;
  }

  float(v: number): void {
    this.ensure(4);
    this.buf.writeFloatBE(v, this.pos);
    this.pos += 4;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleBE(v, this.pos);
    this.pos += 8;
  }

  /** A short string: UTF-8, at most 255 bytes. */
  shortstr(s: string): void {
    // Room for the worst case (3 UTF-8 bytes per UTF-16 unit) so write() never truncates; the
    // length octet is patched after, which saves a Buffer.byteLength pass.
    this.ensure(1 + s.length * 3);
    const n = this.buf.write(s, this.pos + 1, 'utf8');
    if (n > 255) throw new AmqpEncodeError(`shortstr is ${n} bytes, more than 255: ${s.slice(0, 40)}…`);
    this.buf[this.pos] = n;
    this.pos += 1 + n;
  }

  /** A long string from bytes (or a string, written as UTF-8). */
  longstr(v: Uint8Array | string): void {
    if (typeof v === 'string') {
      this.ensure(4 + v.length * 3);
      const n = this.buf.write(v, this.pos + 4, 'utf8');
      this.buf.writeUInt32BE(n, this.pos);
      this.pos += 4 + n;
      return;
    }
    this.long(v.length);
    this.raw(v);
  }

  /** Bytes as they are. */
  raw(v: Uint8Array): void {
    this.ensure(v.length);
    this.buf.set(v, this.pos);
    this.pos += v.length;
  }
}
