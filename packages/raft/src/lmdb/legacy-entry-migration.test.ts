import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LogCorruptedError } from '../errors.ts';
import type { StoredEntry } from '../storage/log-storage.ts';
import { MAX_RUN_ENTRIES } from './entry-run.ts';
import { EntryRuns } from './entry-runs.ts';
import { migrateLegacyEntries } from './legacy-entry-migration.ts';
import { ENTRY_RUNS_DB, LmdbLogStorage } from './lmdb-log-storage.ts';
import { hasLegacyEntriesDb, legacyEntriesDb, writeLegacyEntries } from './test-support/legacy-layout.ts';
import { runRecords } from './test-support/runs-inspector.ts';

const entry = (index: number, term = 1): StoredEntry => ({
  index,
  term,
  ts: 500 + index,
  payload: new TextEncoder().encode(`payload ${index}`),
});
const entries = (indexes: readonly number[], term = 1): StoredEntry[] => indexes.map((i) => entry(i, term));
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);
/** What a read returns, comparable with `toEqual` (payloads as text). */
const plain = (stored: Iterable<StoredEntry>) =>
  [...stored].map((e) => ({
    index: e.index,
    term: e.term,
    ts: e.ts,
    text: new TextDecoder().decode(e.payload),
  }));

class Interrupted extends Error {}

describe('migrateLegacyEntries', () => {
  let path = '';
  let root: RootDatabase;

  beforeEach(() => {
    path = mkdtempSync(join(tmpdir(), 'styx-raft-migrate-'));
    root = open({ path, noSync: false, noMetaSync: false, useWritemap: false });
  });

  afterEach(async () => {
    await root.close();
    rmSync(path, { recursive: true, force: true });
  });

  function runsOfRoot(): EntryRuns {
    return new EntryRuns(root.openDB({ name: ENTRY_RUNS_DB, keyEncoding: 'binary', encoding: 'binary' }));
  }

  function legacyCount(): number {
    return legacyEntriesDb(root).getCount();
  }

  it('moves per-entry records into runs when the storage opens, and drops the old database', async () => {
    const big = 2 ** 32;
    const many = range(1, MAX_RUN_ENTRIES + 10);
    await writeLegacyEntries(root, 'a', entries([1, 2, 3, 4, 5]));
    await writeLegacyEntries(root, 'b', entries([3, 4, 10], 2));
    await writeLegacyEntries(root, 'queue/é/日本', entries([big - 1, big, big + 1]));
    await writeLegacyEntries(root, 'c', entries(many));
    const storage = new LmdbLogStorage(root, false);
    expect(hasLegacyEntriesDb(root)).toBe(false);
    expect(plain(storage.entries('a', 0))).toEqual(plain(entries([1, 2, 3, 4, 5])));
    expect(plain(storage.entries('b', 0))).toEqual(plain(entries([3, 4, 10], 2)));
    expect(plain(storage.entries('queue/é/日本', 0))).toEqual(plain(entries([big - 1, big, big + 1])));
    expect(plain(storage.entries('c', 0))).toEqual(plain(entries(many)));
    expect(storage.lastIndex('b')).toBe(10);
    expect(runRecords(root, 'a')).toEqual([{ first: 1, count: 5 }]);
    expect(runRecords(root, 'b')).toEqual([
      { first: 3, count: 2 },
      { first: 10, count: 1 },
    ]);
    expect(runRecords(root, 'c')).toEqual([
      { first: 1, count: MAX_RUN_ENTRIES },
      { first: MAX_RUN_ENTRIES + 1, count: 10 },
    ]);
    // The migrated log is a log like any other: it takes appends, and a reopen migrates nothing.
    await storage.write([{ kind: 'append', groupId: 'a', entry: entry(6) }]);
    expect(migrateLegacyEntries(root, runsOfRoot())).toBe(0);
    const reopened = new LmdbLogStorage(root, false);
    expect(plain(reopened.entries('a', 0))).toEqual(plain(entries(range(1, 6))));
  });

  it('loses nothing when interrupted after a chunk, and the next open completes it', async () => {
    await writeLegacyEntries(root, 'a', entries([1, 2, 3, 4, 5]));
    await writeLegacyEntries(root, 'b', entries([1, 2, 3]));
    await writeLegacyEntries(root, 'c', entries([1, 2, 3, 4]));
    const crashAfterFirstChunk = (chunkEntries: number) => () =>
      migrateLegacyEntries(root, runsOfRoot(), {
        chunkEntries,
        afterChunk: () => {
          throw new Interrupted();
        },
      });
    // Interrupted after one group (a's 5 records are one chunk) ...
    expect(crashAfterFirstChunk(5)).toThrow(Interrupted);
    expect(runRecords(root, 'a')).toEqual([{ first: 1, count: 5 }]);
    expect(runRecords(root, 'b')).toEqual([]);
    expect(legacyCount()).toBe(7);
    // ... then in the middle of a group (b's first 2 records).
    expect(crashAfterFirstChunk(2)).toThrow(Interrupted);
    expect(runRecords(root, 'b')).toEqual([{ first: 1, count: 2 }]);
    expect(legacyCount()).toBe(5);

    const storage = new LmdbLogStorage(root, false);
    expect(hasLegacyEntriesDb(root)).toBe(false);
    expect(plain(storage.entries('a', 0))).toEqual(plain(entries([1, 2, 3, 4, 5])));
    expect(plain(storage.entries('b', 0))).toEqual(plain(entries([1, 2, 3])));
    expect(plain(storage.entries('c', 0))).toEqual(plain(entries([1, 2, 3, 4])));
  });

  it('rolls back the chunk holding a record it cannot read, and refuses to open', async () => {
    await writeLegacyEntries(root, 'a', entries([1, 2]));
    await writeLegacyEntries(root, 'b', entries([1]));
    await legacyEntriesDb(root).put(
      Buffer.from([0, 1, 0x62, 0, 0, 0, 0, 0, 0, 0, 2]),
      Buffer.from([1, 2, 3]),
    );
    expect(() => new LmdbLogStorage(root, false)).toThrow(LogCorruptedError);
    // One chunk: nothing moved, nothing lost.
    expect(legacyCount()).toBe(4);
    expect(runRecords(root, 'a')).toEqual([]);
  });
});
