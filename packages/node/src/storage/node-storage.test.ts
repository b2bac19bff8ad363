import { SingleVoterLog } from '@styx/raft';
import { CounterMachine, counterCodec } from '@styx/raft/compliance';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StorageFormatError, StorageMetaCorruptedError } from './errors.ts';
import { NODE_META_DB, openNodeStorage, STORAGE_FORMAT_VERSION } from './node-storage.ts';
import { tempDir } from './test-support/storage-fixtures.ts';

describe('openNodeStorage', () => {
  let dir: ReturnType<typeof tempDir>;
  beforeEach(() => {
    dir = tempDir('node-storage');
  });
  afterEach(() => {
    dir.remove();
  });

  async function writeRecord(record: unknown): Promise<void> {
    const env = open({ path: `${dir.path}/lmdb` });
    await env.openDB<unknown, string>({ name: NODE_META_DB, encoding: 'json' }).put('storage', record);
    await env.close();
  }

  it('creates the environment with a node identity that survives restarts', async () => {
    const first = await openNodeStorage(dir.path);
    expect(first.path).toBe(`${dir.path}/lmdb`);
    expect(first.formatVersion).toBe(STORAGE_FORMAT_VERSION);
    expect(first.nodeId).toMatch(/^[0-9a-f-]{36}$/);
    await first.close();
    const second = await openNodeStorage(dir.path);
    expect(second.nodeId).toBe(first.nodeId);
    await second.close();
  });

  it('keeps durable log entries and snapshots in the same environment', async () => {
    const storage = await openNodeStorage(dir.path);
    const log = new SingleVoterLog('g', storage.logStore, counterCodec);
    await log.open(new CounterMachine());
    for (let i = 1; i <= 5; i++) await log.propose({ add: i });
    await log.compact();
    await log.propose({ add: 6 });
    await log.close();
    await storage.close();

    const reopened = await openNodeStorage(dir.path);
    const machine = new CounterMachine();
    const again = new SingleVoterLog('g', reopened.logStore, counterCodec);
    await again.open(machine);
    expect(machine.state.values).toStrictEqual([1, 2, 3, 4, 5, 6]);
    await again.close();
    await reopened.close();
  });

  it('refuses a data dir of a newer storage format, with a clear error', async () => {
    await (await openNodeStorage(dir.path)).close();
    await writeRecord({ format: STORAGE_FORMAT_VERSION + 1, nodeId: 'n', createdAt: 0 });
    const opening = openNodeStorage(dir.path);
    await expect(opening).rejects.toThrow(StorageFormatError);
    await expect(opening).rejects.toThrow(
      new RegExp(
        `storage format ${STORAGE_FORMAT_VERSION + 1}, this build supports up to ${STORAGE_FORMAT_VERSION}`,
      ),
    );
    await expect(opening).rejects.toMatchObject({ code: 'STORAGE_FORMAT_UNSUPPORTED' });
    // Refusing released the environment: the dir can be opened again once the record is fixed.
    await writeRecord({ format: STORAGE_FORMAT_VERSION, nodeId: 'n', createdAt: 0 });
    const fixed = await openNodeStorage(dir.path);
    expect(fixed.nodeId).toBe('n');
    await fixed.close();
  });

  it('upgrades the record of a format-1 data dir (its single-voter logs are rewritten when they open)', async () => {
    await (await openNodeStorage(dir.path)).close();
    await writeRecord({ format: 1, nodeId: 'old', createdAt: 5 });
    const upgraded = await openNodeStorage(dir.path);
    expect(upgraded.formatVersion).toBe(STORAGE_FORMAT_VERSION);
    expect(upgraded.nodeId).toBe('old');
    await upgraded.close();
  });

  it('upgrades a format-2 data dir: its per-entry log records move into runs, nothing lost', async () => {
    // A data dir as a format-2 build left it: the record, and one `raft-entries` record per entry
    // ([u16 len][groupId][u64 BE index] → [f64 term][f64 ts][payload]) of a single-voter log.
    const env = open({ path: `${dir.path}/lmdb`, maxDbs: 16 });
    await env.openDB<unknown, string>({ name: NODE_META_DB, encoding: 'json' }).put('storage', {
      format: 2,
      nodeId: 'two',
      createdAt: 7,
    });
    const legacy = env.openDB<Uint8Array, Uint8Array>({
      name: 'raft-entries',
      keyEncoding: 'binary',
      encoding: 'binary',
    });
    await env.childTransaction(() => {
      for (let index = 1; index <= 5; index++) {
        const key = Buffer.alloc(2 + 1 + 8);
        key.writeUInt16BE(1, 0);
        key.write('g', 2);
        key.writeUInt32BE(index, 7);
        const payload = counterCodec.encode({ add: index });
        const value = Buffer.alloc(16 + payload.length);
        value.writeDoubleBE(1, 0);
        value.writeDoubleBE(100 + index, 8);
        value.set(payload, 16);
        legacy.put(key, value);
      }
    });
    await env.close();

    const upgraded = await openNodeStorage(dir.path);
    expect(upgraded.formatVersion).toBe(3);
    expect(upgraded.nodeId).toBe('two');
    expect([...upgraded.logStore.entries('g', 0)].map((e) => [e.index, e.ts])).toStrictEqual([
      [1, 101],
      [2, 102],
      [3, 103],
      [4, 104],
      [5, 105],
    ]);
    const log = new SingleVoterLog('g', upgraded.logStore, counterCodec);
    const machine = new CounterMachine();
    await log.open(machine);
    expect(machine.state.values).toStrictEqual([1, 2, 3, 4, 5]);
    await log.propose({ add: 6 });
    await log.close();
    await upgraded.close();

    const after = open({ path: `${dir.path}/lmdb`, maxDbs: 16 });
    const gone = { name: 'raft-entries', create: false } as const;
    expect(after.openDB(gone)).toBeUndefined();
    await after.close();
    const reopened = await openNodeStorage(dir.path);
    const again = new SingleVoterLog('g', reopened.logStore, counterCodec);
    const replayed = new CounterMachine();
    await again.open(replayed);
    expect(replayed.state.values).toStrictEqual([1, 2, 3, 4, 5, 6]);
    await again.close();
    await reopened.close();
  });

  it('refuses an unreadable storage record', async () => {
    for (const record of [{ format: 'one' }, { format: 0 }, null, { format: 1 }]) {
      await writeRecord(record);
      await expect(openNodeStorage(dir.path)).rejects.toThrow(StorageMetaCorruptedError);
    }
  });

  it('closes once, however often close() is called', async () => {
    const storage = await openNodeStorage(dir.path);
    await Promise.all([storage.close(), storage.close()]);
    await storage.close();
  });
});
