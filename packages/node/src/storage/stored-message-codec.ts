/**
 * The binary form of a `StoredMessage`: what the body store keeps per message, and the tail of an
 * `enqueue` log entry (so the body store can store the bytes the log entry already carries).
 *
 * Layout (format 1):
 *   [u8 format = 1]
 *   [varint n][exchange UTF-8]  [varint n][routingKey UTF-8]
 *   [varint n][BasicProperties protobuf]           (n = 0: no property set)
 *   [varint k]  k = 0: bcc undefined, else k - 1 strings follow, each [varint n][UTF-8]
 *   [body: every remaining byte]
 *
 * The body is last and carries no length, so it is copied once into the encoding and decoded as a
 * view of the encoded bytes (no copy).
 *
 * Encodings are remembered per message object (an object slot, `objectSlot` of the wire module:
 * a private field, cheaper than a WeakMap entry per message): the enqueue codec encodes a message
 * once for the log entry, and the body store, handed the same object when the entry is applied,
 * stores those bytes instead of encoding again. This relies on a `StoredMessage` never being
 * mutated after it was proposed (its type is readonly throughout).
 */
import { objectSlot } from '@styx/client/wire';
import type { StoredMessage } from '../queue/types.ts';
import { decodeBasicProperties, encodeBasicProperties } from './basic-properties-codec.ts';
import { ByteCursor, utf8Size, varintSize, writeString, writeVarint } from './binary.ts';
import { StoredBytesCorruptedError } from './errors.ts';

const STORED_MESSAGE_FORMAT = 1;

const encodingOf = objectSlot<StoredMessage, Uint8Array>();

/** A message measured for encoding: its sizes, and its properties already encoded. */
export interface MeasuredMessage {
  readonly message: StoredMessage;
  readonly exchangeSize: number;
  readonly routingKeySize: number;
  readonly properties: Uint8Array;
  /** UTF-8 sizes of the bcc keys (empty when bcc is undefined). */
  readonly bccSizes: readonly number[];
  /** Bytes of the whole encoding. */
  readonly size: number;
}

const NO_SIZES: readonly number[] = [];

/** First pass: sizes and the encoded properties. */
export function measureStoredMessage(message: StoredMessage): MeasuredMessage {
  const exchangeSize = utf8Size(message.exchange);
  const routingKeySize = utf8Size(message.routingKey);
  const properties = encodeBasicProperties(message.properties);
  let size =
    1 +
    varintSize(exchangeSize) +
    exchangeSize +
    varintSize(routingKeySize) +
    routingKeySize +
    varintSize(properties.length) +
    properties.length;
  const { bcc } = message;
  let bccSizes = NO_SIZES;
  if (bcc === undefined) {
    size += 1;
  } else {
    const sizes: number[] = new Array(bcc.length);
    size += varintSize(bcc.length + 1);
    for (let i = 0; i < bcc.length; i++) {
      const keySize = utf8Size(bcc[i] as string);
      sizes[i] = keySize;
      size += varintSize(keySize) + keySize;
    }
    bccSizes = sizes;
  }
  size += message.body.byteLength;
  return { message, exchangeSize, routingKeySize, properties, bccSizes, size };
}

/** Second pass: write the measured message at `pos` of `buf`; returns the position after it. */
export function writeStoredMessage(buf: Buffer, pos: number, measured: MeasuredMessage): number {
  const { message, properties, bccSizes } = measured;
  buf[pos++] = STORED_MESSAGE_FORMAT;
  pos = writeString(buf, pos, message.exchange, measured.exchangeSize);
  pos = writeString(buf, pos, message.routingKey, measured.routingKeySize);
  pos = writeVarint(buf, pos, properties.length);
  buf.set(properties, pos);
  pos += properties.length;
  const { bcc } = message;
  if (bcc === undefined) {
    buf[pos++] = 0;
  } else {
    pos = writeVarint(buf, pos, bcc.length + 1);
    for (let i = 0; i < bcc.length; i++) pos = writeString(buf, pos, bcc[i] as string, bccSizes[i] as number);
  }
  buf.set(message.body, pos);
  return pos + message.body.byteLength;
}

/**
 * The message's encoding: the one remembered for this object, or a fresh one. The result is
 * shared: never modify it.
 */
export function encodeStoredMessage(message: StoredMessage): Uint8Array {
  const known = encodingOf.read(message);
  if (known !== undefined) return known;
  const measured = measureStoredMessage(message);
  const buf = Buffer.allocUnsafe(measured.size);
  writeStoredMessage(buf, 0, measured);
  encodingOf.write(message, buf);
  return buf;
}

/** Remember `bytes` as the encoding of `message` (they must decode to it). */
export function rememberEncoding(message: StoredMessage, bytes: Uint8Array): void {
  encodingOf.write(message, bytes);
}

/**
 * Decode a stored message. The body is a view into `bytes` (which must not be modified after);
 * the decoded object remembers `bytes` as its encoding.
 */
export function decodeStoredMessage(bytes: Uint8Array, what = 'stored message'): StoredMessage {
  const r = new ByteCursor(bytes, what);
  const format = r.u8();
  if (format !== STORED_MESSAGE_FORMAT) throw new StoredBytesCorruptedError(what, `unknown format ${format}`);
  const exchange = r.string();
  const routingKey = r.string();
  const properties = decodeBasicProperties(r.bytes(r.varint()));
  const bccCount = r.varint();
  let bcc: string[] | undefined;
  if (bccCount > 0) {
    // Each key takes at least its length byte: a count beyond that is corruption, not an allocation.
    if (bccCount - 1 > r.remaining) throw new StoredBytesCorruptedError(what, `bcc count ${bccCount - 1}`);
    bcc = new Array(bccCount - 1);
    for (let i = 0; i < bccCount - 1; i++) bcc[i] = r.string();
  }
  const message: StoredMessage = { exchange, routingKey, properties, body: r.rest(), bcc };
  encodingOf.write(message, bytes);
  return message;
}
