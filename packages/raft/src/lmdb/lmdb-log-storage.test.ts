import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { logStorageCompliance } from '../compliance/index.ts';
import { LogStoreFailedError } from '../errors.ts';
import type { LogStorage, LogWrite } from '../storage/log-storage.ts';
import { LogStore } from '../storage/log-store.ts';
import { LmdbLogStorage, MAX_GROUP_ID_BYTES } from './lmdb-log-storage.ts';

let dir = '';
let open: LmdbLogStorage | undefined;

logStorageCompliance('LmdbLogStorage', {
  open() {
    dir = mkdtempSync(join(tmpdir(), 'styx-raft-lmdb-'));
    open = LmdbLogStorage.open({ path: dir });
    return open;
  },
  async reopen(storage) {
    await storage.close();
    open = LmdbLogStorage.open({ path: dir });
    return open;
  },
  async teardown() {
    await open?.close();
    open = undefined;
    rmSync(dir, { recursive: true, force: true });
  },
});

/** Counts the transactions (write calls) that reach LMDB. */
class CountingStorage implements LogStorage {
  readonly inner: LmdbLogStorage;
  readonly batches: number[] = [];
  constructor(inner: LmdbLogStorage) {
    this.inner = inner;
  }
  write(writes: readonly LogWrite[]): Promise<void> {
    this.batches.push(writes.length);
    return this.inner.write(writes);
  }
  entries(groupId: string, from: number, to?: number) {
    return this.inner.entries(groupId, from, to);
  }
  lastIndex(groupId: string) {
    return this.inner.lastIndex(groupId);
  }
  hardState(groupId: string) {
    return this.inner.hardState(groupId);
  }
  snapshot(groupId: string) {
    return this.inner.snapshot(groupId);
  }
  close() {
    return this.inner.close();
  }
}

describe('LmdbLogStorage', () => {
  let path = '';
  let storage: LmdbLogStorage;

  beforeEach(() => {
    path = mkdtempSync(join(tmpdir(), 'styx-raft-lmdb-'));
    storage = LmdbLogStorage.open({ path });
  });

  afterEach(async () => {
    await storage.close();
    rmSync(path, { recursive: true, force: true });
  });

  it('rejects a batch with an invalid group id as a whole: nothing of it is written', async () => {
    const entry = { index: 1, term: 1, ts: 1, payload: new Uint8Array([1]) };
    await expect(
      storage.write([
        { kind: 'append', groupId: 'fine', entry },
        { kind: 'append', groupId: 'x'.repeat(MAX_GROUP_ID_BYTES + 1), entry },
      ]),
    ).rejects.toThrow(RangeError);
    await expect(storage.write([{ kind: 'append', groupId: '', entry }])).rejects.toThrow(RangeError);
    expect(storage.lastIndex('fine')).toBe(0);
  });

  it('writes the interleaved appends of 100 groups made in one turn in ONE transaction', async () => {
    const counting = new CountingStorage(storage);
    const store = new LogStore(counting);
    const payload = new Uint8Array(1024).fill(7);
    const writes: Promise<void>[] = [];
    for (let index = 1; index <= 5; index++) {
      for (let g = 0; g < 100; g++)
        writes.push(store.append(`group-${g}`, { index, term: 1, ts: index }, payload));
    }
    await Promise.all(writes);
    expect(counting.batches).toEqual([500]);
    for (let g = 0; g < 100; g++) {
      expect([...storage.entries(`group-${g}`, 0)].map((e) => e.index)).toEqual([1, 2, 3, 4, 5]);
    }
  });

  it('fails the store when LMDB refuses a batch', async () => {
    const store = new LogStore(storage);
    const entry = { index: 1, term: 1, ts: 1 };
    const bad = store.append('y'.repeat(MAX_GROUP_ID_BYTES + 1), entry, new Uint8Array(1));
    await expect(bad).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(store.append('ok', entry, new Uint8Array(1))).rejects.toBeInstanceOf(LogStoreFailedError);
  });
});
