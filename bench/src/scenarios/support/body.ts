/**
 * Message bodies: `size` bytes carrying the message's sequence number and the time it was published
 * (bench clock, ms), so a consumer anywhere downstream (a dead-letter target) can compute lateness.
 *
 * Layout (little-endian): [0, 4) magic, [4, 8) sequence number, [8, 16) publish time as float64,
 * then filler. One buffer is reused for every publish: both client libraries copy the content into
 * their frame synchronously inside publish().
 */

/** Marks a bench body; anything else arriving in a bench queue is a bug. */
const MAGIC = 0x5354_5842; // 'STXB'
/** Bytes of the header; bodies are at least this long. */
export const BODY_HEADER_BYTES = 16;

/** The bench's message size, bytes (1 KiB, as the issue asks). */
export const BODY_BYTES = 1024;

export class BodyWriter {
  readonly #buf: Buffer;

  constructor(size: number = BODY_BYTES) {
    if (size < BODY_HEADER_BYTES) throw new RangeError(`body size must be >= ${BODY_HEADER_BYTES}`);
    this.#buf = Buffer.alloc(size, 0x61);
    this.#buf.writeUInt32LE(MAGIC, 0);
  }

  /** The shared buffer, stamped for message `seq` published at `publishedAtMs`. */
  stamp(seq: number, publishedAtMs: number): Buffer {
    this.#buf.writeUInt32LE(seq, 4);
    this.#buf.writeDoubleLE(publishedAtMs, 8);
    return this.#buf;
  }
}

export interface BodyStamp {
  readonly seq: number;
  readonly publishedAtMs: number;
}

/** The stamp of a received body. Throws on a body the bench did not write. */
export function readStamp(content: Uint8Array): BodyStamp {
  const buf = Buffer.isBuffer(content)
    ? content
    : Buffer.from(content.buffer, content.byteOffset, content.length);
  if (buf.length < BODY_HEADER_BYTES || buf.readUInt32LE(0) !== MAGIC)
    throw new Error(`not a bench message body (${buf.length} bytes)`);
  return { seq: buf.readUInt32LE(4), publishedAtMs: buf.readDoubleLE(8) };
}
