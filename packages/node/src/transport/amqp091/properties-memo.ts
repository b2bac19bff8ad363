/**
 * The content-header properties a connection sent last, decoded once: a publisher nearly always
 * sends the same property bytes message after message (amqplib's `{ persistent: true }` is 7 bytes:
 * flags, an empty headers table, delivery mode 2), so comparing those bytes replaces decoding them
 * into a new object. Every message with those bytes then shares one properties object, and with
 * it what is remembered on it (object slots): its storage encoding (properties-encoding.ts) and the
 * bytes a delivery sends (channel.ts) are made once per run of messages, not once per message.
 * Sharing is safe because a decoded properties object is never modified (properties-encoding.ts).
 */
import type { BasicProperties } from '@styx/client/wire';
import { sameBytesAt } from '../../storage/binary.ts';

/** Longest property bytes remembered: longer ones (large headers) are decoded every time. */
export const PROPERTIES_MEMO_MAX_BYTES = 256;

/** Decoded properties and a copy of the bytes they came from (owned: not a view of a socket chunk). */
export interface KnownProperties {
  readonly properties: BasicProperties;
  readonly bytes: Buffer;
}

export class PropertiesMemo {
  private last: KnownProperties | undefined;

  /** The remembered properties if `buf[start, end)` are exactly their bytes, else undefined. */
  lookup(buf: Buffer, start: number, end: number): KnownProperties | undefined {
    const last = this.last;
    return last !== undefined && sameBytesAt(buf, start, end, last.bytes) ? last : undefined;
  }

  /**
   * `properties`, decoded from `buf[start, end)`, with a copy of those bytes; remembered for the
   * next lookup unless the bytes are longer than PROPERTIES_MEMO_MAX_BYTES.
   */
  remember(properties: BasicProperties, buf: Buffer, start: number, end: number): KnownProperties {
    // A copy: a view would keep the whole socket chunk it came in alive as long as the message.
    const known: KnownProperties = { properties, bytes: Buffer.from(buf.subarray(start, end)) };
    if (end - start <= PROPERTIES_MEMO_MAX_BYTES) this.last = known;
    return known;
  }
}
