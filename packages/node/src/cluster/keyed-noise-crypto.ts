/**
 * The crypto the cluster's noise runs on: the package's default (`defaultCrypto`: node:crypto for
 * X25519 and SHA-256, its WASM ChaCha20-Poly1305 below 1,200 bytes), except that the node:crypto
 * ChaCha20-Poly1305 used for larger messages — every Raft and queue-link frame — is given the
 * session's key as a `KeyObject` made once per key, not as raw bytes. With raw bytes node:crypto
 * builds a key object for every cipher it creates, one per noise message (up to 64 KiB): that
 * showed as ~4 % of a follower's CPU in g.a.publish (`prepareSecretKey` under `createDecipheriv`),
 * and a cipher made from a `KeyObject` measured ~1.5-2× cheaper per message.
 *
 * Same cipher, nonces, associated data and tag: the bytes are exactly the default's
 * (`keyed-noise-crypto.test.ts` holds both to each other and to the spec's construction), so nodes
 * with and without it interoperate. A noise key is never modified in place (the package assigns a
 * new array on every key change), so a key object cached per key array (weakly: it goes with its
 * session) always holds that array's bytes; were one stale, the peer's tag check would fail and the
 * connection close, never yield wrong bytes.
 */
import type { KeyObject } from 'node:crypto';
import { createCipheriv, createDecipheriv, createSecretKey } from 'node:crypto';
import type { ICryptoInterface } from '@chainsafe/libp2p-noise';
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto';
import { Uint8ArrayList } from 'uint8arraylist';

type Bytes = Parameters<ICryptoInterface['chaCha20Poly1305Encrypt']>[0];

const CIPHER = 'chacha20-poly1305';
const TAG_BYTES = 16;
/** From this size on the default uses node:crypto (below, its WASM cipher, faster per call there). */
const NODE_CIPHER_FROM = 1200;

const keyObjects = new WeakMap<Uint8Array, KeyObject>();

/** The key object of noise key `k`, made on first use. */
function keyObjectOf(k: Uint8Array): KeyObject {
  let key = keyObjects.get(k);
  if (key === undefined) {
    key = createSecretKey(k);
    keyObjects.set(k, key);
  }
  return key;
}

/**
 * The cipher's output parts: one buffer for a whole input (noise's handshake reads it as one), a
 * list for a list (no copy: the message stream copies each message into its frame once anyway).
 */
function output(input: Bytes, parts: Uint8Array[], byteLength: number): Uint8Array | Uint8ArrayList {
  if (!(input instanceof Uint8Array)) return new Uint8ArrayList(...parts);
  return parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, byteLength);
}

function encrypt(
  plaintext: Bytes,
  nonce: Uint8Array,
  ad: Uint8Array,
  k: Uint8Array,
): Uint8Array | Uint8ArrayList {
  const cipher = createCipheriv(CIPHER, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength });
  const parts: Uint8Array[] = [];
  if (plaintext instanceof Uint8Array) parts.push(cipher.update(plaintext));
  else for (const chunk of plaintext) parts.push(cipher.update(chunk));
  const final = cipher.final(); // a stream cipher: empty, kept for the API's sake
  if (final.byteLength > 0) parts.push(final);
  parts.push(cipher.getAuthTag());
  return output(plaintext, parts, plaintext.byteLength + TAG_BYTES);
}

function decrypt(
  ciphertext: Bytes,
  nonce: Uint8Array,
  ad: Uint8Array,
  k: Uint8Array,
): Uint8Array | Uint8ArrayList {
  const textLength = ciphertext.byteLength - TAG_BYTES;
  if (textLength < 0) throw new RangeError(`noise ciphertext of ${ciphertext.byteLength} bytes has no tag`);
  const decipher = createDecipheriv(CIPHER, keyObjectOf(k), nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(ad, { plaintextLength: textLength });
  decipher.setAuthTag(ciphertext.subarray(textLength));
  const parts: Uint8Array[] = [];
  if (ciphertext instanceof Uint8Array) parts.push(decipher.update(ciphertext.subarray(0, textLength)));
  else for (const chunk of ciphertext.sublist(0, textLength)) parts.push(decipher.update(chunk));
  // Throws when the tag does not authenticate the message (as the default does).
  const final = decipher.final();
  if (final.byteLength > 0) parts.push(final);
  return output(ciphertext, parts, textLength);
}

export const keyedNoiseCrypto: ICryptoInterface = {
  ...defaultCrypto,
  chaCha20Poly1305Encrypt(plaintext, nonce, ad, k) {
    if (plaintext.byteLength < NODE_CIPHER_FROM)
      return defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k);
    return encrypt(plaintext, nonce, ad, k);
  },
  chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst) {
    if (ciphertext.byteLength < NODE_CIPHER_FROM)
      return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst);
    return decrypt(ciphertext, nonce, ad, k);
  },
};
