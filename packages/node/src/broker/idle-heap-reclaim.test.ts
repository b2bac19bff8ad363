import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import type { HeapFigures } from './idle-heap-reclaim.ts';
import {
  compactingCollector,
  IdleHeapReclaimer,
  MAX_USED_BYTES,
  MIN_EXCESS_BYTES,
  QUIET_CHECKS,
  QUIET_UTILIZATION,
  shouldReclaim,
} from './idle-heap-reclaim.ts';
import { loadNativeHeapTrim } from './native-heap-trim.ts';

const MIB = 1024 * 1024;
const quiet = QUIET_UTILIZATION / 2;
const busy = 0.5;

describe('shouldReclaim', () => {
  const drained: HeapFigures = { committedBytes: 220 * MIB, usedBytes: 60 * MIB };
  const settled = { quietChecks: QUIET_CHECKS - 1, baselineBytes: 40 * MIB };

  it('reclaims a drained heap once the loop was quiet long enough', () => {
    expect(shouldReclaim(settled, quiet, drained)).toBe(true);
  });

  it('waits while the loop is busy or not yet quiet for long enough', () => {
    expect(shouldReclaim(settled, busy, drained)).toBe(false);
    expect(shouldReclaim(settled, QUIET_UTILIZATION, drained)).toBe(false);
    expect(shouldReclaim({ ...settled, quietChecks: QUIET_CHECKS - 2 }, quiet, drained)).toBe(false);
    // A utilization that cannot be read is not quiet.
    expect(shouldReclaim(settled, Number.NaN, drained)).toBe(false);
  });

  it('leaves a heap that did not grow past the last reclaim by the minimum', () => {
    const baselineBytes = drained.committedBytes - MIN_EXCESS_BYTES + 1;
    expect(shouldReclaim({ ...settled, baselineBytes }, quiet, drained)).toBe(false);
  });

  it('reclaims a heap whose use still counts its garbage (no collection since the drain)', () => {
    expect(shouldReclaim(settled, quiet, { committedBytes: 220 * MIB, usedBytes: 200 * MIB })).toBe(true);
  });

  it('leaves a heap too big to pause on', () => {
    const huge = { committedBytes: 4 * MAX_USED_BYTES, usedBytes: MAX_USED_BYTES };
    expect(shouldReclaim(settled, quiet, huge)).toBe(false);
  });
});

describe('IdleHeapReclaimer', () => {
  /** A reclaimer over a scripted heap: `collect` shrinks it to the live bytes. */
  function scripted(start: HeapFigures): {
    reclaimer: IdleHeapReclaimer;
    heap: { figures: HeapFigures };
    live: { bytes: number };
    calls: string[];
  } {
    const heap = { figures: start };
    const live = { bytes: start.usedBytes };
    const calls: string[] = [];
    const reclaimer = new IdleHeapReclaimer(silentLogger(), {
      heap: () => heap.figures,
      collect: () => {
        calls.push('collect');
        heap.figures = { committedBytes: live.bytes + 4 * MIB, usedBytes: live.bytes };
      },
      trim: () => {
        calls.push('trim');
        return true;
      },
    });
    return { reclaimer, heap, live, calls };
  }

  it('reclaims once after a burst and a quiet spell, then not again until the heap grows again', () => {
    const { reclaimer, heap, live, calls } = scripted({ committedBytes: 40 * MIB, usedBytes: 30 * MIB });
    reclaimer.start();
    try {
      // The burst: the heap grows while the loop is busy.
      heap.figures = { committedBytes: 220 * MIB, usedBytes: 200 * MIB };
      reclaimer.check(busy);
      live.bytes = 35 * MIB;
      heap.figures = { committedBytes: 220 * MIB, usedBytes: 80 * MIB };
      for (let i = 0; i < QUIET_CHECKS - 1; i++) reclaimer.check(quiet);
      expect(reclaimer.reclaims).toBe(0);
      reclaimer.check(quiet);
      expect(reclaimer.reclaims).toBe(1);
      expect(heap.figures.committedBytes).toBe(39 * MIB);
      // The C heap is trimmed after the collection freed the backing stores, not before.
      expect(calls).toStrictEqual(['collect', 'trim']);
      // Quiet on: nothing more to gain, nothing more runs.
      for (let i = 0; i < 10 * QUIET_CHECKS; i++) reclaimer.check(quiet);
      expect(reclaimer.reclaims).toBe(1);
      // The next burst brings the next reclaim.
      heap.figures = { committedBytes: 300 * MIB, usedBytes: 90 * MIB };
      reclaimer.check(busy);
      for (let i = 0; i < QUIET_CHECKS; i++) reclaimer.check(quiet);
      expect(reclaimer.reclaims).toBe(2);
      expect(calls).toStrictEqual(['collect', 'trim', 'collect', 'trim']);
    } finally {
      reclaimer.stop();
    }
  });

  it('counts a busy interval as breaking the quiet spell', () => {
    const { reclaimer, heap } = scripted({ committedBytes: 40 * MIB, usedBytes: 30 * MIB });
    reclaimer.start();
    try {
      heap.figures = { committedBytes: 220 * MIB, usedBytes: 60 * MIB };
      for (let i = 0; i < 5; i++) {
        for (let q = 0; q < QUIET_CHECKS - 1; q++) reclaimer.check(quiet);
        reclaimer.check(busy);
      }
      expect(reclaimer.reclaims).toBe(0);
    } finally {
      reclaimer.stop();
    }
  });

  it('really gives V8 heap back with the default collector', () => {
    // Fragment the heap: many objects, most of them dropped, a few kept all over it.
    let all: { n: number; s: string }[] | undefined = [];
    for (let i = 0; i < 1_000_000; i++) all.push({ n: i, s: `s${i}` });
    const kept = all.filter((_, i) => i % 64 === 0);
    all = undefined;
    const before = getHeapStatistics().total_heap_size;
    compactingCollector()();
    const after = getHeapStatistics().total_heap_size;
    expect(kept.length).toBe(15_625);
    expect(after).toBeLessThan(before - 32 * MIB);
  });
});

describe('loadNativeHeapTrim', () => {
  it('finds glibc malloc_trim on Linux and calls it', () => {
    // The project's machines and CI are Linux with glibc: a trimmer that cannot load here is a bug.
    const loaded = loadNativeHeapTrim();
    if (!('trim' in loaded)) throw new Error(`no native heap trim: ${loaded.unavailable}`);
    const garbage: Uint8Array[] = [];
    for (let i = 0; i < 2_000; i++) garbage.push(new Uint8Array(2048).fill(i));
    garbage.length = 0;
    expect(typeof loaded.trim()).toBe('boolean');
  });
});
