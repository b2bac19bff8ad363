import { RaftDecodeError } from '../raft/errors.ts';
import type { ConfState, Entry, Snapshot } from '../raft/types.ts';
import { EntryType } from '../raft/types.ts';
import type { EntryMeta } from '../replicated-log.ts';
import type { StoredEntry, StoredSnapshot } from '../storage/log-storage.ts';

/*
 * The byte formats of a Raft group: what a log entry's data holds, how entries and snapshots sit in
 * the node's `LogStore`, and what a snapshot sent to a follower carries.
 *
 * Entry data (what `RaftCore.propose` gets, what followers receive and store):
 *   command entry   [u8 COMMAND_TAG][f64 BE leader ts][encoded command]
 *   no-op           empty (the core's entry at the start of every term)
 *   conf change     the core's encoded ConfChangeV2 (`Entry.type` = ConfChange)
 * The leader's ts travels inside the data, so every replica applies the same ts.
 *
 * Stored entry (`StoredEntry`): index and term as the entry's; `ts` = the leader ts of a command
 * entry (0 otherwise, informational only); payload = the entry data for normal entries, and
 * [u8 CONF_CHANGE_TAG][conf change bytes] for conf changes (rare, so the copy does not matter).
 * A normal entry's payload is empty or starts with COMMAND_TAG, so the first byte tells the type.
 *
 * Snapshot data (Raft `Snapshot.data`):
 *   [u8 flags][f64 BE application index][f64 BE applied ts][machine bytes]
 *   flags bit 0: holds machine state; bit 1: the machine bytes are a transfer payload (what
 *   `StateMachine.transferSnapshot` made of the stored snapshot for a follower; never stored).
 * A snapshot is stored with machine bytes from `StateMachine.snapshot()` (metadata only) and sent
 * as is, or, for a machine with transfer methods, as a transfer payload built when it is sent.
 * Stored snapshot (`StoredSnapshot`): meta = {index: Raft index, term: Raft term, ts: applied ts};
 *   data = [u8 SNAPSHOT_MAGIC][u8 SNAPSHOT_VERSION][u32 BE n][n bytes conf state JSON][snapshot data].
 *
 * The application index (`EntryMeta.index` given to the machine) counts command entries only: the
 * no-ops and conf changes of Raft do not take an index, so a machine sees 1, 2, 3, ... exactly as
 * on the single-voter log, on every replica and every replay (it is derived from the committed log
 * alone, and carried in snapshots).
 */

/** First byte of a command entry's data. */
export const COMMAND_TAG = 0x01;
/** First byte of a stored conf-change entry's payload. */
const CONF_CHANGE_TAG = 0x02;
/** Bytes before the command in a command entry: tag + f64 ts. */
export const COMMAND_HEADER_BYTES = 9;
const SNAPSHOT_MAGIC = 0x52; // 'R'
const SNAPSHOT_VERSION = 1;
const SNAPSHOT_HEADER_BYTES = 17;
const STORED_SNAPSHOT_HEADER_BYTES = 6;
const FLAG_HAS_MACHINE = 1;
const FLAG_TRANSFER = 2;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);

/** The data of a command entry: the leader's ts, then the command bytes. */
export function encodeCommandEntry(ts: number, command: Uint8Array): Uint8Array {
  const data = new Uint8Array(COMMAND_HEADER_BYTES + command.byteLength);
  data[0] = COMMAND_TAG;
  new DataView(data.buffer).setFloat64(1, ts);
  data.set(command, COMMAND_HEADER_BYTES);
  return data;
}

/**
 * Turn `data` — a command encoded after `COMMAND_HEADER_BYTES` of headroom
 * (`CommandCodec.encodeWithHeadroom`) — into a command entry's data, in place.
 */
export function fillCommandHeader(data: Uint8Array, ts: number): Uint8Array {
  data[0] = COMMAND_TAG;
  new DataView(data.buffer, data.byteOffset, COMMAND_HEADER_BYTES).setFloat64(1, ts);
  return data;
}

/** Whether a normal entry's data is a command (not the term's no-op). Throws on an unknown tag. */
export function isCommandEntry(data: Uint8Array): boolean {
  if (data.byteLength === 0) return false;
  if (data[0] !== COMMAND_TAG || data.byteLength < COMMAND_HEADER_BYTES) {
    throw new RaftDecodeError(`unknown entry data tag ${data[0]} (${data.byteLength} bytes)`);
  }
  return true;
}

/**
 * Eight bytes read as one float64 through `TS_SCRATCH`: a DataView per call cost an allocation
 * for every entry written and every entry applied.
 */
const TS_SCRATCH = new Float64Array(1);
const TS_SCRATCH_BYTES = new Uint8Array(TS_SCRATCH.buffer);
const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** The leader's ts of a command entry (an f64, big-endian, after the tag). */
export function commandTs(data: Uint8Array): number {
  const bytes = TS_SCRATCH_BYTES;
  if (LITTLE_ENDIAN_HOST) for (let i = 0; i < 8; i++) bytes[7 - i] = data[1 + i] as number;
  else for (let i = 0; i < 8; i++) bytes[i] = data[1 + i] as number;
  return TS_SCRATCH[0] as number;
}

/** The command bytes of a command entry (a view). */
export function commandBytes(data: Uint8Array): Uint8Array {
  return data.subarray(COMMAND_HEADER_BYTES);
}

/** A Raft entry as the log store keeps it. */
export function toStoredEntry(entry: Entry): StoredEntry {
  if (entry.type === EntryType.ConfChange) {
    const payload = new Uint8Array(1 + entry.data.byteLength);
    payload[0] = CONF_CHANGE_TAG;
    payload.set(entry.data, 1);
    return { index: entry.index, term: entry.term, ts: 0, payload };
  }
  const ts = entry.data.byteLength >= COMMAND_HEADER_BYTES ? commandTs(entry.data) : 0;
  return { index: entry.index, term: entry.term, ts, payload: entry.data };
}

/** A stored entry back as a Raft entry. */
export function fromStoredEntry(stored: StoredEntry): Entry {
  const payload = stored.payload;
  if (payload.byteLength > 0 && payload[0] === CONF_CHANGE_TAG) {
    return { index: stored.index, term: stored.term, type: EntryType.ConfChange, data: payload.subarray(1) };
  }
  return { index: stored.index, term: stored.term, type: EntryType.Normal, data: payload };
}

/** What a snapshot's data says besides the machine bytes. */
export interface SnapshotContent {
  /** Application index of the last command the machine state includes (0 = none). */
  readonly appIndex: number;
  /** The ts of that command (the clamp for later ones). */
  readonly ts: number;
  /** The machine's `snapshot()`, or undefined for a group's bootstrap snapshot (fresh machine). */
  readonly machine: Uint8Array | undefined;
  /** The machine bytes are a transfer payload (`StateMachine.transferSnapshot`), not `snapshot()`. */
  readonly transfer?: boolean;
}

export function encodeSnapshotData(content: SnapshotContent): Uint8Array {
  const machine = content.machine ?? EMPTY;
  const data = new Uint8Array(SNAPSHOT_HEADER_BYTES + machine.byteLength);
  const view = new DataView(data.buffer);
  data[0] =
    content.machine === undefined ? 0 : FLAG_HAS_MACHINE | (content.transfer === true ? FLAG_TRANSFER : 0);
  view.setFloat64(1, content.appIndex);
  view.setFloat64(9, content.ts);
  data.set(machine, SNAPSHOT_HEADER_BYTES);
  return data;
}

export function decodeSnapshotData(data: Uint8Array): SnapshotContent {
  if (data.byteLength < SNAPSHOT_HEADER_BYTES) {
    throw new RaftDecodeError(`snapshot data of ${data.byteLength} bytes is shorter than its header`);
  }
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const flags = data[0] as number;
  return {
    appIndex: view.getFloat64(1),
    ts: view.getFloat64(9),
    machine: (flags & FLAG_HAS_MACHINE) !== 0 ? data.subarray(SNAPSHOT_HEADER_BYTES) : undefined,
    transfer: (flags & FLAG_TRANSFER) !== 0,
  };
}

/** A Raft snapshot as the log store keeps it. */
export function toStoredSnapshot(snapshot: Snapshot): StoredSnapshot {
  const conf = encoder.encode(JSON.stringify(snapshot.meta.confState));
  const data = new Uint8Array(STORED_SNAPSHOT_HEADER_BYTES + conf.byteLength + snapshot.data.byteLength);
  data[0] = SNAPSHOT_MAGIC;
  data[1] = SNAPSHOT_VERSION;
  new DataView(data.buffer).setUint32(2, conf.byteLength);
  data.set(conf, STORED_SNAPSHOT_HEADER_BYTES);
  data.set(snapshot.data, STORED_SNAPSHOT_HEADER_BYTES + conf.byteLength);
  const ts = decodeSnapshotData(snapshot.data).ts;
  const meta: EntryMeta = { index: snapshot.meta.index, term: snapshot.meta.term, ts };
  return { meta, data };
}

/** A stored snapshot back as a Raft snapshot. */
export function fromStoredSnapshot(stored: StoredSnapshot): Snapshot {
  const data = stored.data;
  if (data.byteLength < STORED_SNAPSHOT_HEADER_BYTES || data[0] !== SNAPSHOT_MAGIC) {
    throw new RaftDecodeError('stored snapshot is not in the Raft group format');
  }
  if (data[1] !== SNAPSHOT_VERSION) throw new RaftDecodeError(`stored snapshot version ${data[1]} unknown`);
  const confBytes = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(2);
  const confEnd = STORED_SNAPSHOT_HEADER_BYTES + confBytes;
  if (confEnd > data.byteLength) throw new RaftDecodeError('stored snapshot conf state past its end');
  const confState = parseConfState(decoder.decode(data.subarray(STORED_SNAPSHOT_HEADER_BYTES, confEnd)));
  return {
    meta: { index: stored.meta.index, term: stored.meta.term, confState },
    data: data.subarray(confEnd),
  };
}

function parseConfState(json: string): ConfState {
  const value = JSON.parse(json) as Partial<ConfState> | null;
  const ids = (list: unknown): readonly string[] => {
    if (!Array.isArray(list) || !list.every((id) => typeof id === 'string')) {
      throw new RaftDecodeError('stored conf state has a bad id list');
    }
    return list as string[];
  };
  return {
    voters: ids(value?.voters),
    votersOutgoing: ids(value?.votersOutgoing),
    learners: ids(value?.learners),
    learnersNext: ids(value?.learnersNext),
    autoLeave: value?.autoLeave === true,
  };
}
