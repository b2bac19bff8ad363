import { beforeEach, describe, expect, it } from 'vitest';
import { LogStoreClosedError, LogStoreFailedError } from '../errors.ts';
import type { EntryMeta } from '../replicated-log.ts';
import type { LogWrite } from './log-storage.ts';
import { LogStore } from './log-store.ts';
import { ManualSyncLogStorage } from './manual-sync-log-storage.ts';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const meta = (index: number): EntryMeta => ({ index, term: 1, ts: 1000 + index });
const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const describeWrite = (write: LogWrite): string =>
  write.kind === 'append'
    ? `${write.groupId}:${write.entry.index}`
    : write.kind === 'attached'
      ? 'attached'
      : `${write.kind}:${write.groupId}`;

/** Track whether a promise has settled yet, without awaiting it. */
function watch(promise: Promise<unknown>): { settled: boolean; error: unknown } {
  const state = { settled: false, error: undefined as unknown };
  promise.then(
    () => {
      state.settled = true;
    },
    (error: unknown) => {
      state.settled = true;
      state.error = error;
    },
  );
  return state;
}

describe('LogStore group commit', () => {
  let storage: ManualSyncLogStorage;
  let store: LogStore;

  beforeEach(() => {
    storage = new ManualSyncLogStorage();
    store = new LogStore(storage);
  });

  it('puts every write of one turn, microtasks included, into one batch with one promise', async () => {
    const first = store.append('a', meta(1), bytes('x'));
    const second = store.append('b', meta(1), bytes('y'));
    await Promise.resolve();
    const third = store.setHardState('c', { term: 2, vote: 'n2', commit: 0 });
    expect(second).toBe(first);
    expect(third).toBe(first);
    await nextTurn();
    expect(storage.pendingSyncs).toBe(1);
    expect(storage.peekPendingSync()?.map(describeWrite)).toEqual(['a:1', 'b:1', 'hardState:c']);
  });

  it('carries an attached write in the batch of its turn: applied with it, resolved only after its sync', async () => {
    const applied: number[] = [];
    const appended = store.append('a', meta(1), bytes('x'));
    const attached = store.attach({ apply: () => applied.push(storage.durable.lastIndex('a')) });
    expect(attached).toBe(appended);
    const state = watch(attached);
    await nextTurn();
    expect(storage.peekPendingSync()?.map(describeWrite)).toEqual(['a:1', 'attached']);
    for (let i = 0; i < 3; i++) await nextTurn();
    expect(state.settled).toBe(false);
    expect(applied).toEqual([]);
    storage.releaseSync();
    await store.sync();
    expect(state).toEqual({ settled: true, error: undefined });
    expect(applied).toEqual([1]);
  });

  it('rejects an attached write whose sync failed, and reports itself not writable from then on', async () => {
    expect(store.writable).toBe(true);
    const state = watch(store.attach({ apply: () => {} }));
    await nextTurn();
    storage.failSync(new Error('disk gone'));
    await nextTurn();
    expect(state.error).toBeInstanceOf(LogStoreFailedError);
    expect(store.writable).toBe(false);
    await expect(store.attach({ apply: () => {} })).rejects.toBeInstanceOf(LogStoreFailedError);
  });

  it('resolves a batch only when its sync is released', async () => {
    const written = watch(store.append('a', meta(1), bytes('x')));
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(written.settled).toBe(false);
    expect(storage.durable.lastIndex('a')).toBe(0);
    storage.releaseSync();
    await store.sync();
    expect(written).toEqual({ settled: true, error: undefined });
    expect(storage.durable.lastIndex('a')).toBe(1);
  });

  it('with maxBatchesInFlight 1, gathers writes made during a sync into the next batch, handed over after the first is durable', async () => {
    store = new LogStore(storage, { maxBatchesInFlight: 1 });
    const first = watch(store.append('a', meta(1), bytes('1')));
    await nextTurn();
    const second = watch(store.append('a', meta(2), bytes('2')));
    await nextTurn();
    const third = watch(store.append('a', meta(3), bytes('3')));
    await nextTurn();
    expect(storage.pendingSyncs).toBe(1);
    storage.releaseSync();
    await nextTurn();
    await nextTurn();
    expect(first.settled).toBe(true);
    expect(second.settled).toBe(false);
    expect(storage.pendingSyncs).toBe(1);
    expect(storage.peekPendingSync()?.map(describeWrite)).toEqual(['a:2', 'a:3']);
    storage.releaseSync();
    await store.sync();
    expect(second.settled && third.settled).toBe(true);
  });

  it('pipelines batches: hands the next ones over while the first syncs, up to the cap, then gathers', async () => {
    store = new LogStore(storage, { maxBatchesInFlight: 2 });
    const first = watch(store.append('a', meta(1), bytes('1')));
    await nextTurn();
    const second = watch(store.append('a', meta(2), bytes('2')));
    await nextTurn();
    const third = watch(store.append('a', meta(3), bytes('3')));
    const fourth = watch(store.append('a', meta(4), bytes('4')));
    await nextTurn();
    expect(storage.pendingSyncs).toBe(2); // the cap: the third turn's writes wait
    expect(storage.peekPendingSync()?.map(describeWrite)).toEqual(['a:1']);
    storage.releaseSync();
    await nextTurn();
    await nextTurn();
    expect(first.settled).toBe(true);
    expect(second.settled || third.settled).toBe(false);
    expect(storage.pendingSyncs).toBe(2); // the third turn's batch went over once a slot freed
    storage.releaseSync();
    storage.releaseSync();
    await store.sync();
    expect(second.settled && third.settled && fourth.settled).toBe(true);
    expect(storage.durable.lastIndex('a')).toBe(4);
  });

  it('resolves batches in order even when the storage reports a later one durable first', async () => {
    const first = watch(store.append('a', meta(1), bytes('1')));
    await nextTurn();
    const second = watch(store.append('b', meta(1), bytes('2')));
    await nextTurn();
    expect(storage.pendingSyncs).toBe(2);
    storage.releaseNewestSync();
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(second.settled).toBe(false); // its data is durable, but batch 1 is not yet
    storage.releaseSync();
    await store.sync();
    expect(first).toEqual({ settled: true, error: undefined });
    expect(second).toEqual({ settled: true, error: undefined });
  });

  it('fails a later batch the storage already reported durable when an earlier batch fails', async () => {
    const first = store.append('a', meta(1), bytes('1'));
    await nextTurn();
    const second = store.append('a', meta(2), bytes('2'));
    await nextTurn();
    expect(storage.pendingSyncs).toBe(2);
    storage.releaseNewestSync(); // batch 2 "committed"
    await nextTurn();
    storage.failSync(new Error('EIO')); // then batch 1 fails
    await expect(first).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(second).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(store.append('a', meta(3), bytes('3'))).rejects.toBeInstanceOf(LogStoreFailedError);
  });

  it('fails every batch in flight when the oldest fails, even if the later ones sync afterwards', async () => {
    const first = store.append('a', meta(1), bytes('1'));
    await nextTurn();
    const second = store.append('a', meta(2), bytes('2'));
    await nextTurn();
    storage.failSync(new Error('EIO'));
    storage.releaseSync();
    await expect(first).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(second).rejects.toBeInstanceOf(LogStoreFailedError);
  });

  it('sync() waits for everything queued before it, and resolves at once when idle', async () => {
    await expect(store.sync()).resolves.toBeUndefined();
    store.append('a', meta(1), bytes('1'));
    const synced = watch(store.sync());
    await nextTurn();
    expect(synced.settled).toBe(false);
    storage.releaseSync();
    await nextTurn();
    expect(synced).toEqual({ settled: true, error: undefined });
  });

  it('fails the batch in flight, the batch queued behind it and every later write after a failed sync', async () => {
    const inFlight = store.append('a', meta(1), bytes('1'));
    await nextTurn();
    const queued = store.append('a', meta(2), bytes('2'));
    storage.failSync(new Error('EIO'));
    await expect(inFlight).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(queued).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(store.append('a', meta(3), bytes('3'))).rejects.toBeInstanceOf(LogStoreFailedError);
    await expect(store.sync()).rejects.toBeInstanceOf(LogStoreFailedError);
    expect(store.failure?.cause).toEqual(new Error('EIO'));
    expect(storage.pendingSyncs).toBe(0);
    expect(storage.durable.lastIndex('a')).toBe(0);
  });

  it('treats a storage that throws instead of rejecting as failed', async () => {
    const throwing = new LogStore({
      write: () => {
        throw new Error('boom');
      },
      entries: () => [],
      lastIndex: () => 0,
      hardState: () => undefined,
      snapshot: () => undefined,
      close: async () => {},
    });
    await expect(throwing.append('a', meta(1), bytes('1'))).rejects.toBeInstanceOf(LogStoreFailedError);
  });

  it('close() writes what is queued, then refuses new writes', async () => {
    const queued = watch(store.append('a', meta(1), bytes('1')));
    const closed = watch(store.close());
    await nextTurn();
    expect(closed.settled).toBe(false);
    storage.releaseSync();
    await store.close();
    expect(queued).toEqual({ settled: true, error: undefined });
    expect(storage.durable.lastIndex('a')).toBe(1);
    await expect(store.append('a', meta(2), bytes('2'))).rejects.toBeInstanceOf(LogStoreClosedError);
  });

  it('abort() drops queued writes but lets the batch already handed to the storage finish', async () => {
    const inFlight = watch(store.append('a', meta(1), bytes('1')));
    await nextTurn();
    const queued = store.append('a', meta(2), bytes('2'));
    const aborted = watch(store.abort());
    await expect(queued).rejects.toBeInstanceOf(LogStoreClosedError);
    expect(aborted.settled).toBe(false);
    storage.releaseSync();
    await store.abort();
    expect(inFlight).toEqual({ settled: true, error: undefined });
    expect(storage.pendingSyncs).toBe(0);
    expect([...storage.durable.entries('a', 0)].map((e) => e.index)).toEqual([1]);
  });

  it("appendEntries queues a Ready's entries in order, in the batch of its turn, with its one promise", async () => {
    const first = store.append('a', meta(1), bytes('1'));
    const entries = [2, 3, 4].map((index) => ({ ...meta(index), payload: bytes(String(index)) }));
    const run = store.appendEntries('a', entries);
    const after = store.setHardState('a', { term: 1, vote: undefined, commit: 4 });
    expect(run).toBe(first);
    expect(after).toBe(first);
    await nextTurn();
    expect(storage.peekPendingSync()?.map(describeWrite).join(' ')).toBe('a:1 a:2 a:3 a:4 hardState:a');
    storage.releaseSync();
    await run;
    expect(
      [...storage.durable.entries('a', 0)].map((e) => [e.index, e.ts, new TextDecoder().decode(e.payload)]),
    ).toEqual([
      [1, 1001, '1'],
      [2, 1002, '2'],
      [3, 1003, '3'],
      [4, 1004, '4'],
    ]);
    // Refused like every write once the store is closed.
    await store.close();
    await expect(store.appendEntries('a', entries)).rejects.toBeInstanceOf(LogStoreClosedError);
  });

  it('appendEntries is refused once the store failed', async () => {
    const inFlight = store.append('a', meta(1), bytes('1'));
    await nextTurn();
    storage.failSync(new Error('EIO'));
    await expect(inFlight).rejects.toBeInstanceOf(LogStoreFailedError);
    const refused = store.appendEntries('a', [{ ...meta(2), payload: bytes('2') }]);
    await expect(refused).rejects.toBeInstanceOf(LogStoreFailedError);
  });

  it('queues every kind of write in call order', async () => {
    store.append('a', meta(1), bytes('1'));
    store.putSnapshot('a', meta(1), bytes('s'));
    store.truncateBefore('a', 2);
    store.truncateAfter('b', 5);
    store.deleteGroup('c');
    await nextTurn();
    expect(storage.peekPendingSync()?.map(describeWrite)).toEqual([
      'a:1',
      'snapshot:a',
      'truncateBefore:a',
      'truncateAfter:b',
      'deleteGroup:c',
    ]);
  });
});
