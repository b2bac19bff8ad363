import { LogCorruptedError } from '../errors.ts';
import type { StoredEntry } from '../storage/log-storage.ts';
import { viewOf } from './group-keys.ts';

/*
 * A RUN is consecutive entries of one group written by one batch, stored as ONE LMDB record keyed
 * by the group prefix + the run's FIRST index (group-keys.ts). Its value:
 *
 *   [u32 BE count]  then, per entry:  [f64 term][f64 ts][u32 BE payload length][payload]
 *
 * Entry k of a run has index first + k; a run is never empty. One record per run instead of one
 * per entry is what makes the log cheap to write: LMDB's cost is mostly per operation, not per byte.
 *
 * Bounds (see `MAX_RUN_ENTRIES`, `MAX_RUN_BYTES`): longer appends are split into several runs, so
 * that reading one entry (a Raft term lookup, the last index) copies a bounded value, that cutting a
 * run (a truncation inside it) rewrites a bounded value, and that a value needs a bounded number of
 * contiguous LMDB overflow pages. A single entry larger than `MAX_RUN_BYTES` is a run of its own.
 */

/** Bytes before a run's first entry: the entry count. */
export const RUN_HEADER_BYTES = 4;
/** Bytes before each entry's payload: term, ts, payload length. */
export const RUN_ENTRY_HEADER_BYTES = 20;
/** Entries of one run, at most. */
export const MAX_RUN_ENTRIES = 1024;
/**
 * Bytes of one run's value, at most (unless its single entry alone is larger): 256 KiB. A reader
 * holding one entry's payload (a view into the run's value) keeps at most this much alive.
 */
export const MAX_RUN_BYTES = 256 * 1024;

/** Bytes one entry of `payloadLength` adds to a run's value. */
export function runEntryBytes(payloadLength: number): number {
  return RUN_ENTRY_HEADER_BYTES + payloadLength;
}

/** Whether a run of `count` entries and `bytes` value bytes may take one more of `payloadLength`. */
export function runCanTake(count: number, bytes: number, payloadLength: number): boolean {
  return count < MAX_RUN_ENTRIES && bytes + runEntryBytes(payloadLength) <= MAX_RUN_BYTES;
}

/** Value bytes of a run holding `entries`. */
export function runBytes(entries: readonly StoredEntry[]): number {
  let bytes = RUN_HEADER_BYTES;
  for (const entry of entries) bytes += runEntryBytes(entry.payload.length);
  return bytes;
}

/** Write the run of `entries` into `target`, which is exactly `runBytes(entries)` long. */
export function encodeRun(entries: readonly StoredEntry[], target: Buffer): void {
  target.writeUInt32BE(entries.length, 0);
  let offset = RUN_HEADER_BYTES;
  for (const entry of entries) {
    const payload = entry.payload;
    target.writeDoubleBE(entry.term, offset);
    target.writeDoubleBE(entry.ts, offset + 8);
    target.writeUInt32BE(payload.length, offset + 16);
    target.set(payload, offset + RUN_ENTRY_HEADER_BYTES);
    offset += RUN_ENTRY_HEADER_BYTES + payload.length;
  }
}

/**
 * Reads a run value entry by entry. A value that does not parse (a length running past its end)
 * throws `LogCorruptedError`.
 */
export class RunCursor {
  readonly value: Uint8Array;
  /** Entries in the run. */
  readonly count: number;
  /** Index of the run's first entry. */
  readonly first: number;
  /** Entries stepped over so far: the cursor is at entry `position`, index `first + position`. */
  position = 0;
  /** Byte offset of entry `position` in `value` (`value.length` once every entry was stepped over). */
  offset = RUN_HEADER_BYTES;
  readonly #view: DataView;
  readonly #groupId: string;

  constructor(value: Uint8Array, groupId: string, first: number) {
    this.value = value;
    this.first = first;
    this.#groupId = groupId;
    this.#view = viewOf(value);
    if (value.length < RUN_HEADER_BYTES) throw this.#corrupted(`run value of ${value.length} bytes`);
    this.count = this.#view.getUint32(0);
    if (this.count === 0) throw this.#corrupted('empty run');
  }

  /** Index of the run's last entry. */
  get last(): number {
    return this.first + this.count - 1;
  }

  /** The entry at the cursor (payload: a view of `value`, valid as long as it); then step over it. */
  next(): StoredEntry {
    const offset = this.offset;
    const bytes = this.#entryBytes();
    const view = this.#view;
    const entry: StoredEntry = {
      index: this.first + this.position,
      term: view.getFloat64(offset),
      ts: view.getFloat64(offset + 8),
      payload: this.value.subarray(offset + RUN_ENTRY_HEADER_BYTES, offset + bytes),
    };
    this.offset = offset + bytes;
    this.position++;
    return entry;
  }

  /** Step over entries up to (not including) `index`; stops at the run's end. */
  skipTo(index: number): void {
    const target = Math.min(this.count, index - this.first);
    while (this.position < target) {
      this.offset += this.#entryBytes();
      this.position++;
    }
  }

  #entryBytes(): number {
    const offset = this.offset;
    const length = this.value.length;
    if (this.position >= this.count || offset + RUN_ENTRY_HEADER_BYTES > length) {
      throw this.#corrupted(`entry ${this.first + this.position} beyond the run's ${length} bytes`);
    }
    const bytes = RUN_ENTRY_HEADER_BYTES + this.#view.getUint32(offset + 16);
    if (offset + bytes > length) {
      throw this.#corrupted(
        `payload of entry ${this.first + this.position} beyond the run's ${length} bytes`,
      );
    }
    return bytes;
  }

  #corrupted(detail: string): LogCorruptedError {
    return new LogCorruptedError(this.#groupId, `run at ${this.first}: ${detail}`);
  }
}

/**
 * Into `target` (exactly `RUN_HEADER_BYTES + (endOffset - startOffset)` long): the run of the
 * `count` entries of `value` between the byte offsets `startOffset` and `endOffset` (entry
 * boundaries found with a `RunCursor`). Used to cut a run at a truncation.
 */
export function encodeSubRun(
  value: Uint8Array,
  startOffset: number,
  endOffset: number,
  count: number,
  target: Buffer,
): void {
  target.writeUInt32BE(count, 0);
  target.set(value.subarray(startOffset, endOffset), RUN_HEADER_BYTES);
}
