import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// The cluster secret's private network (@libp2p/pnet) ciphers every connection with xsalsa20's
// WASM build, whose instances share one memory of at most 1000 pages (64 MiB). Unpatched, an
// instance whose view of that memory was detached by another instance's growth grew it again by
// its whole input on its next update; with a few busy connections the memory hit its maximum
// and the node crashed (RangeError: WebAssembly.Memory.grow(): Maximum memory size exceeded).
// patches/xsalsa20@1.2.0.patch refreshes the view first.
// Nodes no longer run the private network (secret-bound-noise.ts); @libp2p/pnet stays a dev
// dependency for the test of a previous-build node (secret-bound-noise.test.ts), and with it this
// patch and its test. Both can go once no test builds a pnet node.

type Cipher = { update(input: Uint8Array, output?: Uint8Array): Uint8Array };
const requireFromPnet = createRequire(createRequire(import.meta.url).resolve('@libp2p/pnet'));
const xsalsa20 = requireFromPnet('xsalsa20') as (nonce: Uint8Array, key: Uint8Array) => Cipher;

describe('the private network cipher (xsalsa20, patched)', () => {
  it('survives many connections taking turns with large and small chunks', () => {
    const key = new Uint8Array(32).fill(7);
    const ciphers = Array.from({ length: 4 }, (_, i) => xsalsa20(new Uint8Array(24).fill(i), key));
    const big = new Uint8Array(4 * 1024 * 1024);
    const small = new Uint8Array(100);
    // 4 MiB chunks alternating between instances: unpatched, memory grows by ~4 MiB per turn and
    // passes 64 MiB within 16 turns.
    for (let turn = 0; turn < 200; turn++) {
      const cipher = ciphers[turn % ciphers.length] as Cipher;
      expect(() => cipher.update(turn % 3 === 0 ? small : big)).not.toThrow();
    }
  });

  it('still ciphers correctly: decrypting what was encrypted gives the input back', () => {
    const key = new Uint8Array(32).fill(3);
    const nonce = new Uint8Array(24).fill(9);
    const encrypt = xsalsa20(nonce, key);
    const decrypt = xsalsa20(nonce, key);
    const other = xsalsa20(new Uint8Array(24), key);
    const input = new Uint8Array(300_000).map((_, i) => i % 251);
    const sealed = encrypt.update(input);
    other.update(new Uint8Array(2 * 1024 * 1024)); // grows the shared memory in between
    expect(Buffer.from(decrypt.update(sealed)).equals(Buffer.from(input))).toBe(true);
  });
});
