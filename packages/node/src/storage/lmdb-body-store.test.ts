import type { HardState, LogStorage, LogWrite, StoredEntry, StoredSnapshot } from '@styx/raft';
import { LmdbLogStorage, LogStore } from '@styx/raft';
import { open } from 'lmdb';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { StoredMessage } from '../queue/types.ts';
import { groupIdBytes } from './body-keys.ts';
import { StorageClosedError } from './errors.ts';
import { BODIES_DB, BODY_DELETIONS_DB, DELETE_CHUNK_KEYS, LmdbBodyStore } from './lmdb-body-store.ts';
import type { NodeStorage } from './node-storage.ts';
import { openNodeStorage } from './node-storage.ts';
import { queueCommandCodec } from './queue-command-codec.ts';
import { DeferredMessage } from './stored-message-codec.ts';
import {
  expectSameMessage,
  richProperties,
  sampleMessage,
  tempDir,
} from './test-support/storage-fixtures.ts';

describe('lmdb-js write ordering (what the body store durability argument relies on)', () => {
  it('runs single writes queued before a transaction callback no later than that callback', async () => {
    const dir = tempDir('lmdb-order');
    const env = open({ path: dir.path });
    const db = env.openDB({ name: 'bodies', keyEncoding: 'binary', encoding: 'binary' });
    try {
      for (let round = 0; round < 200; round++) {
        const key = Buffer.from(`k${round}`);
        // As the body store writes during an apply, then the log store queues its batch.
        void db.put(key, Buffer.from([round & 0xff]));
        const seen = await env.childTransaction(() => db.get(key));
        expect(seen).toStrictEqual(Buffer.from([round & 0xff]));
        if (round % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      await env.close();
      dir.remove();
    }
  });
});

describe('LmdbBodyStore', () => {
  let dir: ReturnType<typeof tempDir>;
  let storage: NodeStorage;

  beforeEach(async () => {
    dir = tempDir('bodies');
    storage = await openNodeStorage(dir.path);
  });

  afterEach(async () => {
    await storage.close();
    dir.remove();
  });

  async function reopen(): Promise<void> {
    await storage.close();
    storage = await openNodeStorage(dir.path);
  }

  it('answers a put at once (before it commits), and after it committed, and after a reopen', async () => {
    const message = sampleMessage(1000, { properties: richProperties(), bcc: ['k'] });
    storage.bodyStore.put('g', 1, message);
    expect(storage.bodyStore.get('g', 1)).toBe(message);
    await storage.bodyStore.flushed();
    const fromDisk = storage.bodyStore.get('g', 1);
    expect(fromDisk).not.toBe(message);
    expectSameMessage(fromDisk, message);
    await reopen();
    expectSameMessage(storage.bodyStore.get('g', 1), message);
    expect(storage.bodyStore.get('g', 2)).toBeUndefined();
    expect(storage.bodyStore.get('other', 1)).toBeUndefined();
  });

  it('stores empty and 1 MiB bodies, and messages decoded from log entries (views into them)', async () => {
    const big = sampleMessage(1024 * 1024);
    const empty = sampleMessage(0, { properties: { headers: { entries: [] } } });
    const entry = queueCommandCodec.decode(
      queueCommandCodec.encode({ type: 'enqueue', size: 5, ttl: undefined, message: sampleMessage(5) }),
    );
    if (entry.type !== 'enqueue') throw new Error('not an enqueue');
    storage.bodyStore.put('g', 1, big);
    storage.bodyStore.put('g', 2, empty);
    storage.bodyStore.put('g', 3, entry.message);
    await reopen();
    expectSameMessage(storage.bodyStore.get('g', 1), big);
    expectSameMessage(storage.bodyStore.get('g', 2), empty);
    expectSameMessage(storage.bodyStore.get('g', 3), sampleMessage(5));
  });

  it('deletes one body: at once, and durably', async () => {
    storage.bodyStore.put('g', 1, sampleMessage(1));
    storage.bodyStore.put('g', 2, sampleMessage(2));
    await storage.bodyStore.flushed();
    storage.bodyStore.delete('g', 1);
    storage.bodyStore.delete('g', 99); // absent: a no-op
    expect(storage.bodyStore.get('g', 1)).toBeUndefined();
    await reopen();
    expect(storage.bodyStore.get('g', 1)).toBeUndefined();
    expectSameMessage(storage.bodyStore.get('g', 2), sampleMessage(2));
  });

  it('applies writes to one key in order within a turn (put, delete, put again)', async () => {
    const second = sampleMessage(7, { routingKey: 'second' });
    storage.bodyStore.put('g', 1, sampleMessage(3));
    storage.bodyStore.delete('g', 1);
    expect(storage.bodyStore.get('g', 1)).toBeUndefined();
    storage.bodyStore.put('g', 1, second);
    expect(storage.bodyStore.get('g', 1)).toBe(second);
    await reopen();
    expectSameMessage(storage.bodyStore.get('g', 1), second);
  });

  it('reads every body back while writes keep committing across many turns', async () => {
    const expected = new Map<number, StoredMessage>();
    for (let turn = 0; turn < 50; turn++) {
      for (let i = 0; i < 20; i++) {
        const id = turn * 20 + i + 1;
        const message = sampleMessage(id % 50, { routingKey: `rk${id}` });
        storage.bodyStore.put('g', id, message);
        expected.set(id, message);
        if (id % 3 === 0) {
          storage.bodyStore.delete('g', id - 1);
          expected.delete(id - 1);
        }
      }
      for (const [id, message] of expected) expectSameMessage(storage.bodyStore.get('g', id), message);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count('g')).toBe(expected.size);
  });

  it('deletes a whole group (a range: more than one chunk), and no other group', async () => {
    const total = DELETE_CHUNK_KEYS * 2 + 10;
    const message = sampleMessage(8);
    for (let id = 1; id <= total; id++) storage.bodyStore.put('q', id, message);
    // 'q' is a prefix of 'qq' and 'q\u0000' sorts right after 'q' as a string: keys keep them apart.
    storage.bodyStore.put('qq', 1, message);
    storage.bodyStore.put('q\u0000', 1, message);
    storage.bodyStore.put('p', 5, message);
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count('q')).toBe(total);

    storage.bodyStore.deleteGroup('q');
    expect(storage.bodyStore.get('q', 1)).toBeUndefined();
    expect(storage.bodyStore.get('q', total)).toBeUndefined();
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count('q')).toBe(0);
    await reopen();
    expect(storage.bodyStore.count('q')).toBe(0);
    for (const group of ['qq', 'q\u0000']) expectSameMessage(storage.bodyStore.get(group, 1), message);
    expectSameMessage(storage.bodyStore.get('p', 5), message);
  });

  it('finishes a group deletion that a previous run left unfinished', async () => {
    for (let id = 1; id <= 100; id++) storage.bodyStore.put('dead', id, sampleMessage(4));
    storage.bodyStore.put('alive', 1, sampleMessage(4));
    await storage.close();
    // What a crash between the deletion record and the last chunk leaves behind.
    const env = open({ path: storage.path });
    await env
      .openDB({ name: BODY_DELETIONS_DB, keyEncoding: 'binary', encoding: 'binary' })
      .put(groupIdBytes('dead'), Buffer.from([1]));
    await env.close();

    storage = await openNodeStorage(dir.path);
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count('dead')).toBe(0);
    expect(storage.bodyStore.count('alive')).toBe(1);
  });

  it('keeps the bodies of a group written again once its deletion is over (a replica removed, then added back)', async () => {
    const total = DELETE_CHUNK_KEYS + 10;
    const message = sampleMessage(8);
    for (let id = 1; id <= total; id++) storage.bodyStore.put('g', id, message);
    await storage.bodyStore.flushed();
    storage.bodyStore.deleteGroup('g');
    await storage.bodyStore.whenGroupDeleted('g');
    // The new replica's bodies (ids as the group's log numbers them: the same range again).
    for (let id = 1; id <= 20; id++) storage.bodyStore.put('g', id, message);
    await storage.bodyStore.flushed();
    await reopen();
    expect(storage.bodyStore.count('g')).toBe(20);
    expectSameMessage(storage.bodyStore.get('g', 20), message);
    await expect(storage.bodyStore.whenGroupDeleted('never-deleted')).resolves.toBeUndefined();
  });

  it('makes a deletion resumed at open awaitable before the group is written again', async () => {
    for (let id = 1; id <= 100; id++) storage.bodyStore.put('g', id, sampleMessage(4));
    await storage.close();
    const env = open({ path: storage.path });
    await env
      .openDB({ name: BODY_DELETIONS_DB, keyEncoding: 'binary', encoding: 'binary' })
      .put(groupIdBytes('g'), Buffer.from([1]));
    await env.close();
    storage = await openNodeStorage(dir.path);
    await storage.bodyStore.whenGroupDeleted('g');
    storage.bodyStore.put('g', 1, sampleMessage(4));
    await storage.bodyStore.flushed();
    await reopen();
    expect(storage.bodyStore.count('g')).toBe(1);
  });

  it('refuses writes after close and bad ids or group ids', async () => {
    expect(() => storage.bodyStore.put('g', -1, sampleMessage(1))).toThrow(RangeError);
    expect(() => storage.bodyStore.put('g', 1.5, sampleMessage(1))).toThrow(RangeError);
    expect(() => storage.bodyStore.put('', 1, sampleMessage(1))).toThrow(RangeError);
    expect(() => storage.bodyStore.put('x'.repeat(513), 1, sampleMessage(1))).toThrow(RangeError);
    expect(() => storage.bodyStore.put('x'.repeat(512), 2 ** 53 - 1, sampleMessage(1))).not.toThrow();
    await storage.bodyStore.close();
    expect(() => storage.bodyStore.put('g', 1, sampleMessage(1))).toThrow(StorageClosedError);
    expect(() => storage.bodyStore.delete('g', 1)).toThrow(StorageClosedError);
    expect(() => storage.bodyStore.deleteGroup('g')).toThrow(StorageClosedError);
  });
});

describe('LmdbBodyStore recent bodies', () => {
  it('answers from memory, drops what is deleted, and reads evicted bodies back from LMDB', async () => {
    const dir = tempDir('bodies-recent');
    const env = open({ path: dir.path, maxDbs: 4 });
    // Room for about two 1,000-byte bodies (each counts its body plus a fixed overhead).
    const store = new LmdbBodyStore(env, { recentBytes: 2600 });
    try {
      const messages = [1, 2, 3, 4].map((i) => sampleMessage(1000, { routingKey: `k${i}` }));
      for (const [i, m] of messages.entries()) store.put('g', i + 1, m);
      await store.flushed();
      for (let i = 0; i < 4; i++) expectSameMessage(store.get('g', i + 1), messages[i] as StoredMessage);
      store.delete('g', 4);
      expect(store.get('g', 4)).toBeUndefined();
      await store.flushed();
      expect(store.get('g', 4)).toBeUndefined();
      store.deleteGroup('g');
      expect(store.get('g', 3)).toBeUndefined();
      await store.flushed();
      expect(store.get('g', 1)).toBeUndefined();
    } finally {
      await store.close();
      await env.close();
      dir.remove();
    }
  });

  it('holds no record of a drained queue: deleted bodies leave the put order, not only the lookup', async () => {
    // Issue 28 item 7: after a drain, the put order kept a record (message and body) of up to
    // 65,536 deleted messages, ~70 MiB of 1 KiB bodies, until later puts pushed them out.
    const dir = tempDir('bodies-recent-drain');
    const env = open({ path: dir.path, maxDbs: 4 });
    const store = new LmdbBodyStore(env, { recentBytes: 64 * 1024 * 1024 });
    try {
      const message = sampleMessage(100);
      for (let cycle = 0; cycle < 2; cycle++) {
        const first = cycle * 20_000 + 1;
        for (let id = first; id < first + 20_000; id++) store.putLogged('g', id, message, false);
        expect(store.recentCount).toBe(20_000);
        // The first cycle's few stale records may still be there (fewer than a sweep's minimum).
        expect(store.recentOrderLength).toBeGreaterThanOrEqual(20_000);
        expect(store.recentOrderLength).toBeLessThan(20_000 + 1024);
        // Drained in publish order, then in the reverse order (requeues, several consumers).
        const ids = Array.from({ length: 20_000 }, (_, i) => first + i);
        if (cycle === 1) ids.reverse();
        for (const [n, id] of ids.entries()) {
          store.delete('g', id);
          // Bounded all along: stale records at most as many as the live ones, or a few.
          const live = store.recentCount;
          expect(store.recentOrderLength).toBeLessThanOrEqual(live + Math.max(live, 1023));
          if (n === 9_999) expect(store.get('g', ids[n + 1] as number)).toBeDefined();
        }
        expect(store.recentCount).toBe(0);
        expect(store.recentOrderLength).toBeLessThan(1024);
        expect(store.heldBackCount).toBe(0);
      }
      // A group deletion leaves nothing behind either.
      for (let id = 50_000; id < 53_000; id++) store.putLogged('h', id, message, false);
      store.deleteGroup('h');
      expect(store.recentCount).toBe(0);
      expect(store.recentOrderLength).toBe(0);
      // Bounds on puts still hold, and an evicted (written) body still reads back.
      for (let id = 60_000; id < 61_000; id++) store.putLogged('g', id, message, false);
      expect(store.recentOrderLength).toBeLessThan(1_000 + 1024);
      expectSameMessage(store.get('g', 60_000), message);
    } finally {
      await store.close();
      await env.close();
      dir.remove();
    }
  });

  it('keeps a copy whose body is the stored bytes, not a view of the buffer the message arrived in', async () => {
    const dir = tempDir('bodies-recent-copy');
    const env = open({ path: dir.path, maxDbs: 4 });
    const store = new LmdbBodyStore(env);
    try {
      const batch = new Uint8Array(64 * 1024).fill(3);
      const message = sampleMessage(10, { body: batch.subarray(100, 110) });
      store.put('g', 1, message);
      await store.flushed(); // committed: answered from the recent bodies, not the pending write
      const kept = store.get('g', 1);
      expectSameMessage(kept, message);
      expect(kept).not.toBe(message);
      expect(kept?.body.buffer).not.toBe(batch.buffer);
    } finally {
      await store.close();
      await env.close();
      dir.remove();
    }
  });
});

/** A log storage on LMDB that hands a batch to LMDB only when the test releases it. */
class HeldLmdbStorage implements LogStorage {
  readonly #inner: LmdbLogStorage;
  readonly held: (() => void)[] = [];

  constructor(inner: LmdbLogStorage) {
    this.#inner = inner;
  }

  write(writes: readonly LogWrite[]): Promise<void> {
    return new Promise((resolve, reject) => {
      this.held.push(() => this.#inner.write(writes).then(resolve, reject));
    });
  }

  entries(groupId: string, fromIndex: number, toIndex?: number): Iterable<StoredEntry> {
    return this.#inner.entries(groupId, fromIndex, toIndex);
  }

  lastIndex(groupId: string): number {
    return this.#inner.lastIndex(groupId);
  }

  hardState(groupId: string): HardState | undefined {
    return this.#inner.hardState(groupId);
  }

  snapshot(groupId: string): StoredSnapshot | undefined {
    return this.#inner.snapshot(groupId);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

describe('LmdbBodyStore held-back bodies (putLogged)', () => {
  async function withStore(
    recentBytes: number,
    run: (
      store: LmdbBodyStore,
      committed: () => number,
      reopen: () => Promise<LmdbBodyStore>,
    ) => Promise<void>,
  ): Promise<void> {
    const dir = tempDir('bodies-held');
    const env = open({ path: dir.path, maxDbs: 4 });
    let store = new LmdbBodyStore(env, { recentBytes });
    const raw = env.openDB({ name: BODIES_DB, keyEncoding: 'binary', encoding: 'binary' });
    try {
      await run(
        store,
        () => raw.getKeysCount(),
        async () => {
          await store.close();
          store = new LmdbBodyStore(env, { recentBytes });
          return store;
        },
      );
    } finally {
      await store.close();
      await env.close();
      dir.remove();
    }
  }

  it('answers from memory and writes nothing while the log holds the body; a delete writes nothing either', async () => {
    await withStore(1024 * 1024, async (store, committed) => {
      const messages = [1, 2, 3].map((i) => sampleMessage(500, { routingKey: `k${i}` }));
      for (const [i, m] of messages.entries()) store.putLogged('g', i + 1, m, false);
      expect(store.heldBackCount).toBe(3);
      expect(store.count('g')).toBe(3);
      expectSameMessage(store.get('g', 2), messages[1] as StoredMessage);
      store.delete('g', 2);
      expect(store.get('g', 2)).toBeUndefined();
      expect(store.heldBackCount).toBe(2);
      await store.flushed();
      expect(committed()).toBe(0);
      expect(store.count('g')).toBe(2);
    });
  });

  it("keeps a follower's deferred message undecoded, writes its bytes as they are, and hands out a plain decoded copy", async () => {
    await withStore(1024 * 1024, async (store, committed, reopen) => {
      const original = sampleMessage(300, { properties: richProperties(), bcc: ['b'] });
      const bytes = queueCommandCodec.encode({
        type: 'enqueue',
        size: 300,
        ttl: undefined,
        message: original,
      });
      const entry = queueCommandCodec.decodeEntry?.(bytes);
      if (entry?.type !== 'enqueue') throw new Error('not an enqueue');
      const decodes = vi.spyOn(DeferredMessage.prototype, 'decoded', 'get');
      try {
        store.putLogged('g', 1, entry.message, false);
        store.putLogged('g', 2, entry.message, false);
        store.persistSomeLogged('g', 1); // id 1 written (evicted or persisted: the same write)
        await store.flushed();
        expect(committed()).toBe(1);
        expect(decodes).not.toHaveBeenCalled();
        const read = store.get('g', 2);
        // A plain object (a spread keeps every field), decoded once from the stored bytes.
        expect(read).not.toBeInstanceOf(DeferredMessage);
        expectSameMessage(read ? { ...read } : undefined, original);
        expect(store.get('g', 2)).toBe(read);
        expect(decodes).toHaveBeenCalled();
      } finally {
        decodes.mockRestore();
      }
      const reopened = await reopen();
      expectSameMessage(reopened.get('g', 1), original);
    });
  });

  it('keeps no record of held-back bodies deleted before they were written (a queue drained but one)', async () => {
    await withStore(64 * 1024 * 1024, async (store, committed) => {
      const message = sampleMessage(10);
      for (let id = 1; id <= 5000; id++) store.putLogged('g', id, message, false);
      // Acked out of order, all but the oldest: the head cannot move past it.
      for (let id = 5000; id >= 2; id--) store.delete('g', id);
      expect(store.heldBackCountOf('g')).toBe(1);
      expect(store.heldBackSlotsOf('g')).toBeLessThanOrEqual(2 + 1024);
      store.persistLogged('g');
      await store.flushed();
      expect(committed()).toBe(1);
      expect(store.heldBackSlotsOf('g')).toBe(0);
    });
  });

  it('writes the held-back bodies of one group, and only those, when asked before a snapshot', async () => {
    await withStore(1024 * 1024, async (store, committed, reopen) => {
      const kept = sampleMessage(400, { properties: richProperties(), bcc: ['b'] });
      store.putLogged('g', 1, kept, false);
      store.putLogged('g', 2, sampleMessage(10), false);
      store.delete('g', 2);
      store.putLogged('other', 1, sampleMessage(20), false);
      store.persistLogged('g');
      expect(store.heldBackCount).toBe(1); // the other group's
      await store.flushed();
      expect(committed()).toBe(1);
      // Written once: a second persist has nothing left to write.
      store.persistLogged('g');
      await store.flushed();
      expect(committed()).toBe(1);
      const reopened = await reopen();
      expectSameMessage(reopened.get('g', 1), kept);
      expect(reopened.get('other', 1)).toBeUndefined(); // held back, never persisted: the log has it
      // Deleting a written body reaches the disk.
      reopened.delete('g', 1);
      await reopened.flushed();
      expect(committed()).toBe(0);
    });
  });

  it('writes a bounded number of held-back bodies at a time, oldest first, and counts what is left', async () => {
    await withStore(1024 * 1024, async (store, committed, reopen) => {
      for (let id = 1; id <= 5; id++)
        store.putLogged('g', id, sampleMessage(10, { routingKey: `k${id}` }), false);
      store.putLogged('other', 1, sampleMessage(10), false);
      store.delete('g', 2);
      expect(store.heldBackCountOf('g')).toBe(4);
      expect(store.persistSomeLogged('g', 2)).toBe(2);
      expect(store.heldBackCountOf('g')).toBe(2);
      expect(store.heldBackCount).toBe(3);
      await store.flushed();
      expect(committed()).toBe(2);
      const reopened = await reopen();
      // The oldest live ones (1 and 3) were written; 4 and 5 are still only in the log.
      expect(reopened.get('g', 1)?.routingKey).toBe('k1');
      expect(reopened.get('g', 3)?.routingKey).toBe('k3');
      expect(reopened.get('g', 4)).toBeUndefined();
      expect(reopened.persistSomeLogged('g', 10)).toBe(0);
    });
  });

  it('writes ahead only the held-back bodies old enough, oldest first, a bounded number per call', async () => {
    await withStore(1024 * 1024, async (store, committed) => {
      for (let id = 1; id <= 6; id++) store.putLogged('g', id, sampleMessage(10), false);
      store.persistLoggedUpTo('g', 4, 3);
      expect(store.heldBackCountOf('g')).toBe(3); // 1, 2, 3 written; 4 left by the bound of 3
      store.persistLoggedUpTo('g', 4, 10);
      expect(store.heldBackCountOf('g')).toBe(2); // 5 and 6 are younger than the bound
      await store.flushed();
      expect(committed()).toBe(4);
    });
  });

  it('writes a held-back body that the recent bounds evict while its message is live', async () => {
    // Room for about two 1,000-byte bodies.
    await withStore(2600, async (store, committed, reopen) => {
      const messages = [1, 2, 3, 4].map((i) => sampleMessage(1000, { routingKey: `k${i}` }));
      for (const [i, m] of messages.entries()) store.putLogged('g', i + 1, m, false);
      expect(store.heldBackCount).toBe(2);
      await store.flushed();
      expect(committed()).toBe(2);
      for (let i = 0; i < 4; i++) expectSameMessage(store.get('g', i + 1), messages[i] as StoredMessage);
      store.delete('g', 1); // evicted, so written: the delete must reach LMDB
      await store.flushed();
      expect(committed()).toBe(1);
      const reopened = await reopen();
      expectSameMessage(reopened.get('g', 2), messages[1] as StoredMessage);
      expect(reopened.get('g', 1)).toBeUndefined();
    });
  });

  it('deletes on disk a replayed body that an earlier run may have written', async () => {
    await withStore(1024 * 1024, async (store, committed, reopen) => {
      const message = sampleMessage(100);
      store.put('g', 7, message);
      await store.flushed();
      expect(committed()).toBe(1);
      const reopened = await reopen();
      // The restarted queue replays the enqueue entry: held back again, but maybe stored.
      reopened.putLogged('g', 7, message, true);
      reopened.delete('g', 7);
      await reopened.flushed();
      expect(committed()).toBe(0);
    });
  });

  it('deletes on disk a body an earlier run wrote, though the entry is applied after the log opened', async () => {
    await withStore(1024 * 1024, async (store, committed, reopen) => {
      const message = sampleMessage(100);
      store.put('g', 7, message);
      store.put('g', 3, message);
      await store.flushed();
      expect(committed()).toBe(2);
      const reopened = await reopen();
      // Committed before the crash, but its commit index came from the leader after the log had
      // opened: applied as new. The earlier run wrote it; the delete must reach the disk.
      reopened.putLogged('g', 7, message, false);
      reopened.delete('g', 7);
      // Younger than anything stored: never written by any run, so its delete costs nothing.
      reopened.putLogged('g', 8, message, false);
      reopened.delete('g', 8);
      await reopened.flushed();
      expect(committed()).toBe(1);
      expect(reopened.get('g', 3)).toBeDefined();
    });
  });

  it('forgets held-back bodies of a deleted group without writing them', async () => {
    await withStore(1024 * 1024, async (store, committed) => {
      store.putLogged('g', 1, sampleMessage(100), false);
      store.deleteGroup('g');
      expect(store.heldBackCount).toBe(0);
      expect(store.get('g', 1)).toBeUndefined();
      store.persistLogged('g');
      await store.flushed();
      expect(committed()).toBe(0);
    });
  });

  it('writes at once when no memory is allowed for recent bodies', async () => {
    await withStore(0, async (store, committed) => {
      store.putLogged('g', 1, sampleMessage(100), false);
      expect(store.heldBackCount).toBe(0);
      await store.flushed();
      expect(committed()).toBe(1);
    });
  });
});

describe('LmdbBodyStore with a log store', () => {
  it("writes bodies in the log store's batch transaction, not in commits of their own", async () => {
    const dir = tempDir('bodies-attached');
    const env = open({ path: dir.path });
    const held = new HeldLmdbStorage(new LmdbLogStorage(env));
    const logStore = new LogStore(held);
    const bodies = new LmdbBodyStore(env, { logStore });
    const raw = env.openDB({ name: BODIES_DB, keyEncoding: 'binary', encoding: 'binary' });
    const committedBodies = (): number => raw.getKeysCount();
    try {
      const message = sampleMessage(300);
      bodies.put('g', 1, message);
      bodies.put('g', 2, sampleMessage(10));
      bodies.delete('g', 2);
      const entry = logStore.append('g', { index: 1, term: 1, ts: 1 }, new Uint8Array([7]));
      for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
      await env.flushed;
      // Held with the log store's batch: nothing committed, reads answered from memory.
      expect(held.held).toHaveLength(1);
      expect(committedBodies()).toBe(0);
      expect(bodies.get('g', 1)).toBe(message);
      expect(bodies.get('g', 2)).toBeUndefined();
      held.held[0]?.();
      await entry;
      expect(committedBodies()).toBe(1);
      expect(logStore.lastIndex('g')).toBe(1);
      expectSameMessage(bodies.get('g', 1), message);
      await bodies.flushed();
    } finally {
      await logStore.close();
      await bodies.close();
      await env.close();
      dir.remove();
    }
  });

  it('writes on its own once the log store is closing', async () => {
    const dir = tempDir('bodies-fallback');
    const env = open({ path: dir.path });
    const logStore = new LogStore(new LmdbLogStorage(env));
    const bodies = new LmdbBodyStore(env, { logStore });
    try {
      await logStore.close();
      const message = sampleMessage(50);
      bodies.put('g', 1, message);
      await bodies.flushed();
      expect(bodies.failure).toBeUndefined();
      expectSameMessage(bodies.get('g', 1), message);
    } finally {
      await bodies.close();
      await env.close();
      dir.remove();
    }
  });
});
