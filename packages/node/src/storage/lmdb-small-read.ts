/**
 * Reading a small binary value out of LMDB into memory of its own, at the cost of a copy into
 * Node's shared allocation pool rather than a new ArrayBuffer.
 *
 * lmdb-js's `get` of a binary value (`getBinary`) reads it into the module's shared 16 MiB buffer
 * and returns `Uint8Array.prototype.slice` of it: a new ArrayBuffer per read, whose allocation and
 * later collection cost more than the read itself (16 % of a node's main thread while a consumer
 * drained a queue whose bodies had left memory). `getBinaryFast` returns a view of the shared
 * buffer (valid until the next read); copying it into `Buffer.allocUnsafe` memory, which slices
 * values under 4 KiB out of an 8 KiB pool, measured ~1.3 µs cheaper per 1 KiB value.
 *
 * The catch: a value larger than the shared buffer makes `getBinaryFast` grow that buffer to
 * twice the value's size, and keep it for the life of the process (`getBinary` reads such a value
 * into a buffer of its own instead). So only call this for a value known to be at most
 * `SMALL_READ_MAX_BYTES`, well under lmdb-js's 16 MiB.
 */
import type { Database } from 'lmdb';

/** Largest value `readSmallValue` may be used for, bytes. */
export const SMALL_READ_MAX_BYTES = 1024 * 1024;

/**
 * The value at `key` (undefined when absent), copied out of lmdb-js's shared read buffer; the
 * caller must know it is at most SMALL_READ_MAX_BYTES long (see the header).
 */
export function readSmallValue(db: Database<Uint8Array, Uint8Array>, key: Uint8Array): Buffer | undefined {
  const shared = db.getBinaryFast(key);
  if (shared === undefined) return undefined;
  // The shared buffer's `length` is an own property set to this value's size; its typed-array
  // length is the whole buffer's. subarray(0, length) is exactly the value.
  const size = shared.length;
  const copy = Buffer.allocUnsafe(size);
  copy.set(shared.subarray(0, size));
  return copy;
}
