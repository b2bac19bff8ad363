/**
 * Binary keys of a node's per-group LMDB records: the log storage's runs, and the node's body store
 * (message bodies by group and message id) use the same layout. A group's records are keyed
 * [u16 BE byte length of groupId][groupId UTF-8][u64 BE index], so one group's records form one
 * contiguous range ordered by index, and no group's range overlaps another's (two prefixes that
 * start alike differ in their length field, or are the same group).
 */

/** Longest group id, in UTF-8 bytes: keeps every key well under LMDB's 1978-byte key limit. */
export const MAX_GROUP_ID_BYTES = 512;
/** Larger than any index (indexes stay below 2^53); the exclusive end of a group's range. */
export const END_OF_GROUP = 2 ** 53;
/** Group prefixes a `GroupPrefixCache` keeps; beyond this it is cleared and refilled. */
const PREFIX_CACHE_LIMIT = 10_000;
/** Bytes of the index at the end of a record key. */
export const INDEX_BYTES = 8;

/** The group id's UTF-8 bytes, checked against `MAX_GROUP_ID_BYTES` (the hard state and snapshot key). */
export function groupIdKey(groupId: string): Buffer {
  const key = Buffer.from(groupId, 'utf8');
  if (key.length === 0 || key.length > MAX_GROUP_ID_BYTES) {
    throw new RangeError(`group id must be 1..${MAX_GROUP_ID_BYTES} UTF-8 bytes, got ${key.length}`);
  }
  return key;
}

/** [u16 BE length][groupId UTF-8]: every record key of the group starts with it; sorts before them all. */
export function groupPrefix(groupId: string): Buffer {
  const id = groupIdKey(groupId);
  const prefix = Buffer.allocUnsafe(2 + id.length);
  prefix.writeUInt16BE(id.length, 0);
  id.copy(prefix, 2);
  return prefix;
}

/** The record key of `index` in the group of `prefix`. */
export function indexKey(prefix: Uint8Array, index: number): Buffer {
  const key = Buffer.allocUnsafe(prefix.length + INDEX_BYTES);
  key.set(prefix, 0);
  writeIndex(key, prefix.length, index);
  return key;
}

export function writeIndex(key: Buffer, prefixLength: number, index: number): void {
  // u64 big-endian from a safe integer: high 32 bits, then low 32 bits, so byte order = index order.
  key.writeUInt32BE(Math.floor(index / 0x1_0000_0000), prefixLength);
  key.writeUInt32BE(index >>> 0, prefixLength + 4);
}

export function readIndex(key: Uint8Array, prefixLength: number): number {
  const view = viewOf(key);
  return view.getUint32(prefixLength) * 0x1_0000_0000 + view.getUint32(prefixLength + 4);
}

export function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Encoded group prefixes by group id: every key of a group starts with its prefix. */
export class GroupPrefixCache {
  readonly #prefixes = new Map<string, Buffer>();

  /** The group's prefix. Throws `RangeError` for an empty or too long group id. */
  get(groupId: string): Buffer {
    let prefix = this.#prefixes.get(groupId);
    if (prefix === undefined) {
      prefix = groupPrefix(groupId);
      if (this.#prefixes.size >= PREFIX_CACHE_LIMIT) this.#prefixes.clear();
      this.#prefixes.set(groupId, prefix);
    }
    return prefix;
  }

  /** Drop the group (it was deleted; it may never come back). */
  forget(groupId: string): void {
    this.#prefixes.delete(groupId);
  }
}
