/**
 * A UTF-8 field that mostly repeats from one message or frame to the next (the queue group, owner
 * and consumer tag of a node's remote deliveries; a stored message's exchange and routing key):
 * bytes equal to the last ones decoded give back the very string decoded then. A delivery to
 * another node used to decode its strings anew, and every Map lookup by a fresh string hashed it
 * again (~1 µs per delivery on the consumer's node, issue 28); the string kept here has its hash
 * cached by V8, and no string is made for a repeat.
 */
import { sameBytes, sameBytesAt } from './binary.ts';

/** Decodes `bytes[start, end)` as text. */
export type TextDecode = (bytes: Uint8Array, start: number, end: number) => string;

const strict = new TextDecoder('utf-8', { fatal: true });

/** A fatal TextDecoder's decode: throws `TypeError` on bytes that are not UTF-8. */
export const strictUtf8: TextDecode = (bytes, start, end) => strict.decode(bytes.subarray(start, end));

/** Fields longer than this are decoded every time (ids are short; comparing long ones saves nothing). */
const MAX_KEPT_BYTES = 256;

export class RepeatedText {
  readonly #decode: TextDecode;
  #bytes = new Uint8Array(0);
  #text = '';

  /** Decoding with `decode` (by default strict UTF-8); its errors are thrown as they are. */
  constructor(decode: TextDecode = strictUtf8) {
    this.#decode = decode;
  }

  /** `bytes` as text. */
  decode(bytes: Uint8Array): string {
    if (sameBytes(bytes, this.#bytes)) return this.#text;
    return this.#decoded(bytes, 0, bytes.byteLength);
  }

  /** `bytes[start, end)` as text, compared in place (no view of the field made for a repeat). */
  decodeAt(bytes: Uint8Array, start: number, end: number): string {
    if (sameBytesAt(bytes, start, end, this.#bytes)) return this.#text;
    return this.#decoded(bytes, start, end);
  }

  #decoded(bytes: Uint8Array, start: number, end: number): string {
    const text = this.#decode(bytes, start, end);
    if (end - start <= MAX_KEPT_BYTES) {
      // A copy: `bytes` is a view into a frame whose buffer is reused or dropped.
      this.#bytes = bytes.slice(start, end);
      this.#text = text;
    }
    return text;
  }
}
