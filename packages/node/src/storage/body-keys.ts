/**
 * Keys of the body store: [u16 BE byte length of groupId][groupId UTF-8][u64 BE message id].
 * The length prefix keeps one group's keys one contiguous range (no group id is a prefix of
 * another's keys), and the big-endian id orders them by id, so deleting a group is deleting a range.
 */

/** Longest group id, in UTF-8 bytes (the log store's limit too): keys stay far below LMDB's 1978. */
export const MAX_BODY_GROUP_ID_BYTES = 512;
/** Larger than any message id (ids are log indexes, below 2^53). */
export const END_OF_GROUP = 2 ** 53;

/** The UTF-8 bytes of a group id, checked against the limit. */
export function groupIdBytes(groupId: string): Buffer {
  const bytes = Buffer.from(groupId, 'utf8');
  if (bytes.length === 0 || bytes.length > MAX_BODY_GROUP_ID_BYTES) {
    throw new RangeError(`group id must be 1..${MAX_BODY_GROUP_ID_BYTES} UTF-8 bytes, got ${bytes.length}`);
  }
  return bytes;
}

/** [u16 BE length][groupId UTF-8]: the start of every key of the group. */
export function groupPrefix(groupId: string): Buffer {
  const id = groupIdBytes(groupId);
  const prefix = Buffer.allocUnsafe(2 + id.length);
  prefix.writeUInt16BE(id.length, 0);
  id.copy(prefix, 2);
  return prefix;
}

/** The key of message `id` of the group whose prefix is `prefix`. */
export function bodyKey(prefix: Buffer, id: number): Buffer {
  const key = Buffer.allocUnsafe(prefix.length + 8);
  prefix.copy(key, 0);
  // u64 big-endian from a safe integer: high 32 bits, then low 32 bits, so byte order = id order.
  key.writeUInt32BE(Math.floor(id / 0x1_0000_0000), prefix.length);
  key.writeUInt32BE(id >>> 0, prefix.length + 4);
  return key;
}
