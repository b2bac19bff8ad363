/**
 * The snapshot a queue's leader sends a follower that catches up by snapshot: the machine's
 * metadata snapshot plus the bodies of the live messages it refers to (bodies live in the body
 * store, outside the machine's state, so a metadata snapshot alone would leave the follower
 * without them). Never stored as such: the follower writes the bodies to its body store and keeps
 * the metadata snapshot.
 *
 * Layout (format 1):
 *   [u8 format = 1]
 *   [varint n][n bytes: QueueMachine snapshot]
 *   [varint count] then per message: [varint id][varint n][n bytes: stored-message encoding]
 *
 * Size: the whole payload is built in memory (one allocation, measured first), so a transfer holds
 * the queue's live bodies in memory on the leader for its duration and on the follower until the
 * last chunk arrives; Raft cuts it into `snapshotChunkBytes` chunks on the wire.
 */
import { ByteCursor, varintSize, writeVarint } from '../storage/binary.ts';
import { StoredBytesCorruptedError } from '../storage/errors.ts';
import { decodeStoredMessage, encodeStoredMessage } from '../storage/stored-message-codec.ts';
import { QueueSnapshotError } from './errors.ts';
import type { StoredMessage } from './types.ts';

const TRANSFER_FORMAT = 1;

/** One message carried by a transfer snapshot. */
export interface TransferredBody {
  readonly id: number;
  readonly message: StoredMessage;
}

export interface TransferSnapshot {
  /** The `QueueMachine.snapshot()` bytes. */
  readonly metadata: Uint8Array;
  readonly bodies: readonly TransferredBody[];
}

export function encodeTransferSnapshot(snapshot: TransferSnapshot): Uint8Array {
  const { metadata, bodies } = snapshot;
  const encodings: Uint8Array[] = new Array(bodies.length);
  let size = 1 + varintSize(metadata.byteLength) + metadata.byteLength + varintSize(bodies.length);
  for (let i = 0; i < bodies.length; i++) {
    const { id, message } = bodies[i] as TransferredBody;
    const encoding = encodeStoredMessage(message);
    encodings[i] = encoding;
    size += varintSize(id) + varintSize(encoding.byteLength) + encoding.byteLength;
  }
  const out = Buffer.allocUnsafe(size);
  out[0] = TRANSFER_FORMAT;
  let pos = writeVarint(out, 1, metadata.byteLength);
  out.set(metadata, pos);
  pos += metadata.byteLength;
  pos = writeVarint(out, pos, bodies.length);
  for (let i = 0; i < bodies.length; i++) {
    const encoding = encodings[i] as Uint8Array;
    pos = writeVarint(out, pos, (bodies[i] as TransferredBody).id);
    pos = writeVarint(out, pos, encoding.byteLength);
    out.set(encoding, pos);
    pos += encoding.byteLength;
  }
  return out;
}

/**
 * Decode a transfer snapshot. The metadata is a view of `bytes`; each message is decoded from a
 * copy of its encoding, so a body kept by the body store does not keep the whole payload alive.
 * Throws `QueueSnapshotError` on malformed bytes.
 */
export function decodeTransferSnapshot(bytes: Uint8Array): TransferSnapshot {
  try {
    const r = new ByteCursor(bytes, 'queue transfer snapshot');
    const format = r.u8();
    if (format !== TRANSFER_FORMAT) throw new QueueSnapshotError(`unknown transfer format ${format}`);
    const metadata = r.bytes(r.varint());
    const count = r.varint();
    // Each message takes at least three bytes: a count beyond that is corruption, not an allocation.
    if (count > r.remaining) throw new QueueSnapshotError(`transfer body count ${count}`);
    const bodies: TransferredBody[] = new Array(count);
    for (let i = 0; i < count; i++) {
      const id = r.varint();
      const encoding = Buffer.from(r.bytes(r.varint())); // a copy
      bodies[i] = { id, message: decodeStoredMessage(encoding, `transferred body ${id}`) };
    }
    if (r.remaining !== 0) throw new QueueSnapshotError(`${r.remaining} trailing transfer bytes`);
    return { metadata, bodies };
  } catch (err) {
    if (err instanceof StoredBytesCorruptedError) throw new QueueSnapshotError(err.message);
    throw err;
  }
}
