import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import type { ComplianceDeps, CounterCommand, CounterResult } from './compliance/index.ts';
import { CounterMachine, counterCodec, replicatedLogCompliance } from './compliance/index.ts';
import { LogClosedError, LogCorruptedError, LogFailedError } from './errors.ts';
import { openLogStore } from './lmdb/log-store.ts';
import { SingleVoterLog, SingleVoterLogFactory } from './single-voter-log.ts';
import type { LogStore } from './storage/log-store.ts';
import { LogStore as GroupCommitLogStore } from './storage/log-store.ts';
import { ManualSyncLogStorage } from './storage/manual-sync-log-storage.ts';
import { MemoryLogStorage } from './storage/memory-log-storage.ts';

/** Real LMDB in a temporary directory, removed after each test. */
function lmdbHarness() {
  let dir = '';
  let store: LogStore | undefined;
  const current = (): LogStore => {
    if (store === undefined) throw new Error('harness not set up');
    return store;
  };
  return {
    setup() {
      dir = mkdtempSync(join(tmpdir(), 'styx-raft-svl-'));
      store = openLogStore(dir);
    },
    async teardown() {
      await store?.close();
      store = undefined;
      rmSync(dir, { recursive: true, force: true });
    },
    create<C, R>(groupId: string, deps: ComplianceDeps<C>) {
      return new SingleVoterLog<C, R>(groupId, current(), deps.codec, { clock: deps.clock });
    },
    async restart() {
      await current().close();
      store = openLogStore(dir);
    },
    async crash() {
      // In-process stand-in for a crash: what was queued but not handed to LMDB is lost; the batch
      // already handed over completes (LMDB cannot take it back). The SIGKILL test in
      // lmdb/log-store-crash.test.ts covers a real process death.
      await current().abort();
      store = openLogStore(dir);
    },
  };
}

/** The group-commit store over a storage double that syncs one macrotask later; crashes lose unsynced batches. */
function manualSyncHarness() {
  let storage = new ManualSyncLogStorage({ mode: 'auto' });
  let store = new GroupCommitLogStore(storage);
  return {
    setup() {
      storage = new ManualSyncLogStorage({ mode: 'auto' });
      store = new GroupCommitLogStore(storage);
    },
    create<C, R>(groupId: string, deps: ComplianceDeps<C>) {
      return new SingleVoterLog<C, R>(groupId, store, deps.codec, { clock: deps.clock });
    },
    async restart() {
      await store.close();
      storage = new ManualSyncLogStorage({ mode: 'auto', durable: storage.durable });
      store = new GroupCommitLogStore(storage);
    },
    async crash() {
      storage.crash();
      storage = new ManualSyncLogStorage({ mode: 'auto', durable: storage.durable });
      store = new GroupCommitLogStore(storage);
    },
  };
}

replicatedLogCompliance('SingleVoterLog on LMDB', lmdbHarness());
replicatedLogCompliance('SingleVoterLog on a storage double', manualSyncHarness());

type CounterLog = SingleVoterLog<CounterCommand, CounterResult>;

/** Let the store's end-of-turn flush and any continuations run. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('SingleVoterLog with a storage double that withholds the sync', () => {
  let storage: ManualSyncLogStorage;
  let store: GroupCommitLogStore;
  let clock: ManualClock;

  beforeEach(() => {
    storage = new ManualSyncLogStorage();
    store = new GroupCommitLogStore(storage);
    clock = new ManualClock(1_000);
  });

  async function openLog(groupId = 'g'): Promise<{ log: CounterLog; machine: CounterMachine }> {
    const log = new SingleVoterLog<CounterCommand, CounterResult>(groupId, store, counterCodec, { clock });
    const machine = new CounterMachine();
    await log.open(machine);
    return { log, machine };
  }

  it('neither applies nor resolves anything before the sync is released', async () => {
    const { log, machine } = await openLog();
    const resolved: number[] = [];
    const proposals = [1, 2, 3].map((add) => log.propose({ add }).then((r) => resolved.push(r.index)));
    for (let i = 0; i < 10; i++) await nextTurn();
    expect(storage.pendingSyncs).toBe(1); // one batch, handed over and withheld
    expect(resolved).toEqual([]);
    expect(machine.appliedIndexes).toEqual([]);

    expect(storage.releaseSync()).toBe(true);
    await Promise.all(proposals);
    expect(resolved).toEqual([1, 2, 3]);
    expect(machine.state.values).toEqual([1, 2, 3]);
  });

  it('releases batch by batch: a later turn waits for its own sync', async () => {
    const { log } = await openLog();
    const resolved: number[] = [];
    const first = log.propose({ add: 1 }).then((r) => resolved.push(r.index));
    await nextTurn();
    const second = log.propose({ add: 2 }).then((r) => resolved.push(r.index));
    await nextTurn();
    expect(storage.pendingSyncs).toBe(2); // pipelined: the second batch is written while the first syncs
    storage.releaseSync();
    await first;
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(resolved).toEqual([1]);
    expect(storage.pendingSyncs).toBe(1);
    storage.releaseSync();
    await second;
    expect(resolved).toEqual([1, 2]);
  });

  it('fails the pending proposals with LogFailedError when the sync fails, and every later one', async () => {
    const { log, machine } = await openLog();
    const proposals = [1, 2].map((add) => log.propose({ add }));
    await nextTurn();
    storage.failSync(new Error('EIO: disk on fire'));
    for (const outcome of await Promise.allSettled(proposals)) {
      expect(outcome.status).toBe('rejected');
      if (outcome.status === 'rejected') {
        expect(outcome.reason).toBeInstanceOf(LogFailedError);
        expect(String(outcome.reason.message)).toContain('disk on fire');
      }
    }
    expect(machine.appliedIndexes).toEqual([]);
    await expect(log.propose({ add: 3 })).rejects.toBeInstanceOf(LogFailedError);
    expect(storage.durable.lastIndex('g')).toBe(0);
  });

  it('neither applies nor confirms a later batch that synced when an earlier batch failed', async () => {
    const { log, machine } = await openLog();
    const first = log.propose({ add: 1 });
    await nextTurn();
    const second = log.propose({ add: 2 });
    await nextTurn();
    expect(storage.pendingSyncs).toBe(2);
    storage.releaseNewestSync(); // batch 2's sync completes first ...
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(machine.appliedIndexes).toEqual([]); // ... but it waits for batch 1
    storage.failSync(new Error('EIO')); // batch 1 fails: batch 2's proposal fails with it
    await expect(first).rejects.toBeInstanceOf(LogFailedError);
    await expect(second).rejects.toBeInstanceOf(LogFailedError);
    expect(machine.appliedIndexes).toEqual([]);
  });

  it('a failed sync fails every group waiting on that batch', async () => {
    const a = await openLog('a');
    const b = await openLog('b');
    const pa = a.log.propose({ add: 1 });
    const pb = b.log.propose({ add: 1 });
    await nextTurn();
    storage.failSync(new Error('EIO'));
    await expect(pa).rejects.toBeInstanceOf(LogFailedError);
    await expect(pb).rejects.toBeInstanceOf(LogFailedError);
  });

  it('writes the proposals of many groups made in one turn in ONE batch', async () => {
    const logs = await Promise.all(Array.from({ length: 100 }, (_, g) => openLog(`group-${g}`)));
    const proposals: Promise<CounterResult>[] = [];
    for (let round = 0; round < 3; round++) {
      for (const { log } of logs) proposals.push(log.propose({ add: round }));
    }
    await nextTurn();
    expect(storage.pendingSyncs).toBe(1);
    const writes = storage.peekPendingSync() ?? [];
    expect(writes).toHaveLength(300);
    // Interleaved in proposal order: round-robin over the groups.
    expect(
      writes.slice(0, 3).map((w) => (w.kind === 'append' ? `${w.groupId}#${w.entry.index}` : w.kind)),
    ).toEqual(['group-0#1', 'group-1#1', 'group-2#1']);
    storage.releaseSync();
    const results = await Promise.all(proposals);
    expect(results.every((r) => r.index >= 1 && r.index <= 3)).toBe(true);
    for (const { machine } of logs) expect(machine.state.values).toEqual([0, 1, 2]);
    expect(storage.durable.writeCount).toBe(1);
  });

  it('keeps exactly the synced entries across a crash: unsynced ones vanish, none is duplicated', async () => {
    const { log } = await openLog();
    const synced = [log.propose({ add: 1 }), log.propose({ add: 2 })];
    await nextTurn();
    storage.releaseSync();
    await Promise.all(synced);
    const lost = log.propose({ add: 3 });
    lost.catch(() => {});
    await nextTurn();
    expect(storage.pendingSyncs).toBe(1);
    storage.crash();

    store = new GroupCommitLogStore(new ManualSyncLogStorage({ mode: 'auto', durable: storage.durable }));
    const { log: reopened, machine } = await openLog();
    expect(machine.state.values).toEqual([1, 2]);
    expect(machine.appliedIndexes).toEqual([1, 2]);
    const next = await reopened.propose({ add: 4 });
    expect(next.index).toBe(3); // the lost entry's index is reused: it was never durable
  });

  it('close fails proposals waiting for a sync; when that sync lands they are applied by the next incarnation', async () => {
    const { log, machine } = await openLog();
    const pending = log.propose({ add: 5 });
    await nextTurn();
    await log.close();
    await expect(pending).rejects.toBeInstanceOf(LogClosedError);
    storage.releaseSync();
    await store.sync();
    expect(machine.appliedIndexes).toEqual([]);

    const { machine: next } = await openLog();
    expect(next.state.values).toEqual([5]);
  });

  it('open waits for the previous incarnation writes still in flight before replaying', async () => {
    const { log } = await openLog();
    const pending = log.propose({ add: 5 });
    pending.catch(() => {});
    await nextTurn();
    await log.close();
    let opened = false;
    const reopened = new SingleVoterLog<CounterCommand, CounterResult>('g', store, counterCodec, { clock });
    const machine = new CounterMachine();
    const opening = reopened.open(machine).then(() => {
      opened = true;
    });
    for (let i = 0; i < 5; i++) await nextTurn();
    expect(opened).toBe(false);
    storage.releaseSync();
    await opening;
    expect(machine.state.values).toEqual([5]);
    const next = reopened.propose({ add: 1 });
    await nextTurn();
    storage.releaseSync();
    expect((await next).index).toBe(2);
  });

  it('compaction stores the snapshot and truncates the entries in one batch', async () => {
    const { log } = await openLog();
    const proposals = [1, 2, 3].map((add) => log.propose({ add }));
    await nextTurn();
    storage.releaseSync();
    await Promise.all(proposals);
    const compacted = log.compact();
    await nextTurn();
    expect(storage.peekPendingSync()?.map((w) => w.kind)).toEqual(['snapshot', 'truncateBefore']);
    storage.releaseSync();
    await compacted;
    expect([...storage.durable.entries('g', 0)]).toEqual([]);
    expect(storage.durable.snapshot('g')?.meta.index).toBe(3);
  });
});

describe('SingleVoterLogFactory', () => {
  it('creates single-voter logs sharing one store', async () => {
    const storage = new MemoryLogStorage();
    const factory = new SingleVoterLogFactory(new GroupCommitLogStore(storage), { nodeId: 'n1' });
    const a = factory.create<CounterCommand, CounterResult>('a', counterCodec);
    const b = factory.create<CounterCommand, CounterResult>('b', counterCodec);
    await a.open(new CounterMachine());
    await b.open(new CounterMachine());
    await Promise.all([a.propose({ add: 1 }), b.propose({ add: 2 })]);
    expect(storage.writeCount).toBe(1);
    expect(storage.lastIndex('a')).toBe(1);
    expect(storage.lastIndex('b')).toBe(1);
  });
});

describe('SingleVoterLog open', () => {
  it('refuses a stored log with a gap after the snapshot (LogCorruptedError) and stays failed', async () => {
    const storage = new MemoryLogStorage();
    storage.applyNow([
      {
        kind: 'snapshot',
        groupId: 'g',
        snapshot: { meta: { index: 2, term: 1, ts: 1 }, data: new CounterMachine().snapshot() },
      },
      {
        kind: 'append',
        groupId: 'g',
        entry: { index: 4, term: 1, ts: 2, payload: counterCodec.encode({ add: 1 }) },
      },
    ]);
    const log = new SingleVoterLog<CounterCommand, CounterResult>(
      'g',
      new GroupCommitLogStore(storage),
      counterCodec,
    );
    await expect(log.open(new CounterMachine())).rejects.toBeInstanceOf(LogCorruptedError);
    await expect(log.propose({ add: 1 })).rejects.toBeInstanceOf(LogFailedError);
  });

  it('fails open with LogFailedError when the store has failed', async () => {
    const storage = new ManualSyncLogStorage();
    const store = new GroupCommitLogStore(storage);
    const doomed = store.append('other', { index: 1, term: 1, ts: 1 }, new Uint8Array(1));
    doomed.catch(() => {});
    await nextTurn();
    storage.failSync(new Error('EIO'));
    const log = new SingleVoterLog<CounterCommand, CounterResult>('g', store, counterCodec);
    await expect(log.open(new CounterMachine())).rejects.toBeInstanceOf(LogFailedError);
  });
});
