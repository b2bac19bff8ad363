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
  if (message instanceof DeferredMessage) return message.encoding;
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

/**
 * A stored message read from a log entry and decoded only when one of its fields is first read.
 * A queue's follower applies every enqueue but only stores its bytes (the body store keeps the
 * encoding, see `storedEncoding`): exchange, routing key, properties (a protobuf with AMQP tables)
 * and bcc are decoded if it leads and delivers or dead-letters the message, or never. The layout
 * is checked when it is made (every length within the bytes), so malformed bytes still throw
 * `StoredBytesCorruptedError` at once; only what lies inside the lengths (UTF-8, the properties'
 * own encoding) is read later. Decoding is pure: the fields read are what `decodeStoredMessage`
 * returns for the same bytes, on every replica.
 *
 * Not a plain object: its fields are getters, which a spread would not copy. The body store hands
 * out `plainStoredMessage` of it, never the deferred object itself.
 */
export class DeferredMessage implements StoredMessage {
  /** The message's encoding (a view: must not be modified after). */
  readonly encoding: Uint8Array;
  /** Where the body starts in `encoding`. */
  readonly #bodyStart: number;
  readonly #what: string;
  #decoded: StoredMessage | undefined;

  constructor(encoding: Uint8Array, what = 'stored message') {
    this.encoding = encoding;
    this.#what = what;
    this.#bodyStart = bodyStartOf(encoding, what);
  }

  /** Bytes of the body, without decoding anything. */
  get bodyLength(): number {
    return this.encoding.byteLength - this.#bodyStart;
  }

  /** The decoded message (decoded once). */
  get decoded(): StoredMessage {
    if (this.#decoded === undefined) this.#decoded = decodeStoredMessage(this.encoding, this.#what);
    return this.#decoded;
  }

  get exchange(): string {
    return this.decoded.exchange;
  }

  get routingKey(): string {
    return this.decoded.routingKey;
  }

  get properties(): StoredMessage['properties'] {
    return this.decoded.properties;
  }

  get body(): Uint8Array {
    return this.decoded.body;
  }

  get bcc(): readonly string[] | undefined {
    return this.decoded.bcc;
  }
}

/** `message` as a plain object (a deferred message decoded; any other as it is). */
export function plainStoredMessage(message: StoredMessage): StoredMessage {
  return message instanceof DeferredMessage ? message.decoded : message;
}

/** The offset of the body in a stored message's encoding: every length checked, nothing decoded. */
function bodyStartOf(bytes: Uint8Array, what: string): number {
  const r = new ByteCursor(bytes, what);
  const format = r.u8();
  if (format !== STORED_MESSAGE_FORMAT) throw new StoredBytesCorruptedError(what, `unknown format ${format}`);
  r.skip(r.varint()); // exchange
  r.skip(r.varint()); // routing key
  r.skip(r.varint()); // properties
  const bccCount = r.varint();
  if (bccCount > 0) {
    if (bccCount - 1 > r.remaining) throw new StoredBytesCorruptedError(what, `bcc count ${bccCount - 1}`);
    for (let i = 0; i < bccCount - 1; i++) r.skip(r.varint());
  }
  return r.position;
}
