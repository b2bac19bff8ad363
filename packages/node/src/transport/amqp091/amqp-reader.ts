import { frameError } from './codec-error.ts';

const TWO_32 = 0x1_0000_0000;

/**
 * A cursor over one frame's payload, reading AMQP 0-9-1's primitive types big-endian. Every read
 * checks the bytes are there first and throws a 501 FRAME_ERROR naming the method being decoded
 * (`classId`/`methodId`, set by the caller) otherwise, so a truncated frame is a typed error and
 * never a RangeError from Buffer. One reader is reused for every frame of a connection: reads
 * allocate nothing except the values they return.
 */
export class AmqpReader {
  buf: Buffer = Buffer.alloc(0);
  pos = 0;
  end = 0;
  /** The class of the method being decoded, for error reports; 0 while reading headers. */
  classId = 0;
  /** The method being decoded, for error reports. */
  methodId = 0;

  /** Points the reader at `buf[start, end)`. */
  reset(buf: Buffer, start: number, end: number, classId = 0, methodId = 0): this {
    this.buf = buf;
    this.pos = start;
    this.end = end;
    this.classId = classId;
    this.methodId = methodId;
    return this;
  }

  /** Bytes left to read. */
  get remaining(): number {
    return this.end - this.pos;
  }

  /** Throws a 501 unless `n` more bytes are there. */
  need(n: number, what: string): void {
    if (this.end - this.pos < n) {
      throw frameError(
        `truncated ${what}: needs ${n} bytes, ${this.end - this.pos} left`,
        this.classId,
        this.methodId,
      );
    }
  }

  octet(): number {
    this.need(1, 'octet');
    return this.buf[this.pos++] as number;
  }

  int8(): number {
    this.need(1, 'octet');
    return this.buf.readInt8(this.pos++);
  }

  short(): number {
    this.need(2, 'short');
    const v = this.buf.readUInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  int16(): number {
    this.need(2, 'short');
    const v = this.buf.readInt16BE(this.pos);
    this.pos += 2;
    return v;
  }

  long(): number {
    this.need(4, 'long');
    const v = this.buf.readUInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  int32(): number {
    this.need(4, 'long');
    const v = this.buf.readInt32BE(this.pos);
    this.pos += 4;
    return v;
  }

  /** Unsigned 64-bit as a JS number: exact up to 2^53 - 1, rounded beyond (as amqplib). */
  longlong(): number {
    this.need(8, 'longlong');
    const v = this.buf.readUInt32BE(this.pos) * TWO_32 + this.buf.readUInt32BE(this.pos + 4);
    this.pos += 8;
    return v;
  }

  /** Signed 64-bit as a JS number: exact within ±(2^53 - 1), rounded beyond. */
  int64(): number {
    this.need(8, 'longlong');
    const v = this.buf.readInt32BE(this.pos) * TWO_32 + this.buf.readUInt32BE(this.pos + 4);
    this.pos += 8;
    return v;
  }

  float(): number {
    this.need(4, 'float');
    const v = this.buf.readFloatBE(this.pos);
    this.pos += 4;
    return v;
  }

  double(): number {
    this.need(8, 'double');
    const v = this.buf.readDoubleBE(this.pos);
    this.pos += 8;
    return v;
  }

  /** A short string (octet length + UTF-8 bytes). Bytes that are not UTF-8 decode lossily (U+FFFD). */
  shortstr(): string {
    const len = this.octet();
    this.need(len, 'shortstr');
    const s = this.buf.toString('utf8', this.pos, this.pos + len);
    this.pos += len;
    return s;
  }

  /**
   * A long string's bytes (long length + bytes), as a view into the frame (no copy): method
   * longstrs are binary (a SASL response holds NULs), so they stay bytes.
   */
  longstr(): Buffer {
    const len = this.long();
    this.need(len, 'longstr');
    const b = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return b;
  }

  /** `n` raw bytes, as a view. */
  bytes(n: number, what: string): Buffer {
    this.need(n, what);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }
}
