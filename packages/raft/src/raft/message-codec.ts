import { RaftDecodeError } from './errors.ts';
import type {
  ConfState,
  Entry,
  EntryType,
  Message,
  MessageType,
  SnapshotChunk,
  SnapshotMeta,
} from './types.ts';
import { WireReader, WireWriter } from './wire-buffer.ts';

/**
 * Binary encoding of Raft messages for a transport (and for the simulator, which encodes and
 * decodes every message it delivers so that no replica can alias another's objects).
 *
 * Layout (varints unless noted): version u8 | type u8 | from str | to str | term | logTerm | index
 * | commit | flags u8 (bit 0 reject, bit 1 has snapshot) | rejectHint | context str
 * | entry count | entries (term | index | type u8 | data bytes)*
 * | [snapshot: meta (index | term | confState) | chunk | count | totalBytes | data bytes].
 * ConfState: four id lists (count, then strings) and autoLeave u8.
 */

const VERSION = 1;
const FLAG_REJECT = 1;
const FLAG_SNAPSHOT = 2;
const MAX_MESSAGE_TYPE = 14;

/** Bound on entries in one decoded message, so a corrupt count cannot allocate without limit. */
const MAX_ENTRIES_PER_MESSAGE = 1 << 20;

export function encodeMessage(m: Message): Uint8Array {
  const w = new WireWriter(encodedSizeHint(m));
  writeMessage(w, m);
  return w.finish();
}

/** About the bytes `encodeMessage(m)` takes (a writer's first capacity: it grows past it if need be). */
export function encodedSizeHint(m: Message): number {
  let size = 64 + m.from.length + m.to.length + m.context.length;
  for (const entry of m.entries) size += 24 + entry.data.byteLength;
  if (m.snapshot !== undefined) size += 128 + m.snapshot.data.byteLength;
  return size;
}

/** Write what `encodeMessage(m)` returns into `w`, in place (no message buffer of its own). */
export function writeMessage(w: WireWriter, m: Message): void {
  w.u8(VERSION);
  w.u8(m.type);
  w.string(m.from);
  w.string(m.to);
  w.varint(m.term);
  w.varint(m.logTerm);
  w.varint(m.index);
  w.varint(m.commit);
  w.u8((m.reject ? FLAG_REJECT : 0) | (m.snapshot !== undefined ? FLAG_SNAPSHOT : 0));
  w.varint(m.rejectHint);
  w.string(m.context);
  w.varint(m.entries.length);
  for (const entry of m.entries) {
    w.varint(entry.term);
    w.varint(entry.index);
    w.u8(entry.type);
    w.bytes(entry.data);
  }
  if (m.snapshot !== undefined) {
    const s = m.snapshot;
    writeMeta(w, s.meta);
    w.varint(s.chunk);
    w.varint(s.count);
    w.varint(s.totalBytes);
    w.bytes(s.data);
  }
}

export function decodeMessage(bytes: Uint8Array): Message {
  const r = new WireReader(bytes);
  const version = r.u8();
  if (version !== VERSION) throw new RaftDecodeError(`unknown message version ${version}`);
  const type = r.u8();
  if (type < 1 || type > MAX_MESSAGE_TYPE) throw new RaftDecodeError(`unknown message type ${type}`);
  const from = r.string();
  const to = r.string();
  const term = r.varint();
  const logTerm = r.varint();
  const index = r.varint();
  const commit = r.varint();
  const flags = r.u8();
  const rejectHint = r.varint();
  const context = r.string();
  const count = r.varint();
  if (count > MAX_ENTRIES_PER_MESSAGE) throw new RaftDecodeError(`too many entries: ${count}`);
  const entries: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const entryTerm = r.varint();
    const entryIndex = r.varint();
    const entryType = r.u8();
    if (entryType > 1) throw new RaftDecodeError(`unknown entry type ${entryType}`);
    entries.push({ term: entryTerm, index: entryIndex, type: entryType as EntryType, data: r.bytes() });
  }
  let snapshot: SnapshotChunk | undefined;
  if ((flags & FLAG_SNAPSHOT) !== 0) {
    const meta = readMeta(r);
    const chunk = r.varint();
    const chunkCount = r.varint();
    const totalBytes = r.varint();
    const data = r.bytes();
    if (chunkCount < 1 || chunk >= chunkCount)
      throw new RaftDecodeError(`bad snapshot chunk ${chunk}/${chunkCount}`);
    snapshot = { meta, chunk, count: chunkCount, totalBytes, data };
  }
  r.end();
  return {
    type: type as MessageType,
    from,
    to,
    term,
    logTerm,
    index,
    entries,
    commit,
    reject: (flags & FLAG_REJECT) !== 0,
    rejectHint,
    context,
    snapshot,
  };
}

function writeIds(w: WireWriter, ids: readonly string[]): void {
  w.varint(ids.length);
  for (const id of ids) w.string(id);
}

function readIds(r: WireReader): string[] {
  const count = r.varint();
  if (count > 1 << 16) throw new RaftDecodeError(`too many ids: ${count}`);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push(r.string());
  return ids;
}

function writeMeta(w: WireWriter, meta: SnapshotMeta): void {
  w.varint(meta.index);
  w.varint(meta.term);
  const cs = meta.confState;
  writeIds(w, cs.voters);
  writeIds(w, cs.votersOutgoing);
  writeIds(w, cs.learners);
  writeIds(w, cs.learnersNext);
  w.u8(cs.autoLeave ? 1 : 0);
}

function readMeta(r: WireReader): SnapshotMeta {
  const index = r.varint();
  const term = r.varint();
  const confState: ConfState = {
    voters: readIds(r),
    votersOutgoing: readIds(r),
    learners: readIds(r),
    learnersNext: readIds(r),
    autoLeave: r.u8() === 1,
  };
  return { index, term, confState };
}
