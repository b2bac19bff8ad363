/**
 * The byte primitives of queue snapshots: unsigned LEB128 varints for counts, ids and sizes,
 * float64 for timestamps (ms since the epoch, not necessarily integers), UTF-8 strings with a
 * varint length. Deterministic: the same values always give the same bytes.
 */
import { QueueSnapshotError } from './errors.ts';

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder('utf-8', { fatal: true });

/** Initial buffer size, bytes; doubles as needed. */
const INITIAL_CAPACITY = 256;

export class ByteWriter {
  private buffer = new Uint8Array(INITIAL_CAPACITY);
  private view = new DataView(this.buffer.buffer);
  private length = 0;

  /** The bytes written so far (a copy, exactly sized). */
  finish(): Uint8Array {
    return this.buffer.slice(0, this.length);
  }

  u8(value: number): void {
    this.reserve(1);
    this.buffer[this.length++] = value;
  }

  bool(value: boolean): void {
    this.u8(value ? 1 : 0);
  }

  /** A non-negative safe integer. */
  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`snapshot varint out of range: ${value}`);
    }
    this.reserve(8);
    // Division, not bit operations: values go up to 2^53.
    while (value >= 0x80) {
      this.buffer[this.length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.length++] = value;
  }

  /** An optional non-negative safe integer: 0 = undefined, else value + 1. */
  optVarint(value: number | undefined): void {
    this.varint(value === undefined ? 0 : value + 1);
  }

  f64(value: number): void {
    this.reserve(8);
    this.view.setFloat64(this.length, value, true);
    this.length += 8;
  }

  optF64(value: number | undefined): void {
    this.bool(value !== undefined);
    if (value !== undefined) this.f64(value);
  }

  string(value: string): void {
    const bytes = textEncoder.encode(value);
    this.varint(bytes.length);
    this.reserve(bytes.length);
    this.buffer.set(bytes, this.length);
    this.length += bytes.length;
  }

  optString(value: string | undefined): void {
    this.bool(value !== undefined);
    if (value !== undefined) this.string(value);
  }

  private reserve(extra: number): void {
    const needed = this.length + extra;
    if (needed <= this.buffer.length) return;
    let capacity = this.buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.buffer.subarray(0, this.length));
    this.buffer = grown;
    this.view = new DataView(grown.buffer);
  }
}

export class ByteReader {
  private readonly bytes: Uint8Array;
  private readonly view: DataView;
  private offset = 0;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  /** Bytes not read yet. */
  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  /** Throws unless every byte was read. */
  end(): void {
    if (this.offset !== this.bytes.length) {
      throw new QueueSnapshotError(`${this.bytes.length - this.offset} trailing bytes`);
    }
  }

  u8(): number {
    if (this.offset >= this.bytes.length) throw new QueueSnapshotError('truncated');
    return this.bytes[this.offset++] as number;
  }

  bool(): boolean {
    const value = this.u8();
    if (value > 1) throw new QueueSnapshotError(`bad boolean ${value}`);
    return value === 1;
  }

  varint(): number {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = this.u8();
      value += (byte & 0x7f) * scale;
      if ((byte & 0x80) === 0) break;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new QueueSnapshotError('varint too long');
    }
    if (!Number.isSafeInteger(value)) throw new QueueSnapshotError('varint out of range');
    return value;
  }

  optVarint(): number | undefined {
    const value = this.varint();
    return value === 0 ? undefined : value - 1;
  }

  f64(): number {
    if (this.offset + 8 > this.bytes.length) throw new QueueSnapshotError('truncated');
    const value = this.view.getFloat64(this.offset, true);
    this.offset += 8;
    return value;
  }

  optF64(): number | undefined {
    return this.bool() ? this.f64() : undefined;
  }

  string(): string {
    const length = this.varint();
    if (this.offset + length > this.bytes.length) throw new QueueSnapshotError('truncated');
    const start = this.offset;
    this.offset += length;
    try {
      return textDecoder.decode(this.bytes.subarray(start, this.offset));
    } catch {
      throw new QueueSnapshotError('bad UTF-8 string');
    }
  }

  optString(): string | undefined {
    return this.bool() ? this.string() : undefined;
  }
}
