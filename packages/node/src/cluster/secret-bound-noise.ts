import { createHash } from 'node:crypto';
import { noise } from '@chainsafe/libp2p-noise';
import { keyedNoiseCrypto } from './keyed-noise-crypto.ts';

/**
 * Domain of the prologue derivation: a secret used elsewhere (an old swarm key file kept for
 * another network) never yields the same prologue, and a later scheme can change the label.
 */
const PROLOGUE_LABEL = 'styx-cluster-noise-prologue/1\n';

/**
 * The noise prologue bound to the cluster secret: SHA-256 over a Styx label and the swarm key
 * (`loadClusterSecret`, which carries the secret's 256-bit key).
 *
 * Why this closes the cluster: both sides of a noise XX handshake hash the prologue into the
 * transcript hash `h`, and every encrypted handshake payload is authenticated with `h` as its
 * associated data. Two peers with different prologues therefore disagree on `h`, and the first
 * encrypted message fails its authentication tag: the dialler rejects the answerer's second
 * message (so it never sends its own identity), and an answerer that gets a third message forged
 * without the secret rejects it. No connection, hence no stream, no Raft byte and no RPC, exists
 * unless both sides hold the same secret. Forging `h` without the secret means a SHA-256 preimage.
 */
export function noisePrologue(swarmKey: Uint8Array): Uint8Array {
  return createHash('sha256').update(PROLOGUE_LABEL).update(swarmKey).digest();
}

/**
 * The cluster's one connection cipher: noise with the secret-bound prologue (see `noisePrologue`),
 * replacing the private network (pnet) that ciphered every byte a second time around noise.
 *
 * The crypto is the package's default, which on Node already uses node:crypto for X25519, SHA-256
 * and ChaCha20-Poly1305 above 1,200 bytes, and an AssemblyScript (WASM) ChaCha20-Poly1305 below,
 * where it measured faster than node:crypto's per-call cost — except that node:crypto's cipher is
 * given each session key as a key object made once (keyed-noise-crypto.ts), same bytes. A custom
 * crypto could not cut the socket writes: the package's message stream adds the length prefix as a
 * buffer of its own, so that stream is patched instead to hand the transport one buffer (length,
 * ciphertext, tag) per noise message, same bytes (patches/README.md).
 */
export function secretBoundNoise(swarmKey: Uint8Array): ReturnType<typeof noise> {
  return noise({ prologueBytes: noisePrologue(swarmKey), crypto: keyedNoiseCrypto });
}
