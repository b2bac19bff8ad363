import { RaftDecodeError } from './errors.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * A growable byte writer for the Raft wire formats (messages, conf changes). Integers are unsigned
 * LEB128 varints up to 2^53 - 1 (indexes and terms are safe integers); strings are a varint byte
 * length then UTF-8; byte arrays are a varint length then the bytes.
 */
export class WireWriter {
  #buffer: Uint8Array;
  #length = 0;

  constructor(initialCapacity = 64) {
    this.#buffer = uninitialized(initialCapacity);
  }

  #ensure(extra: number): void {
    const needed = this.#length + extra;
    if (needed <= this.#buffer.length) return;
    let capacity = this.#buffer.length * 2;
    while (capacity < needed) capacity *= 2;
    const grown = uninitialized(capacity);
    grown.set(this.#buffer.subarray(0, this.#length));
    this.#buffer = grown;
  }

  u8(value: number): void {
    this.#ensure(1);
    this.#buffer[this.#length++] = value & 0xff;
  }

  varint(value: number): void {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`varint out of range: ${value}`);
    }
    this.#ensure(8);
    // Arithmetic, not bit operators: bit operators truncate to 32 bits.
    while (value >= 0x80) {
      this.#buffer[this.#length++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.#buffer[this.#length++] = value;
  }

  bytes(value: Uint8Array): void {
    this.varint(value.byteLength);
    this.#ensure(value.byteLength);
    this.#buffer.set(value, this.#length);
    this.#length += value.byteLength;
  }

  string(value: string): void {
    const length = value.length;
    // Fast path for short ASCII strings (node ids, request ids): no TextEncoder round trip.
    if (length <= MAX_FAST_STRING) {
      this.#ensure(1 + length);
      const start = this.#length;
      this.#buffer[this.#length++] = length;
      let ascii = true;
      for (let i = 0; i < length; i++) {
        const code = value.charCodeAt(i);
        if (code >= 0x80) {
          ascii = false;
          break;
        }
        this.#buffer[this.#length++] = code;
      }
      if (ascii) return;
      this.#length = start;
    }
    this.bytes(length === 0 ? EMPTY : encoder.encode(value));
  }

  /**
   * Reserve a length prefix for bytes written in place after it (`endLength` fills it in): returns
   * where it starts. The prefix is a varint padded to `LENGTH_SLOT_BYTES` (LEB128 allows
   * continuation bytes carrying zeros, and `WireReader.varint` reads them), so the bytes need no
   * buffer of their own and no copy once their length is known: `view`/`bytes` read them as usual.
   */
  startLength(): number {
    this.#ensure(LENGTH_SLOT_BYTES);
    const at = this.#length;
    this.#length += LENGTH_SLOT_BYTES;
    return at;
  }

  /** Fill in the prefix `startLength` reserved at `at` with the length of what was written since. */
  endLength(at: number): void {
    let value = this.#length - at - LENGTH_SLOT_BYTES;
    if (value >= 2 ** (7 * LENGTH_SLOT_BYTES)) throw new RangeError(`length past a slot: ${value}`);
    for (let i = 0; i < LENGTH_SLOT_BYTES - 1; i++) {
      this.#buffer[at + i] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.#buffer[at + LENGTH_SLOT_BYTES - 1] = value;
  }

  /** The bytes written so far. The writer must not be used afterwards (the result is a view). */
  finish(): Uint8Array {
    return this.#buffer.subarray(0, this.#length);
  }
}

const EMPTY = new Uint8Array(0);

/** Below this size a writer's buffer is an ordinary (zero-filled) `Uint8Array`: see `uninitialized`. */
const UNINITIALIZED_FROM = 4096;

/**
 * `size` bytes of a buffer of their own, NOT zero-filled when large, as a plain `Uint8Array`: a
 * writer reads back only bytes it wrote (`finish` ends at the length written; `startLength`'s slot
 * is filled by `endLength`), and zero-filling a peer batch's buffer (a turn's entries, bodies
 * included) cost about 1.5 % of a leader's CPU. Not from Node's shared pool (`allocUnsafeSlow`): an
 * encoding kept for long must not hold an 8 KiB slab shared with unrelated allocations. Small ones
 * stay `new Uint8Array` (V8 may keep them on its heap, cheaper than a backing store of their own).
 */
function uninitialized(size: number): Uint8Array {
  if (size < UNINITIALIZED_FROM) return new Uint8Array(size);
  const buffer = Buffer.allocUnsafeSlow(size);
  return new Uint8Array(buffer.buffer, buffer.byteOffset, size);
}

/** Bytes of a padded length prefix (`startLength`): lengths below 2^35 (32 GiB). */
const LENGTH_SLOT_BYTES = 5;

/**
 * Copies below this size come from Node's shared allocation pool (`Buffer.allocUnsafe` serves
 * requests under half its 8 KiB pool from it): an ArrayBuffer of its own per entry (a follower
 * copies every entry it receives) cost an allocation and a GC-tracked backing store each. A kept
 * copy holds its pool slab, as the leader's own entries (encoded by `Buffer.allocUnsafe`) do.
 */
const POOLED_COPY_BELOW = Buffer.poolSize >>> 1;

/** A copy of `bytes`, a plain `Uint8Array` (not a Buffer, whose `slice` would be a view). */
function copyOf(bytes: Uint8Array): Uint8Array {
  if (bytes.byteLength >= POOLED_COPY_BELOW || bytes.byteLength === 0) return bytes.slice();
  const pooled = Buffer.allocUnsafe(bytes.byteLength);
  pooled.set(bytes);
  return new Uint8Array(pooled.buffer, pooled.byteOffset, pooled.byteLength);
}

/** Longest string the ASCII fast path handles: its length must fit one varint byte. */
const MAX_FAST_STRING = 0x7f;

/** Reads what `WireWriter` wrote; any malformed input throws `RaftDecodeError`. */
export class WireReader {
  readonly #buffer: Uint8Array;
  #offset = 0;

  constructor(buffer: Uint8Array) {
    this.#buffer = buffer;
  }

  get done(): boolean {
    return this.#offset === this.#buffer.length;
  }

  u8(): number {
    if (this.#offset >= this.#buffer.length) throw new RaftDecodeError('unexpected end of input');
    return this.#buffer[this.#offset++] as number;
  }

  varint(): number {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const byte = this.u8();
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        if (!Number.isSafeInteger(result)) throw new RaftDecodeError('varint out of range');
        return result;
      }
      scale *= 0x80;
    }
    throw new RaftDecodeError('varint too long');
  }

  /** A copy of the next length-prefixed bytes (never a view: decoded data must not alias input). */
  bytes(): Uint8Array {
    return copyOf(this.view());
  }

  /**
   * A view of the next length-prefixed bytes, for bytes decoded at once whose decoder keeps
   * nothing of them (a peer batch's messages, which `bytes` copies what they keep from).
   */
  view(): Uint8Array {
    const length = this.varint();
    const end = this.#offset + length;
    if (end > this.#buffer.length) throw new RaftDecodeError('byte string past end of input');
    const value = this.#buffer.subarray(this.#offset, end);
    this.#offset = end;
    return value;
  }

  string(): string {
    const length = this.varint();
    if (length === 0) return '';
    const end = this.#offset + length;
    if (end > this.#buffer.length) throw new RaftDecodeError('string past end of input');
    if (length <= 16) {
      // Short ASCII strings (node ids): decode by hand, no TextDecoder call.
      let ascii = '';
      let i = this.#offset;
      for (; i < end; i++) {
        const byte = this.#buffer[i] as number;
        if (byte >= 0x80) break;
        ascii += String.fromCharCode(byte);
      }
      if (i === end) {
        this.#offset = end;
        return ascii;
      }
    }
    let value: string;
    try {
      value = decoder.decode(this.#buffer.subarray(this.#offset, end));
    } catch (error) {
      throw new RaftDecodeError(`invalid UTF-8: ${String(error)}`);
    }
    this.#offset = end;
    return value;
  }

  /** Throw unless every byte was consumed. */
  end(): void {
    if (!this.done) throw new RaftDecodeError(`${this.#buffer.length - this.#offset} trailing bytes`);
  }
}
