import { RaftDecodeError } from '../raft/errors.ts';
import { decodeMessage, encodedSizeHint, writeMessage } from '../raft/message-codec.ts';
import { WireReader, WireWriter } from '../raft/wire-buffer.ts';
import type { GroupMessage, PeerBatch, QuiesceNotice } from './transport.ts';

/**
 * Binary encoding of a `PeerBatch` for a network transport: what one host sends one peer in one
 * turn. Each message is carried as the bytes of `encodeMessage` (written in place, see
 * `WireWriter.startLength`), so the Raft message format has one definition, shared with the
 * simulator.
 *
 * Layout (varints unless noted): version u8 | from str | message count
 * | (groupId str | message bytes)* | quiesce count | (groupId str | term | commit)*.
 */

const VERSION = 1;

/**
 * Bound on messages (and on quiesce notices) in one decoded batch, so a corrupt count cannot make
 * the decoder loop without limit. A batch holds at most one turn of messages for one peer: a few
 * per group, and a node runs thousands of groups, not a million.
 */
const MAX_ITEMS_PER_BATCH = 1 << 20;

/**
 * Encode `batch`; the result shares no memory with it. With `headroom`, the encoding starts that
 * many bytes into the result (left zero, for a frame header written in place: no further copy).
 */
export function encodePeerBatch(batch: PeerBatch, headroom = 0): Uint8Array {
  let size = headroom + 16 + batch.from.length + batch.quiesce.length * 64;
  for (const m of batch.messages) size += 16 + m.groupId.length + encodedSizeHint(m.message);
  const w = new WireWriter(size);
  for (let i = 0; i < headroom; i++) w.u8(0);
  w.u8(VERSION);
  w.string(batch.from);
  w.varint(batch.messages.length);
  for (const { groupId, message } of batch.messages) {
    w.string(groupId);
    // Each message in place, its length filled in after: its entries' bytes are copied once, into
    // the frame, and no buffer per message is made (read back as `w.bytes(encodeMessage(m))` is).
    const at = w.startLength();
    writeMessage(w, message);
    w.endLength(at);
  }
  w.varint(batch.quiesce.length);
  for (const notice of batch.quiesce) {
    w.string(notice.groupId);
    w.varint(notice.term);
    w.varint(notice.commit);
  }
  return w.finish();
}

/** Decode what `encodePeerBatch` wrote; malformed or truncated input throws `RaftDecodeError`. */
export function decodePeerBatch(bytes: Uint8Array): PeerBatch {
  const r = new WireReader(bytes);
  const version = r.u8();
  if (version !== VERSION) throw new RaftDecodeError(`unknown peer batch version ${version}`);
  const from = r.string();
  const messageCount = readCount(r, 'messages');
  const messages: GroupMessage[] = [];
  for (let i = 0; i < messageCount; i++) {
    const groupId = r.string();
    // A view: decodeMessage copies what it keeps (entry data, snapshot chunks).
    messages.push({ groupId, message: decodeMessage(r.view()) });
  }
  const quiesceCount = readCount(r, 'quiesce notices');
  const quiesce: QuiesceNotice[] = [];
  for (let i = 0; i < quiesceCount; i++) {
    quiesce.push({ groupId: r.string(), term: r.varint(), commit: r.varint() });
  }
  r.end();
  return { from, messages, quiesce };
}

function readCount(r: WireReader, what: string): number {
  const count = r.varint();
  if (count > MAX_ITEMS_PER_BATCH) throw new RaftDecodeError(`too many ${what} in a batch: ${count}`);
  return count;
}
