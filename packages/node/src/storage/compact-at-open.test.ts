import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { StoredMessage } from '../queue/types.ts';
import { COMPACT_DIR, compactAtOpen, MIN_FREE_BYTES, shouldCompact } from './compact-at-open.ts';
import { openNodeStorage } from './node-storage.ts';
import { silentStorageLogger } from './storage-logger.ts';
import { expectSameMessage, sampleMessage, tempDir } from './test-support/storage-fixtures.ts';

const MIB = 1024 * 1024;
const BODIES = 4_000;

function message(i: number): StoredMessage {
  return sampleMessage(4096, { body: new Uint8Array(4096).fill(i % 251) });
}

describe('shouldCompact', () => {
  const pageSize = 4096;
  const pagesOf = (bytes: number): number => bytes / pageSize;

  it('compacts a file mostly free, with enough free space to be worth a copy', () => {
    const filePages = pagesOf(2 * MIN_FREE_BYTES);
    expect(shouldCompact({ pageSize, filePages, usedPages: filePages / 2 })).toBe(true);
    expect(shouldCompact({ pageSize, filePages, usedPages: 10 })).toBe(true);
  });

  it('leaves a file mostly in use (a deep queue) or with little free space', () => {
    const filePages = pagesOf(4 * MIN_FREE_BYTES);
    expect(shouldCompact({ pageSize, filePages, usedPages: filePages / 2 + 1 })).toBe(false);
    expect(shouldCompact({ pageSize, filePages: pagesOf(MIN_FREE_BYTES) - 1, usedPages: 2 })).toBe(false);
  });
});

describe('compactAtOpen', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('compact-at-open');
  });
  afterEach(() => {
    dir.remove();
  });

  /** A node storage that stored BODIES bodies of 4 KiB and deleted all but `keep` of them. */
  async function drained(keep: number): Promise<{ nodeId: string; kept: number[] }> {
    const storage = await openNodeStorage(dir.path);
    for (let i = 0; i < BODIES; i++) storage.bodyStore.put('g', i, message(i));
    await storage.bodyStore.flushed();
    const kept: number[] = [];
    for (let i = 0; i < BODIES; i++) {
      if (i % Math.ceil(BODIES / Math.max(keep, 1)) === 0 && kept.length < keep) kept.push(i);
      else storage.bodyStore.delete('g', i);
    }
    await storage.bodyStore.flushed();
    const { nodeId } = storage;
    await storage.close();
    return { nodeId, kept };
  }

  const dataFile = (): string => join(dir.path, 'lmdb', 'data.mdb');

  it('gives a drained environment its free pages back, and the data stays readable', async () => {
    const { nodeId, kept } = await drained(10);
    const before = statSync(dataFile()).size;
    expect(before).toBeGreaterThan(BODIES * 4096);
    // A leftover copy from a start that crashed mid-way is removed, not used.
    mkdirSync(join(dir.path, 'lmdb', COMPACT_DIR));
    writeFileSync(join(dir.path, 'lmdb', COMPACT_DIR, 'data.mdb'), 'torn');
    expect(await compactAtOpen(join(dir.path, 'lmdb'), silentStorageLogger, MIB)).toBe(true);
    const after = statSync(dataFile()).size;
    expect(after).toBeLessThan(before / 4);
    expect(existsSync(join(dir.path, 'lmdb', COMPACT_DIR))).toBe(false);
    const reopened = await openNodeStorage(dir.path);
    try {
      expect(reopened.nodeId).toBe(nodeId);
      expect(reopened.bodyStore.count('g')).toBe(kept.length);
      for (const id of kept) expectSameMessage(reopened.bodyStore.get('g', id), message(id));
      // And it takes writes again.
      reopened.bodyStore.put('g', BODIES, message(BODIES));
      await reopened.bodyStore.flushed();
    } finally {
      await reopened.close();
    }
  });

  it('leaves an environment mostly in use, and one with too little free space', async () => {
    await drained(BODIES);
    const before = statSync(dataFile()).size;
    expect(await compactAtOpen(join(dir.path, 'lmdb'), silentStorageLogger, MIB)).toBe(false);
    expect(statSync(dataFile()).size).toBe(before);
    dir.remove();
    dir = tempDir('compact-at-open');
    await drained(0);
    expect(await compactAtOpen(join(dir.path, 'lmdb'), silentStorageLogger, 1024 * MIB)).toBe(false);
  });

  it('does nothing where there is no environment yet', async () => {
    mkdirSync(join(dir.path, 'lmdb'), { recursive: true });
    expect(await compactAtOpen(join(dir.path, 'lmdb'), silentStorageLogger, MIB)).toBe(false);
  });
});
