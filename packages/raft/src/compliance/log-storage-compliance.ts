import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogStorage, LogWrite, StoredEntry } from '../storage/log-storage.ts';

/** How the suite gets a `LogStorage` of one implementation. */
export interface LogStorageHarness {
  /** Before each test: a storage over fresh, empty state. */
  open(): LogStorage | Promise<LogStorage>;
  /** Durable storages: close the given one and open a new instance over the same state. */
  reopen?(storage: LogStorage): LogStorage | Promise<LogStorage>;
  /** After each test: close and remove everything. */
  teardown?(): void | Promise<void>;
}

const encoder = new TextEncoder();
const text = (s: string): Uint8Array => encoder.encode(s);
const entry = (index: number, payload = `e${index}`, term = 1): StoredEntry => ({
  index,
  term,
  ts: 1_000 + index,
  payload: text(payload),
});
const append = (groupId: string, e: StoredEntry): LogWrite => ({ kind: 'append', groupId, entry: e });
const indexes = (entries: Iterable<StoredEntry>): number[] => [...entries].map((e) => e.index);

/**
 * Register the `LogStorage` compliance tests (vitest): the same behaviour from the LMDB storage,
 * the in-memory one, and any future one (a simulation's disk).
 */
export function logStorageCompliance(name: string, harness: LogStorageHarness): void {
  describe(`LogStorage compliance: ${name}`, () => {
    let storage: LogStorage;

    beforeEach(async () => {
      storage = await harness.open();
    });

    afterEach(async () => {
      await harness.teardown?.();
    });

    it('stores entries and reads ranges [from, to) in index order', async () => {
      await storage.write([1, 2, 3, 4, 5].map((i) => append('g', entry(i))));
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2, 3, 4, 5]);
      expect(indexes(storage.entries('g', 2, 4))).toEqual([2, 3]);
      expect(indexes(storage.entries('g', 6))).toEqual([]);
      expect(storage.lastIndex('g')).toBe(5);
      expect(storage.lastIndex('nothing-here')).toBe(0);
      expect(indexes(storage.entries('nothing-here', 0))).toEqual([]);
      const [third] = storage.entries('g', 3, 4);
      expect(third?.term).toBe(1);
      expect(third?.ts).toBe(1_003);
      expect(new TextDecoder().decode(third?.payload)).toBe('e3');
    });

    it('keeps payload bytes exactly, including empty payloads, and copies them on write', async () => {
      const all = Uint8Array.from({ length: 256 }, (_, i) => i);
      const reused = text('before');
      await storage.write([
        append('g', { index: 1, term: 7, ts: 2.5, payload: all }),
        append('g', { index: 2, term: 7, ts: 3, payload: new Uint8Array(0) }),
        append('g', { index: 3, term: 7, ts: 3, payload: reused }),
      ]);
      reused.fill(0);
      const [a, b, c] = storage.entries('g', 1);
      expect(Array.from(a?.payload ?? [])).toEqual(Array.from(all));
      expect(a?.ts).toBe(2.5);
      expect(b?.payload.length).toBe(0);
      expect(new TextDecoder().decode(c?.payload)).toBe('before');
    });

    it('replaces an entry written again at the same index', async () => {
      await storage.write([append('g', entry(1)), append('g', entry(2, 'old', 1))]);
      await storage.write([append('g', entry(2, 'new', 2))]);
      const [, second] = storage.entries('g', 0);
      expect(second?.term).toBe(2);
      expect(new TextDecoder().decode(second?.payload)).toBe('new');
      expect(storage.lastIndex('g')).toBe(2);
    });

    it("discards every entry from an append's index on: an append at a stored index drops what follows", async () => {
      await storage.write([1, 2, 3, 4, 5].map((i) => append('g', entry(i))));
      await storage.write([append('g', entry(3, 'new3', 2))]);
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2, 3]);
      expect(storage.lastIndex('g')).toBe(3);
      const [third] = storage.entries('g', 3);
      expect(third?.term).toBe(2);
      expect(new TextDecoder().decode(third?.payload)).toBe('new3');
      // Appending at last + 1 keeps everything; past it leaves a gap and keeps everything below.
      await storage.write([append('g', entry(4)), append('g', entry(9))]);
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2, 3, 4, 9]);
      // At the first stored index, or below it: nothing of the old log stays.
      await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 3 }]);
      await storage.write([append('g', entry(2, 'two', 3))]);
      expect(indexes(storage.entries('g', 0))).toEqual([2]);
      expect(new TextDecoder().decode([...storage.entries('g', 2)][0]?.payload)).toBe('two');
    });

    it("discards from an append's index on within one batch, as if its writes were applied one by one", async () => {
      await storage.write([
        ...[1, 2, 3, 4, 5, 6].map((i) => append('g', entry(i))),
        append('h', entry(1)),
        append('g', entry(4, 'b4', 2)),
        append('h', entry(2)),
        append('g', entry(5, 'b5', 2)),
        append('g', entry(2, 'c2', 3)),
        append('g', entry(3, 'c3', 3)),
      ]);
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2, 3]);
      expect([...storage.entries('g', 0)].map((e) => e.term)).toEqual([1, 3, 3]);
      expect(indexes(storage.entries('h', 0))).toEqual([1, 2]);
      // A stored suffix, overwritten by a new leader's entries one batch later, then extended.
      await storage.write([append('g', entry(3, 'd3', 4)), append('g', entry(4, 'd4', 4))]);
      await storage.write([append('g', entry(5, 'd5', 4))]);
      expect([...storage.entries('g', 0)].map((e) => `${e.index}:${e.term}`)).toEqual([
        '1:1',
        '2:3',
        '3:4',
        '4:4',
        '5:4',
      ]);
    });

    it('keeps groups apart, also when one id is a prefix of another', async () => {
      const ids = ['a', 'ab', 'a\u0000', 'b', 'queue/é/日本'];
      await storage.write(
        ids.flatMap((id, n) => Array.from({ length: n + 1 }, (_, i) => append(id, entry(i + 1)))),
      );
      ids.forEach((id, n) => {
        expect(indexes(storage.entries(id, 0))).toEqual(Array.from({ length: n + 1 }, (_, i) => i + 1));
        expect(storage.lastIndex(id)).toBe(n + 1);
      });
    });

    it('orders indexes beyond 2^32 correctly', async () => {
      const big = [2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40, 2 ** 52];
      await storage.write(big.map((i) => append('g', entry(i))));
      expect(indexes(storage.entries('g', 0))).toEqual(big);
      expect(indexes(storage.entries('g', 2 ** 32, 2 ** 40))).toEqual([2 ** 32, 2 ** 32 + 1]);
      expect(storage.lastIndex('g')).toBe(2 ** 52);
    });

    it('truncates before and after an index, leaving other groups alone', async () => {
      await storage.write([
        ...[1, 2, 3, 4, 5, 6].map((i) => append('g', entry(i))),
        ...[1, 2, 3].map((i) => append('h', entry(i))),
      ]);
      await storage.write([
        { kind: 'truncateBefore', groupId: 'g', index: 3 },
        { kind: 'truncateAfter', groupId: 'g', index: 4 },
      ]);
      expect(indexes(storage.entries('g', 0))).toEqual([3, 4]);
      expect(indexes(storage.entries('h', 0))).toEqual([1, 2, 3]);
      expect(storage.lastIndex('g')).toBe(4);
    });

    it('truncates exactly at the bounds: one-entry ranges, past the ends, across 2^32, over gaps', async () => {
      const big = 2 ** 32;
      await storage.write([
        ...[1, 2, 3].map((i) => append('g', entry(i))),
        ...[big - 2, big - 1, big, big + 1].map((i) => append('w', entry(i))),
        ...[1, 2, 50, 51, 2_000_005].map((i) => append('gap', entry(i))),
        append('gg', entry(2)),
      ]);
      await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 2 }]);
      expect(indexes(storage.entries('g', 0))).toEqual([2, 3]);
      await storage.write([{ kind: 'truncateAfter', groupId: 'g', index: 2 }]);
      expect(indexes(storage.entries('g', 0))).toEqual([2]);
      await storage.write([
        { kind: 'truncateBefore', groupId: 'g', index: 1 },
        { kind: 'truncateAfter', groupId: 'g', index: 5 },
      ]);
      expect(indexes(storage.entries('g', 0))).toEqual([2]);
      await storage.write([{ kind: 'truncateBefore', groupId: 'w', index: big }]);
      expect(indexes(storage.entries('w', 0))).toEqual([big, big + 1]);
      await storage.write([{ kind: 'truncateAfter', groupId: 'w', index: big }]);
      expect(indexes(storage.entries('w', 0))).toEqual([big]);
      await storage.write([{ kind: 'truncateBefore', groupId: 'gap', index: 51 }]);
      expect(indexes(storage.entries('gap', 0))).toEqual([51, 2_000_005]);
      await storage.write([{ kind: 'truncateAfter', groupId: 'gap', index: 0 }]);
      expect(indexes(storage.entries('gap', 0))).toEqual([]);
      expect(indexes(storage.entries('gg', 0))).toEqual([2]);
      await storage.write([{ kind: 'truncateBefore', groupId: 'g', index: 3 }]);
      expect(indexes(storage.entries('g', 0))).toEqual([]);
      expect(storage.lastIndex('g')).toBe(0);
    });

    it("runs an attached write's apply once per batch, before the batch is durable", async () => {
      let applied = 0;
      const written = storage.write([
        append('g', entry(1)),
        { kind: 'attached', write: { apply: () => applied++ } },
        append('g', entry(2)),
      ]);
      await written;
      expect(applied).toBe(1);
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2]);
    });

    it('applies a batch in order: a truncation sees the appends before it in the same batch', async () => {
      await storage.write([
        append('g', entry(1)),
        append('g', entry(2)),
        { kind: 'truncateBefore', groupId: 'g', index: 2 },
        append('g', entry(3)),
        append('g', entry(4)),
        { kind: 'truncateAfter', groupId: 'g', index: 3 },
        append('x', entry(1)),
        { kind: 'deleteGroup', groupId: 'x' },
      ]);
      expect(indexes(storage.entries('g', 0))).toEqual([2, 3]);
      expect(storage.lastIndex('x')).toBe(0);
    });

    it('stores hard state with and without a vote, replacing the previous one', async () => {
      expect(storage.hardState('g')).toBeUndefined();
      await storage.write([
        { kind: 'hardState', groupId: 'g', state: { term: 3, vote: 'node-b', commit: 17 } },
      ]);
      expect(storage.hardState('g')).toEqual({ term: 3, vote: 'node-b', commit: 17 });
      await storage.write([
        { kind: 'hardState', groupId: 'g', state: { term: 4, vote: undefined, commit: 18 } },
      ]);
      expect(storage.hardState('g')).toEqual({ term: 4, vote: undefined, commit: 18 });
    });

    it('keeps the latest snapshot per group', async () => {
      expect(storage.snapshot('g')).toBeUndefined();
      await storage.write([
        {
          kind: 'snapshot',
          groupId: 'g',
          snapshot: { meta: { index: 5, term: 1, ts: 55 }, data: text('five') },
        },
      ]);
      await storage.write([
        {
          kind: 'snapshot',
          groupId: 'g',
          snapshot: { meta: { index: 9, term: 2, ts: 99 }, data: text('nine') },
        },
      ]);
      const snapshot = storage.snapshot('g');
      expect(snapshot?.meta).toEqual({ index: 9, term: 2, ts: 99 });
      expect(new TextDecoder().decode(snapshot?.data)).toBe('nine');
    });

    it('deleteGroup removes entries, hard state and snapshot of that group only', async () => {
      await storage.write([
        append('g', entry(1)),
        append('h', entry(1)),
        { kind: 'hardState', groupId: 'g', state: { term: 1, vote: 'me', commit: 1 } },
        { kind: 'snapshot', groupId: 'g', snapshot: { meta: { index: 1, term: 1, ts: 1 }, data: text('s') } },
        { kind: 'hardState', groupId: 'h', state: { term: 1, vote: 'me', commit: 1 } },
      ]);
      await storage.write([{ kind: 'deleteGroup', groupId: 'g' }]);
      expect(storage.lastIndex('g')).toBe(0);
      expect(storage.hardState('g')).toBeUndefined();
      expect(storage.snapshot('g')).toBeUndefined();
      expect(storage.lastIndex('h')).toBe(1);
      expect(storage.hardState('h')).toEqual({ term: 1, vote: 'me', commit: 1 });
    });

    const reopen = harness.reopen?.bind(harness);
    it.runIf(reopen !== undefined)('keeps everything written across a reopen', async () => {
      await storage.write([
        append('g', entry(1)),
        append('g', entry(2)),
        { kind: 'hardState', groupId: 'g', state: { term: 2, vote: 'n', commit: 2 } },
        { kind: 'snapshot', groupId: 'g', snapshot: { meta: { index: 1, term: 1, ts: 1 }, data: text('s') } },
      ]);
      storage = (await reopen?.(storage)) ?? storage;
      expect(indexes(storage.entries('g', 0))).toEqual([1, 2]);
      expect(storage.hardState('g')).toEqual({ term: 2, vote: 'n', commit: 2 });
      expect(storage.snapshot('g')?.meta.index).toBe(1);
    });
  });
}
