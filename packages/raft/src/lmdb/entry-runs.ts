import type { Database } from 'lmdb';
import type { StoredEntry } from '../storage/log-storage.ts';
import {
  encodeRun,
  encodeSubRun,
  MAX_RUN_BYTES,
  RUN_HEADER_BYTES,
  RunCursor,
  runBytes,
} from './entry-run.ts';
import { END_OF_GROUP, GroupPrefixCache, indexKey, readIndex } from './group-keys.ts';

/** Groups whose last index is kept for the write path; beyond this the cache is cleared and refilled. */
const TAIL_CACHE_LIMIT = 10_000;
/** Largest value assembled in the reused scratch buffer, bytes; a larger one gets its own buffer. */
const SCRATCH_MAX_BYTES = MAX_RUN_BYTES;

/**
 * Every group's log entries in one LMDB database, as runs (entry-run.ts): the reads and the writes
 * of `LmdbLogStorage` and of the migration from per-entry records.
 *
 * Invariant: a group's runs are disjoint and ordered — each run's first index is above the
 * previous run's last. Appends keep it by discarding what they overlap; so the run holding an
 * index is the last run starting at or before it, and every run but the last starting below an
 * index ends below it.
 *
 * Writes must run inside a write transaction (`LmdbLogStorage` runs them in its batch's child
 * transaction), where lmdb-js copies each key and value into LMDB before `put` returns: the value
 * of a run is assembled in one reused scratch buffer. Reads inside that transaction see its
 * earlier writes, which is how a truncation reads the run it cuts.
 */
export class EntryRuns {
  readonly #db: Database<Uint8Array, Uint8Array>;
  readonly #prefixes = new GroupPrefixCache();
  /**
   * groupId → the group's highest stored index (0 = none) as the write transactions see it. Read
   * and written only by writes, so that an append finds out without a read whether it overlaps
   * stored entries (it must discard them). Exact as long as this object is the only writer of the
   * database and no transaction whose writes it recorded was rolled back: whoever sees one roll
   * back (a failed batch) calls `forgetTails`. Reads never use it: it may be ahead of what is
   * committed.
   */
  readonly #tails = new Map<string, number>();
  /** Where run values are assembled (see the class comment); grows up to `SCRATCH_MAX_BYTES`. */
  #scratch: Buffer = Buffer.alloc(4096);

  constructor(db: Database<Uint8Array, Uint8Array>) {
    this.#db = db;
  }

  /** The group's key prefix (cached). Throws `RangeError` for an empty or too long group id. */
  prefix(groupId: string): Buffer {
    return this.#prefixes.get(groupId);
  }

  /** Drop the group from the prefix cache (it was deleted; it may never come back). */
  forgetPrefix(groupId: string): void {
    this.#prefixes.forget(groupId);
  }

  // ------------------------------------------------------------------------------------ reads

  /**
   * The group's entries with `fromIndex <= index < toIndex`, in index order. Payloads are views of
   * the run values lmdb-js returned: lmdb-js copies every value `getRange` yields into a buffer of
   * its own (never a shared one it overwrites later), so they stay valid while the caller holds
   * them — holding one keeps its run's value (at most `MAX_RUN_BYTES`) alive.
   */
  *entries(groupId: string, fromIndex: number, toIndex: number): Generator<StoredEntry> {
    const prefix = this.prefix(groupId);
    const from = Math.max(0, fromIndex);
    const to = Math.min(toIndex, END_OF_GROUP);
    if (from >= to) return;
    const db = this.#db;
    const fromKey = indexKey(prefix, from);
    // The run holding `from`, if any, is the last one starting at or before it (one reverse seek);
    // the walk starts there, or at the first run after `from` when none starts before it.
    let start: Uint8Array = fromKey;
    for (const key of db.getKeys({ start: fromKey, end: prefix, reverse: true, limit: 1 })) start = key;
    for (const { key, value } of db.getRange({ start, end: indexKey(prefix, to) })) {
      const run = new RunCursor(value, groupId, readIndex(key, prefix.length));
      run.skipTo(from);
      while (run.position < run.count) {
        if (run.first + run.position >= to) return;
        yield run.next();
      }
    }
  }

  /** The group's highest stored index, or 0 when it has none: its last run's first index + count - 1. */
  lastIndex(groupId: string): number {
    const last = this.#lastRun(groupId, this.prefix(groupId));
    return last === undefined ? 0 : last.last;
  }

  // ------------------------------------------------------------------------------------ writes

  /**
   * Store `entries` (consecutive indexes, one group, within the run bounds or a single entry) as
   * one run, after discarding every stored entry of the group at or above the first one's index.
   */
  append(groupId: string, prefix: Buffer, entries: readonly StoredEntry[]): void {
    const first = (entries[0] as StoredEntry).index;
    if (this.#tail(groupId, prefix) >= first) this.truncateAfter(groupId, prefix, first - 1);
    const value = this.#buffer(runBytes(entries));
    encodeRun(entries, value);
    this.#db.put(indexKey(prefix, first), value);
    this.#setTail(groupId, (entries[entries.length - 1] as StoredEntry).index);
  }

  /**
   * Delete the group's entries below `index`: whole runs, and the run straddling `index` is
   * rewritten from `index` on (under its new first index), so no entry below it stays readable.
   */
  truncateBefore(groupId: string, prefix: Buffer, index: number): void {
    if (index <= 0) return;
    const cut = Math.min(index, END_OF_GROUP);
    const db = this.#db;
    const below = this.#keys(prefix, indexKey(prefix, cut));
    const straddling = below.pop();
    if (straddling === undefined) return;
    // Every run starting below `cut` except the last ends before the next one starts: below `cut`.
    for (const key of below) db.remove(key);
    const value = db.get(straddling) as Uint8Array;
    const run = new RunCursor(value, groupId, readIndex(straddling, prefix.length));
    db.remove(straddling);
    if (run.last >= cut) {
      run.skipTo(cut);
      this.#putFromPosition(indexKey(prefix, cut), run);
    } else {
      const tail = this.#tails.get(groupId);
      if (tail !== undefined && tail < cut) this.#setTail(groupId, 0);
    }
  }

  /**
   * Delete the group's entries above `index`: the run holding `index` is cut after it (rewritten
   * under the same key) and every later run deleted.
   */
  truncateAfter(groupId: string, prefix: Buffer, index: number): void {
    const keep = Math.max(-1, index); // entries <= keep stay
    const tail = this.#tails.get(groupId);
    if (tail !== undefined && tail <= keep) return;
    const db = this.#db;
    let newTail = 0;
    if (keep >= 0) {
      let holding: { key: Uint8Array; value: Uint8Array } | undefined;
      const keepKey = indexKey(prefix, keep);
      for (const found of db.getRange({ start: keepKey, end: prefix, reverse: true, limit: 1 })) {
        holding = found;
      }
      if (holding !== undefined) {
        const run = new RunCursor(holding.value, groupId, readIndex(holding.key, prefix.length));
        if (run.last > keep) {
          run.skipTo(keep + 1);
          this.#putBeforePosition(holding.key, run);
        }
        newTail = Math.min(run.last, keep);
      }
    }
    for (const key of this.#keys(indexKey(prefix, keep + 1), indexKey(prefix, END_OF_GROUP))) db.remove(key);
    this.#setTail(groupId, newTail);
  }

  /** Delete every entry of the group. */
  deleteAll(groupId: string, prefix: Buffer): void {
    const db = this.#db;
    for (const key of this.#keys(prefix, indexKey(prefix, END_OF_GROUP))) db.remove(key);
    this.#setTail(groupId, 0);
  }

  /** Forget what the writes recorded about the groups' last indexes (a transaction rolled back). */
  forgetTails(): void {
    this.#tails.clear();
  }

  // ------------------------------------------------------------------------------------ helpers

  /** Put, under `key`, a run of the entries of `run` from its position to its end. */
  #putFromPosition(key: Uint8Array, run: RunCursor): void {
    const start = run.offset;
    const count = run.count - run.position;
    run.skipTo(run.last + 1); // also checks that the entries kept parse
    this.#putPart(key, run.value, start, run.offset, count);
  }

  /** Put, under `key`, a run of the entries of `run` before its position. */
  #putBeforePosition(key: Uint8Array, run: RunCursor): void {
    this.#putPart(key, run.value, RUN_HEADER_BYTES, run.offset, run.position);
  }

  #putPart(key: Uint8Array, value: Uint8Array, start: number, end: number, count: number): void {
    const target = this.#buffer(RUN_HEADER_BYTES + end - start);
    encodeSubRun(value, start, end, count, target);
    this.#db.put(key, target);
  }

  /** The keys in [start, end), collected before anything is removed (no removal under a live cursor). */
  #keys(start: Uint8Array, end: Uint8Array): Uint8Array[] {
    const keys: Uint8Array[] = [];
    for (const key of this.#db.getKeys({ start, end })) keys.push(key);
    return keys;
  }

  #lastRun(groupId: string, prefix: Buffer): RunCursor | undefined {
    for (const { key, value } of this.#db.getRange({
      start: indexKey(prefix, END_OF_GROUP),
      end: prefix,
      reverse: true,
      limit: 1,
    })) {
      return new RunCursor(value, groupId, readIndex(key, prefix.length));
    }
    return undefined;
  }

  #tail(groupId: string, prefix: Buffer): number {
    let tail = this.#tails.get(groupId);
    if (tail === undefined) {
      tail = this.#lastRun(groupId, prefix)?.last ?? 0;
      this.#setTail(groupId, tail);
    }
    return tail;
  }

  #setTail(groupId: string, tail: number): void {
    const tails = this.#tails;
    if (tails.size >= TAIL_CACHE_LIMIT && !tails.has(groupId)) tails.clear();
    tails.set(groupId, tail);
  }

  /** A buffer of `length` bytes, valid until the next call: the scratch buffer when it fits. */
  #buffer(length: number): Buffer {
    if (length > SCRATCH_MAX_BYTES) return Buffer.allocUnsafe(length);
    if (this.#scratch.length < length) {
      this.#scratch = Buffer.alloc(Math.min(SCRATCH_MAX_BYTES, Math.max(length, 2 * this.#scratch.length)));
    }
    return this.#scratch.subarray(0, length);
  }
}
