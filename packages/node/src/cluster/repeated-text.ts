/**
 * A strict UTF-8 decoder for a field that mostly repeats from one frame to the next (the queue
 * group, owner and consumer tag of a node's remote deliveries): bytes equal to the last ones
 * decoded give back the very string decoded then. A delivery to another node used to decode its
 * three strings anew, and every Map lookup by a fresh string hashed it again (~1 µs per delivery
 * on the consumer's node, issue 28); the string kept here has its hash cached by V8.
 */
import { sameBytes } from '../storage/binary.ts';

const strict = new TextDecoder('utf-8', { fatal: true });

/** Fields longer than this are decoded every time (ids are short; comparing long ones saves nothing). */
const MAX_KEPT_BYTES = 256;

export class RepeatedText {
  #bytes = new Uint8Array(0);
  #text = '';

  /** `bytes` as text; throws `TypeError` on bytes that are not UTF-8, as a fatal TextDecoder does. */
  decode(bytes: Uint8Array): string {
    if (sameBytes(bytes, this.#bytes)) return this.#text;
    const text = strict.decode(bytes);
    if (bytes.byteLength <= MAX_KEPT_BYTES) {
      // A copy: `bytes` is a view into a frame whose buffer is reused or dropped.
      this.#bytes = bytes.slice();
      this.#text = text;
    }
    return text;
  }
}
