import { createCipheriv, randomBytes } from 'node:crypto';
import { defaultCrypto } from '@chainsafe/libp2p-noise/crypto';
import { Uint8ArrayList } from 'uint8arraylist';
import { describe, expect, it } from 'vitest';

/**
 * The cluster's noise is patched (patches/@chainsafe__libp2p-noise@17.0.0.patch) so that each noise
 * transport message leaves as ONE buffer: length prefix, ciphertext and tag. The transport writes
 * every buffer of a send with a socket write of its own, so the package's three-plus parts per
 * message cost three-plus syscalls. These tests hold the patch to two promises: the bytes on the
 * wire are exactly the noise spec's (so nodes of earlier builds read them, and we read theirs), and
 * every buffer handed to the transport is one whole message.
 *
 * The package keeps its message stream and cipher state internal (no export), so they are loaded
 * from beside its entry point: a release that moves them fails this file loudly.
 */

const NOISE_ENTRY = import.meta.resolve('@chainsafe/libp2p-noise');
const internal = async (file: string): Promise<Record<string, unknown>> =>
  (await import(new URL(file, NOISE_ENTRY).href)) as Record<string, unknown>;

interface CipherStateLike {
  encryptWithAd(ad: Uint8Array, plaintext: Uint8Array | Uint8ArrayList): Uint8Array | Uint8ArrayList;
}
interface EncryptingStream {
  encrypt(chunk: Uint8Array | Uint8ArrayList): Uint8ArrayList;
}

/** Noise's largest message (65,535 bytes) less the 16-byte Poly1305 tag. */
const MAX_PLAINTEXT = 65_535 - 16;

/**
 * The noise spec's transport messages for `plaintext`, built from node:crypto alone: per 65,519
 * plaintext bytes, a big-endian uint16 length then ChaCha20-Poly1305 (empty associated data, nonce
 * 4 zero bytes then the 64-bit little-endian counter) ciphertext and tag.
 */
function specMessages(key: Uint8Array, firstNonce: number, plaintext: Uint8Array): Buffer[] {
  const out: Buffer[] = [];
  let n = firstNonce;
  for (let i = 0; i < plaintext.byteLength; i += MAX_PLAINTEXT, n++) {
    const nonce = Buffer.alloc(12);
    nonce.writeBigUInt64LE(BigInt(n), 4);
    const cipher = createCipheriv('chacha20-poly1305', key, nonce, { authTagLength: 16 });
    const part = plaintext.subarray(i, i + MAX_PLAINTEXT);
    cipher.setAAD(new Uint8Array(0), { plaintextLength: part.byteLength });
    const body = Buffer.concat([cipher.update(part), cipher.final(), cipher.getAuthTag()]);
    const length = Buffer.alloc(2);
    length.writeUInt16BE(body.byteLength);
    out.push(Buffer.concat([length, body]));
  }
  return out;
}

/** The package's own message stream over a fresh cipher state keyed with `key`, nonce 0. */
async function noiseStream(key: Uint8Array): Promise<EncryptingStream> {
  const { toMessageStream } = await internal('./utils.js');
  const { CipherState, ZEROLEN } = await internal('./protocol.js');
  const { wrapCrypto } = await internal('./crypto.js');
  if (typeof toMessageStream !== 'function' || typeof CipherState !== 'function') {
    throw new Error('@chainsafe/libp2p-noise no longer has toMessageStream/CipherState where expected');
  }
  const State = CipherState as new (crypto: unknown, k: Uint8Array) => CipherStateLike;
  const state = new State((wrapCrypto as (c: unknown) => unknown)(defaultCrypto), key);
  // The handshake result the package builds (performHandshake): encrypt with empty associated data.
  const handshake = {
    encrypt: (plaintext: Uint8Array | Uint8ArrayList) =>
      state.encryptWithAd(ZEROLEN as Uint8Array, plaintext),
    decrypt: () => {
      throw new Error('this stream only encrypts');
    },
  };
  // encrypt() never touches the connection; the constructor only subscribes to its events.
  const connection = {
    log: Object.assign(() => undefined, { error: () => undefined, trace: () => undefined }),
    addEventListener: () => undefined,
    direction: 'outbound',
  };
  return (toMessageStream as (c: unknown, h: unknown) => EncryptingStream)(connection, handshake);
}

/** A list of several buffers, as yamux hands noise a frame header and its payload. */
function asList(bytes: Uint8Array): Uint8ArrayList {
  const cut = Math.min(12, bytes.byteLength);
  const middle = Math.floor((cut + bytes.byteLength) / 2);
  return new Uint8ArrayList(bytes.subarray(0, cut), bytes.subarray(cut, middle), bytes.subarray(middle));
}

// Both sides of the 1,200-byte switch between the WASM and node:crypto ciphers, one full message,
// one byte over (two messages), and several messages.
const SIZES = [1, 100, 1_199, 1_200, 4_096, MAX_PLAINTEXT, MAX_PLAINTEXT + 1, 200_000];

describe('noise transport messages (patched to one buffer each)', () => {
  for (const shape of ['one buffer', 'a list of buffers'] as const) {
    it(`writes the spec's bytes, one buffer per message, for plaintext given as ${shape}`, async () => {
      const key = randomBytes(32);
      const stream = await noiseStream(key);
      let nonce = 0;
      for (const size of SIZES) {
        const plaintext = randomBytes(size);
        const expected = specMessages(key, nonce, plaintext);
        nonce += expected.length;
        const sent = stream.encrypt(shape === 'one buffer' ? plaintext : asList(plaintext));
        const parts = [...sent];
        expect(Buffer.concat(parts).equals(Buffer.concat(expected)), `bytes for ${size}`).toBe(true);
        expect(parts.length, `buffers for ${size}`).toBe(expected.length);
        for (const [i, part] of parts.entries()) {
          expect(Buffer.from(part).equals(expected[i] as Buffer), `buffer ${i} for ${size}`).toBe(true);
        }
      }
    });
  }

  it('differs from the spec bytes under another key or a skipped nonce (the comparison can fail)', async () => {
    const key = randomBytes(32);
    const plaintext = randomBytes(2_000);
    const sent = Buffer.concat([...(await noiseStream(key)).encrypt(plaintext)]);
    expect(sent.equals(Buffer.concat(specMessages(randomBytes(32), 0, plaintext)))).toBe(false);
    expect(sent.equals(Buffer.concat(specMessages(key, 1, plaintext)))).toBe(false);
    expect(sent.equals(Buffer.concat(specMessages(key, 0, plaintext)))).toBe(true);
  });

  it('sends nothing for an empty chunk', async () => {
    const stream = await noiseStream(randomBytes(32));
    expect(stream.encrypt(new Uint8Array(0)).byteLength).toBe(0);
    expect(stream.encrypt(new Uint8ArrayList()).byteLength).toBe(0);
  });
});
