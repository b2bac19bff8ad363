import { AMQP_VERSION } from './spec.gen.ts';

/** What an AMQP 0-9-1 client sends first, and a server answers a wrong header with: `AMQP\0\0\x09\x01`. */
export const PROTOCOL_HEADER: Buffer = Buffer.from([
  0x41,
  0x4d,
  0x51,
  0x50,
  0,
  AMQP_VERSION.major,
  AMQP_VERSION.minor,
  AMQP_VERSION.revision,
]);

/** The peer opened with something other than the 0-9-1 protocol header (another version, HTTP…). */
export class ProtocolHeaderError extends Error {
  /** The bytes received so far, up to the first that differs (for the log). */
  readonly received: Buffer;
  constructor(received: Buffer) {
    super(`not an AMQP 0-9-1 protocol header: ${JSON.stringify(received.toString('latin1'))}`);
    this.name = 'ProtocolHeaderError';
    this.received = received;
  }
}

/**
 * Matches the 8-byte protocol header as it arrives in any chunks. The spec's answer to a wrong one
 * is to send our header and close, so the check fails at the first differing byte (an HTTP
 * `GET` is refused on its first byte) rather than waiting for 8.
 */
export class ProtocolHeaderReader {
  private matched = 0;

  /** True once the whole header has matched. */
  get done(): boolean {
    return this.matched === PROTOCOL_HEADER.length;
  }

  /**
   * Consumes header bytes from `chunk`; returns how many it used (the rest are frames). Throws
   * ProtocolHeaderError at the first byte that differs.
   */
  push(chunk: Buffer): number {
    let i = 0;
    while (this.matched < PROTOCOL_HEADER.length && i < chunk.length) {
      if (chunk[i] !== PROTOCOL_HEADER[this.matched]) {
        const seen = Buffer.concat([PROTOCOL_HEADER.subarray(0, this.matched), chunk.subarray(i, i + 1)]);
        throw new ProtocolHeaderError(seen);
      }
      this.matched++;
      i++;
    }
    return i;
  }
}
