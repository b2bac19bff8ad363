import { createCipheriv, randomBytes } from 'node:crypto';
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto';
import { Uint8ArrayList } from 'uint8arraylist';
import { describe, expect, it } from 'vitest';
import { keyedNoiseCrypto } from './keyed-noise-crypto.ts';

/** The noise spec's ChaCha20-Poly1305 (ciphertext then 16-byte tag), built from node:crypto directly. */
function specEncrypt(plaintext: Uint8Array, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Uint8Array {
  const cipher = createCipheriv('chacha20-poly1305', k, nonce, { authTagLength: 16 });
  cipher.setAAD(ad, { plaintextLength: plaintext.byteLength });
  return Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
}

/** The bytes of an output, as a Buffer (outputs are Buffers or plain arrays: compared by content). */
const bytesOf = (data: Uint8Array | Uint8ArrayList): Buffer =>
  Buffer.from(data instanceof Uint8Array ? data : data.subarray());

/** `bytes` as a list of uneven chunks, as noise hands over a message sliced from a stream. */
function chunked(bytes: Uint8Array): Uint8ArrayList {
  const list = new Uint8ArrayList();
  for (let at = 0, step = 1; at < bytes.byteLength; at += step, step = step * 3 + 7)
    list.append(bytes.subarray(at, Math.min(bytes.byteLength, at + step)));
  return list;
}

const SIZES = [0, 1, 1199, 1200, 1201, 4096, 65_519];

describe('keyed noise crypto', () => {
  it("encrypts to exactly the spec's and the default crypto's bytes, whole or in chunks", () => {
    const k = randomBytes(32);
    for (const size of SIZES) {
      const plaintext = randomBytes(size);
      const nonce = randomBytes(12);
      const ad = randomBytes(size % 3 === 0 ? 0 : 32);
      const expected = specEncrypt(plaintext, nonce, ad, k);
      expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k))).toEqual(expected);
      expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Encrypt(chunked(plaintext), nonce, ad, k))).toEqual(
        expected,
      );
      expect(bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k))).toEqual(expected);
    }
  });

  it('decrypts what the default crypto encrypted, whole or in chunks, and the default decrypts its output', () => {
    const k = randomBytes(32);
    for (const size of SIZES) {
      const plaintext = randomBytes(size);
      const nonce = randomBytes(12);
      const ad = randomBytes(32);
      const sealed = bytesOf(defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k));
      expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, k))).toEqual(plaintext);
      expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Decrypt(chunked(sealed), nonce, ad, k))).toEqual(
        plaintext,
      );
      const ours = bytesOf(keyedNoiseCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k));
      expect(bytesOf(defaultCrypto.chaCha20Poly1305Decrypt(ours, nonce, ad, k))).toEqual(plaintext);
    }
  });

  it('answers a list with a list (no copy) and a buffer with one buffer', () => {
    const k = randomBytes(32);
    const nonce = randomBytes(12);
    const ad = randomBytes(32);
    const plaintext = randomBytes(10_000);
    const sealed = keyedNoiseCrypto.chaCha20Poly1305Encrypt(chunked(plaintext), nonce, ad, k);
    expect(sealed).toBeInstanceOf(Uint8ArrayList);
    const opened = keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, k);
    expect(opened).toBeInstanceOf(Uint8ArrayList);
    expect(bytesOf(opened)).toEqual(plaintext);
    expect(keyedNoiseCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k)).toBeInstanceOf(Uint8Array);
    expect(keyedNoiseCrypto.chaCha20Poly1305Decrypt(bytesOf(sealed), nonce, ad, k)).toBeInstanceOf(
      Uint8Array,
    );
  });

  it('keeps each key apart: many messages under two keys in turn, each with its own nonce', () => {
    const keys = [randomBytes(32), randomBytes(32)];
    for (let n = 0; n < 20; n++) {
      const k = keys[n % 2] as Uint8Array;
      const nonce = Buffer.alloc(12);
      nonce.writeUInt32LE(n, 4);
      const plaintext = randomBytes(2_000 + n);
      const sealed = bytesOf(
        keyedNoiseCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, new Uint8Array(0), k),
      );
      expect(sealed).toEqual(specEncrypt(plaintext, nonce, new Uint8Array(0), k));
      expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, new Uint8Array(0), k))).toEqual(
        plaintext,
      );
    }
  });

  it('refuses a message that does not authenticate: a flipped byte, another key, nonce or associated data', () => {
    const k = randomBytes(32);
    const nonce = randomBytes(12);
    const ad = randomBytes(32);
    const plaintext = randomBytes(5_000);
    const sealed = bytesOf(keyedNoiseCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k));
    for (const at of [0, 2_500, sealed.byteLength - 1]) {
      const tampered = Uint8Array.from(sealed);
      tampered[at] = (tampered[at] as number) ^ 1;
      expect(() => keyedNoiseCrypto.chaCha20Poly1305Decrypt(tampered, nonce, ad, k)).toThrow();
      expect(() => keyedNoiseCrypto.chaCha20Poly1305Decrypt(chunked(tampered), nonce, ad, k)).toThrow();
    }
    expect(() => keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, randomBytes(32))).toThrow();
    expect(() => keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, randomBytes(12), ad, k)).toThrow();
    expect(() => keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, randomBytes(32), k)).toThrow();
    // The untouched message still opens with the same (cached) key.
    expect(bytesOf(keyedNoiseCrypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, k))).toEqual(plaintext);
  });
});
