import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogWrite, StoredEntry } from '../storage/log-storage.ts';
import { MAX_RUN_BYTES, MAX_RUN_ENTRIES, RUN_ENTRY_HEADER_BYTES, RUN_HEADER_BYTES } from './entry-run.ts';
import { MAX_GROUP_ID_BYTES } from './group-keys.ts';
import { LmdbLogStorage } from './lmdb-log-storage.ts';
import { runRecords } from './test-support/runs-inspector.ts';

const payloadOf = (index: number, bytes = 8): Uint8Array => {
  const payload = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) payload[i] = (index * 31 + i) & 0xff;
  return payload;
};
const entry = (index: number, term = 1, bytes = 8): StoredEntry => ({
  index,
  term,
  ts: 10_000 + index,
  payload: payloadOf(index, bytes),
});
const append = (groupId: string, e: StoredEntry): LogWrite => ({ kind: 'append', groupId, entry: e });
const appends = (groupId: string, from: number, to: number, term = 1): LogWrite[] =>
  Array.from({ length: to - from + 1 }, (_, i) => append(groupId, entry(from + i, term)));
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('LmdbLogStorage runs', () => {
  let path = '';
  let root: RootDatabase;
  let storage: LmdbLogStorage;

  beforeEach(() => {
    path = mkdtempSync(join(tmpdir(), 'styx-raft-runs-'));
    root = open({ path, noSync: false, noMetaSync: false, useWritemap: false });
    storage = new LmdbLogStorage(root, false);
  });

  afterEach(async () => {
    await root.close();
    rmSync(path, { recursive: true, force: true });
  });

  /** Every stored entry of the group, checked against what `entry(index, term)` wrote. */
  function readBack(groupId: string, from = 0, to?: number): number[] {
    return [...storage.entries(groupId, from, to)].map((stored) => {
      expect(stored.ts).toBe(10_000 + stored.index);
      expect(Array.from(stored.payload)).toEqual(Array.from(payloadOf(stored.index, stored.payload.length)));
      return stored.index;
    });
  }

  /** Reopen the storage over the same environment: a fresh instance with no cached state. */
  function reopen(): void {
    storage = new LmdbLogStorage(root, false);
  }

  it('stores a batch of consecutive appends as runs of at most MAX_RUN_ENTRIES entries', async () => {
    const total = 2 * MAX_RUN_ENTRIES + 452;
    await storage.write(appends('g', 1, total));
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: MAX_RUN_ENTRIES },
      { first: MAX_RUN_ENTRIES + 1, count: MAX_RUN_ENTRIES },
      { first: 2 * MAX_RUN_ENTRIES + 1, count: 452 },
    ]);
    expect(readBack('g')).toEqual(range(1, total));
    expect(storage.lastIndex('g')).toBe(total);
  });

  it('splits runs at MAX_RUN_BYTES; an entry larger than that is a run of its own', async () => {
    const bytes = 100 * 1024;
    // Two entries fit a run (header + 2 × (entry header + payload) <= MAX_RUN_BYTES), three do not.
    expect(RUN_HEADER_BYTES + 2 * (RUN_ENTRY_HEADER_BYTES + bytes)).toBeLessThanOrEqual(MAX_RUN_BYTES);
    expect(RUN_HEADER_BYTES + 3 * (RUN_ENTRY_HEADER_BYTES + bytes)).toBeGreaterThan(MAX_RUN_BYTES);
    const big = MAX_RUN_BYTES + 1;
    await storage.write([
      ...[1, 2, 3, 4, 5].map((i) => append('g', entry(i, 1, bytes))),
      append('g', entry(6, 1, big)),
      append('g', entry(7)),
      append('g', entry(8)),
    ]);
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: 2 },
      { first: 3, count: 2 },
      { first: 5, count: 1 },
      { first: 6, count: 1 },
      { first: 7, count: 2 },
    ]);
    expect(readBack('g')).toEqual(range(1, 8));
    expect([...storage.entries('g', 6, 7)][0]?.payload.length).toBe(big);
  });

  it('writes one run per group for interleaved appends, also across an attached write', async () => {
    let applied = 0;
    await storage.write([
      append('g', entry(1)),
      append('h', entry(1)),
      { kind: 'attached', write: { apply: () => applied++ } },
      append('g', entry(2)),
      { kind: 'hardState', groupId: 'g', state: { term: 1, vote: undefined, commit: 1 } },
      append('h', entry(2)),
      append('g', entry(3)),
    ]);
    expect(applied).toBe(1);
    expect(runRecords(root, 'g')).toEqual([{ first: 1, count: 3 }]);
    expect(runRecords(root, 'h')).toEqual([{ first: 1, count: 2 }]);
    expect(readBack('g')).toEqual([1, 2, 3]);
  });

  it('ends a run at a gap in the indexes and at a truncation of its group', async () => {
    await storage.write([
      ...appends('g', 1, 3),
      ...appends('g', 7, 8),
      { kind: 'truncateBefore', groupId: 'g', index: 2 },
      ...appends('g', 9, 10),
    ]);
    expect(runRecords(root, 'g')).toEqual([
      { first: 2, count: 2 },
      { first: 7, count: 2 },
      { first: 9, count: 2 },
    ]);
    expect(readBack('g')).toEqual([2, 3, 7, 8, 9, 10]);
  });

  it('reads exactly [from, to) across run boundaries', async () => {
    // Runs [1..3] [4] [5..8] [9..10]: one per batch.
    for (const [from, to] of [
      [1, 3],
      [4, 4],
      [5, 8],
      [9, 10],
    ] as const) {
      await storage.write(appends('g', from, to));
    }
    expect(runRecords(root, 'g').map((run) => run.first)).toEqual([1, 4, 5, 9]);
    for (let from = 0; from <= 12; from++) {
      for (let to = from; to <= 12; to++) {
        const expected = range(Math.max(1, from), Math.min(10, to - 1));
        expect(readBack('g', from, to), `[${from}, ${to})`).toEqual(expected);
      }
      expect(readBack('g', from)).toEqual(range(Math.max(1, from), 10));
    }
    // A consumer that stops early (a term lookup) gets the one entry it asked for.
    for (const stored of storage.entries('g', 6)) {
      expect(stored.index).toBe(6);
      break;
    }
  });

  it('truncateBefore deletes the runs below and rewrites the straddling one from the cut', async () => {
    await storage.write(appends('g', 1, 3));
    await storage.write(appends('g', 4, 7));
    await storage.write(appends('g', 8, 10));
    await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 6 }]);
    // Nothing below 6 is left in the database, not only hidden from reads.
    expect(runRecords(root, 'g')).toEqual([
      { first: 6, count: 2 },
      { first: 8, count: 3 },
    ]);
    expect(readBack('g')).toEqual(range(6, 10));
    await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 8 }]);
    expect(runRecords(root, 'g')).toEqual([{ first: 8, count: 3 }]);
    await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 11 }]);
    expect(runRecords(root, 'g')).toEqual([]);
    expect(storage.lastIndex('g')).toBe(0);
    // The group is empty: an append anywhere starts a new log.
    await storage.write(appends('g', 11, 12));
    expect(readBack('g')).toEqual([11, 12]);
  });

  it('truncateAfter cuts the run holding the index and deletes the later runs', async () => {
    await storage.write(appends('g', 1, 3));
    await storage.write(appends('g', 4, 7));
    await storage.write(appends('g', 8, 10));
    await storage.write([{ kind: 'truncateAfter', groupId: 'g', index: 5 }]);
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: 3 },
      { first: 4, count: 2 },
    ]);
    expect(storage.lastIndex('g')).toBe(5);
    await storage.write(appends('g', 6, 6, 2));
    expect(readBack('g')).toEqual(range(1, 6));
    expect([...storage.entries('g', 6)][0]?.term).toBe(2);
    await storage.write([{ kind: 'truncateAfter', groupId: 'g', index: 3 }]);
    expect(runRecords(root, 'g')).toEqual([{ first: 1, count: 3 }]);
    await storage.write([{ kind: 'truncateAfter', groupId: 'g', index: 0 }]);
    expect(runRecords(root, 'g')).toEqual([]);
  });

  it('truncates both ways inside one run in one batch', async () => {
    await storage.write(appends('g', 1, 10));
    await storage.write([
      { kind: 'truncateBefore', groupId: 'g', index: 4 },
      { kind: 'truncateAfter', groupId: 'g', index: 7 },
    ]);
    expect(runRecords(root, 'g')).toEqual([{ first: 4, count: 4 }]);
    expect(readBack('g')).toEqual([4, 5, 6, 7]);
  });

  it('an append in the middle of a run cuts the run there and replaces the rest', async () => {
    await storage.write(appends('g', 1, 10));
    await storage.write(appends('g', 5, 6, 2));
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: 4 },
      { first: 5, count: 2 },
    ]);
    expect([...storage.entries('g', 0)].map((e) => `${e.index}:${e.term}`)).toEqual([
      '1:1',
      '2:1',
      '3:1',
      '4:1',
      '5:2',
      '6:2',
    ]);
    // The same from a fresh instance, which has to look up the group's last index in the database.
    reopen();
    await storage.write(appends('g', 3, 3, 3));
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: 2 },
      { first: 3, count: 1 },
    ]);
    expect(storage.lastIndex('g')).toBe(3);
    // Below the group's first run: nothing of the old log stays.
    reopen();
    await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 2 }]);
    await storage.write(appends('g', 1, 1, 4));
    expect(runRecords(root, 'g')).toEqual([{ first: 1, count: 1 }]);
  });

  it('an append overlapping runs written earlier in the same batch replaces them', async () => {
    await storage.write([...appends('g', 1, 6), append('h', entry(1)), ...appends('g', 3, 4, 2)]);
    expect(runRecords(root, 'g')).toEqual([
      { first: 1, count: 2 },
      { first: 3, count: 2 },
    ]);
    expect([...storage.entries('g', 0)].map((e) => e.term)).toEqual([1, 1, 2, 2]);
  });

  it('deleteGroup removes every run of the group and no other', async () => {
    await storage.write(appends('g', 1, 3));
    await storage.write(appends('g', 4, 5));
    await storage.write(appends('g2', 1, 2));
    await storage.write([{ kind: 'deleteGroup', groupId: 'g' }]);
    expect(runRecords(root, 'g')).toEqual([]);
    expect(readBack('g2')).toEqual([1, 2]);
    await storage.write(appends('g', 7, 7));
    expect(readBack('g')).toEqual([7]);
  });

  it('keeps payloads valid while they are held, after later reads and writes', async () => {
    const large = MAX_RUN_BYTES / 4; // runs above lmdb-js's 32 KiB dedicated-buffer threshold
    await storage.write([...[1, 2, 3].map((i) => append('g', entry(i, 1, large)))]);
    await storage.write(appends('s', 1, 50));
    const held = [...storage.entries('g', 0), ...storage.entries('s', 0)];
    for (let round = 0; round < 20; round++) {
      await storage.write(appends('s', 51 + round, 51 + round));
      await storage.write([append('g', entry(4 + round, 1, large))]);
      for (const _ of storage.entries('g', 0)) {
        // reads reuse lmdb-js's buffers
      }
      for (const _ of storage.entries('s', 0)) {
        // reads reuse lmdb-js's buffers
      }
    }
    for (const stored of held) {
      expect(Array.from(stored.payload)).toEqual(Array.from(payloadOf(stored.index, stored.payload.length)));
    }
  });

  it('handles the largest group id and indexes up to 2^53 - 1', async () => {
    const id = 'x'.repeat(MAX_GROUP_ID_BYTES);
    const top = 2 ** 53 - 1;
    await storage.write([append(id, entry(top - 2)), append(id, entry(top - 1)), append(id, entry(top))]);
    expect(runRecords(root, id)).toEqual([{ first: top - 2, count: 3 }]);
    expect(readBack(id, top - 1)).toEqual([top - 1, top]);
    expect(storage.lastIndex(id)).toBe(top);
    await storage.write([{ kind: 'truncateAfter', groupId: id, index: top - 1 }]);
    expect(storage.lastIndex(id)).toBe(top - 1);
    await storage.write([{ kind: 'truncateBefore', groupId: id, index: top - 1 }]);
    expect(runRecords(root, id)).toEqual([{ first: top - 1, count: 1 }]);
  });

  it('writes nothing of a batch whose attached write throws, and refuses later batches', async () => {
    await storage.write(appends('g', 1, 2));
    const failing = storage.write([
      ...appends('g', 3, 4),
      {
        kind: 'attached',
        write: {
          apply: () => {
            throw new Error('attached write failed');
          },
        },
      },
      ...appends('g', 5, 6),
    ]);
    await expect(failing).rejects.toThrow('attached write failed');
    expect(readBack('g')).toEqual([1, 2]);
    expect(runRecords(root, 'g')).toEqual([{ first: 1, count: 2 }]);
    await expect(storage.write(appends('g', 3, 3))).rejects.toThrow('attached write failed');
  });
});
