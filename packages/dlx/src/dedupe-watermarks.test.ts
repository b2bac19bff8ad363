import { describe, expect, it } from 'vitest';
import {
  DEFAULT_DEDUPE_LIMITS,
  DedupeWatermarks,
  MAX_DEDUPE_WINDOW,
  WIDE_DEDUPE_WINDOW,
} from './dedupe-watermarks.ts';
import { DlxConfigError } from './errors.ts';

/** A deterministic pseudo-random sequence (mulberry32), so the property tests replay exactly. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe('DedupeWatermarks', () => {
  it('the worked example: out-of-order ids, repeats, and horizons raising the watermark', () => {
    const d = new DedupeWatermarks();
    expect(d.accept('s', 7, 5)).toBe('new');
    expect(d.watermark('s')).toBe(4);
    expect(d.accept('s', 5, 5)).toBe('new');
    expect(d.accept('s', 7, 5)).toBe('duplicate');
    expect(d.accept('s', 9, 8)).toBe('new');
    expect(d.watermark('s')).toBe(7);
    expect(d.idsAbove('s')).toBe(1); // 5 and 7 fell under the watermark
    expect(d.accept('s', 5, 8)).toBe('duplicate');
    expect(d.accept('s', 9, 9)).toBe('duplicate');
  });

  it('without horizons, every id is new once and a duplicate after', () => {
    const d = new DedupeWatermarks();
    for (const id of [30, 10, 20]) expect(d.accept('s', id)).toBe('new');
    for (const id of [10, 20, 30]) expect(d.accept('s', id)).toBe('duplicate');
    expect(d.watermark('s')).toBe(-1);
  });

  it('keeps sources apart', () => {
    const d = new DedupeWatermarks();
    expect(d.accept('q1#inc-a', 1)).toBe('new');
    expect(d.accept('q1#inc-b', 1)).toBe('new'); // a new incarnation of the queue is a new source
    expect(d.accept('q1#inc-a', 1)).toBe('duplicate');
  });

  it('a horizon above the id (a broken source) never makes that transfer a duplicate', () => {
    const d = new DedupeWatermarks();
    expect(d.accept('s', 5, 100)).toBe('new');
    expect(d.watermark('s')).toBe(4);
    expect(d.accept('s', 5)).toBe('duplicate');
  });

  it('bounded per source: past the bound the smallest id is forgotten (a re-delivery, never a loss)', () => {
    const d = new DedupeWatermarks({ maxIdsPerSource: 3, maxSources: 10 });
    for (const id of [4, 1, 3, 2]) expect(d.accept('s', id)).toBe('new');
    expect(d.idsAbove('s')).toBe(3);
    expect(d.watermark('s')).toBe(-1); // eviction never raises the watermark
    expect(d.accept('s', 1)).toBe('new'); // forgotten: accepted again
    expect(d.accept('s', 4)).toBe('duplicate');
  });

  for (const window of [DEFAULT_DEDUPE_LIMITS.maxIdsPerSource, WIDE_DEDUPE_WINDOW]) {
    it(`at the edge of a ${window}-id window: the last ${window} ids are duplicates, the one before is not`, () => {
      const d = new DedupeWatermarks({ maxIdsPerSource: window, maxSources: 4 });
      // Ids 1..window+1 with no horizon: one more than the window, so id 1 is forgotten.
      for (let id = 1; id <= window + 1; id++) expect(d.accept('s', id)).toBe('new');
      expect(d.idsAbove('s')).toBe(window);
      expect(d.hasSeen('s', 1)).toBe(false);
      for (let id = 2; id <= window + 1; id++) expect(d.accept('s', id)).toBe('duplicate');
      // The forgotten one comes back as new (a duplicate delivery at worst, never a loss).
      expect(d.accept('s', 1)).toBe('new');
      expect(d.idsAbove('s')).toBe(window);
    });
  }

  it('setMaxIdsPerSource: widening keeps every id and remembers more from then on', () => {
    const d = new DedupeWatermarks();
    for (let id = 1; id <= 1024; id++) d.accept('s', id);
    d.setMaxIdsPerSource(WIDE_DEDUPE_WINDOW);
    expect(d.maxIdsPerSource).toBe(WIDE_DEDUPE_WINDOW);
    for (let id = 1025; id <= 4096; id++) expect(d.accept('s', id)).toBe('new');
    for (let id = 1; id <= 4096; id++) expect(d.accept('s', id)).toBe('duplicate');
    expect(d.accept('s', 4097)).toBe('new');
    expect(d.accept('s', 1)).toBe('new');
  });

  it('setMaxIdsPerSource: narrowing forgets the smallest ids past the new window, in every source', () => {
    const d = new DedupeWatermarks({ maxIdsPerSource: 10, maxSources: 4 });
    for (let id = 1; id <= 10; id++) {
      d.accept('a', id);
      d.accept('b', id * 2);
    }
    d.setMaxIdsPerSource(3);
    expect(d.idsAbove('a')).toBe(3);
    expect(d.idsAbove('b')).toBe(3);
    expect([8, 9, 10].map((id) => d.hasSeen('a', id))).toEqual([true, true, true]);
    expect(d.hasSeen('a', 7)).toBe(false);
    expect(d.hasSeen('b', 14)).toBe(false);
    expect(d.hasSeen('b', 16)).toBe(true);
  });

  it('setMaxIdsPerSource refuses a window outside [1, MAX_DEDUPE_WINDOW] and keeps the old one', () => {
    const d = new DedupeWatermarks();
    for (const bad of [0, -1, 1.5, Number.NaN, MAX_DEDUPE_WINDOW + 1, Number.POSITIVE_INFINITY]) {
      expect(() => d.setMaxIdsPerSource(bad)).toThrow(DlxConfigError);
    }
    expect(d.maxIdsPerSource).toBe(DEFAULT_DEDUPE_LIMITS.maxIdsPerSource);
    d.setMaxIdsPerSource(MAX_DEDUPE_WINDOW);
    expect(d.maxIdsPerSource).toBe(MAX_DEDUPE_WINDOW);
  });

  it('bounded in sources: the least recently used source is forgotten', () => {
    const d = new DedupeWatermarks({ maxIdsPerSource: 10, maxSources: 2 });
    d.accept('a', 1);
    d.accept('b', 1);
    d.accept('a', 2); // a is now more recent than b
    d.accept('c', 1); // evicts b
    expect(d.sourceCount).toBe(2);
    expect(d.watermark('b')).toBeUndefined();
    expect(d.accept('a', 1)).toBe('duplicate');
    expect(d.accept('b', 1)).toBe('new');
  });

  it('forgetSource drops a source whose queue was deleted', () => {
    const d = new DedupeWatermarks();
    d.accept('s', 1);
    expect(d.forgetSource('s')).toBe(true);
    expect(d.forgetSource('s')).toBe(false);
    expect(d.accept('s', 1)).toBe('new');
  });

  it('property: never a false duplicate, whatever the order, repeats and bounds', () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = rng(seed);
      const d = new DedupeWatermarks({ maxIdsPerSource: 8, maxSources: 3 });
      const delivered = new Map<string, Set<number>>();
      // A source sends ids 0..199 over time, each possibly several times, out of order, with a
      // correct horizon: the lowest id it has not settled yet.
      for (const source of ['x', 'y', 'z', 'w']) {
        const seen = new Set<number>();
        delivered.set(source, seen);
        const unsettled = new Set<number>();
        let next = 0;
        for (let step = 0; step < 2_000; step++) {
          if (next < 200 && (unsettled.size === 0 || random() < 0.4)) unsettled.add(next++);
          if (unsettled.size === 0) break;
          const pending = [...unsettled];
          const id = pending[Math.floor(random() * pending.length)] as number;
          const horizon = Math.min(...pending);
          const verdict = d.accept(source, id, horizon);
          if (verdict === 'duplicate') expect(seen.has(id)).toBe(true);
          seen.add(id);
          if (random() < 0.5) unsettled.delete(id); // confirmed and settled at the source
        }
      }
    }
  });

  it('property: with room enough, exact — each id is new exactly once', () => {
    const random = rng(9);
    const d = new DedupeWatermarks({ maxIdsPerSource: 1_000, maxSources: 10 });
    const news = new Map<number, number>();
    for (let i = 0; i < 5_000; i++) {
      const id = Math.floor(random() * 500);
      if (d.accept('s', id) === 'new') news.set(id, (news.get(id) ?? 0) + 1);
    }
    expect([...news.values()].every((n) => n === 1)).toBe(true);
  });

  it('snapshots to plain data that survives JSON and answers the same', () => {
    const d = new DedupeWatermarks({ maxIdsPerSource: 4, maxSources: 4 });
    d.accept('a', 10, 8);
    d.accept('a', 12, 8);
    d.accept('b', 3);
    const snapshot = JSON.parse(JSON.stringify(d.toSnapshot()));
    expect(snapshot).toEqual({
      version: 1,
      sources: [
        { source: 'a', watermark: 7, above: [10, 12] },
        { source: 'b', watermark: -1, above: [3] },
      ],
    });
    const restored = DedupeWatermarks.fromSnapshot(snapshot, { maxIdsPerSource: 4, maxSources: 4 });
    expect(restored.toSnapshot()).toEqual(d.toSnapshot());
    for (const [source, id] of [
      ['a', 7],
      ['a', 10],
      ['a', 11],
      ['b', 3],
      ['c', 1],
    ] as const) {
      expect(restored.accept(source, id)).toBe(d.accept(source, id));
    }
    expect(() =>
      DedupeWatermarks.fromSnapshot({ version: 1, sources: [{ source: 'a', watermark: 5, above: [5] }] }),
    ).toThrow(expect.objectContaining({ code: 'DLX_SNAPSHOT_INVALID' }));
  });

  it('rejects ids and limits outside their domain', () => {
    const d = new DedupeWatermarks();
    expect(() => d.accept('s', -1)).toThrow(expect.objectContaining({ code: 'DLX_INVALID_INPUT' }));
    expect(() => d.accept('s', 1.5)).toThrow(expect.objectContaining({ code: 'DLX_INVALID_INPUT' }));
    expect(() => d.accept('s', 1, -2)).toThrow(expect.objectContaining({ code: 'DLX_INVALID_INPUT' }));
    expect(() => new DedupeWatermarks({ maxIdsPerSource: 0, maxSources: 1 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_CONFIG' }),
    );
  });

  it('inOrder: an id is in order once every id from its horizon up to it was taken', () => {
    const d = new DedupeWatermarks();
    // A source never seen: only its lowest id in flight is in order (nothing taken to build on).
    expect(d.inOrder('s', 5, 1)).toBe(false);
    expect(d.inOrder('s', 5, 5)).toBe(true);
    expect(d.accept('s', 1, 1)).toBe('new');
    expect(d.inOrder('s', 2, 1)).toBe(true);
    // 2 is still on its way (horizon 1 < 2): 3 would overtake it.
    expect(d.inOrder('s', 3, 1)).toBe(false);
    expect(d.inOrder('s', 3, 2)).toBe(false);
    // 2 was answered (refused for good, say): the horizon passed it, 3 may go.
    expect(d.inOrder('s', 3, 3)).toBe(true);
    expect(d.accept('s', 2, 2)).toBe('new');
    expect(d.inOrder('s', 3, 1)).toBe(true);
    expect(d.inOrder('s', 4, 1)).toBe(false);
    // Asking records nothing.
    expect(d.hasSeen('s', 3)).toBe(false);
    expect(d.hasSeen('s', 4)).toBe(false);
  });

  it('inOrder survives pruning, the per-source bound and a snapshot', () => {
    const d = new DedupeWatermarks({ maxIdsPerSource: 4, maxSources: 8 });
    for (let id = 1; id <= 10; id++) expect(d.accept('s', id, 1)).toBe('new');
    // Only 7..10 are remembered, but the highest taken is still 10.
    expect(d.inOrder('s', 11, 1)).toBe(true);
    expect(d.inOrder('s', 12, 1)).toBe(false);
    const restored = DedupeWatermarks.fromSnapshot(d.toSnapshot(), { maxIdsPerSource: 4, maxSources: 8 });
    expect(restored.inOrder('s', 11, 1)).toBe(true);
    expect(restored.inOrder('s', 12, 1)).toBe(false);
    // A horizon above everything taken: the source resolved the ids between.
    d.accept('s', 20, 20);
    expect(d.inOrder('s', 21, 20)).toBe(true);
    expect(d.inOrder('s', 22, 20)).toBe(false);
  });
});
