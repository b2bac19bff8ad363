import type { LogStorage } from '@styx/raft';
import { LogStore, MemoryLogStorage, SingleVoterLog } from '@styx/raft';
import type { CounterCommand, CounterResult } from '@styx/raft/compliance';
import { CounterMachine, counterCodec } from '@styx/raft/compliance';
import { describe, expect, it } from 'vitest';
import type { CompactionOptions } from './compaction-policy.ts';
import {
  CompactionTracker,
  ENTRY_OVERHEAD_BYTES,
  queueCommandWeight,
  withCompaction,
} from './compaction-policy.ts';
import type { StorageLogger } from './storage-logger.ts';
import { sampleMessage } from './test-support/storage-fixtures.ts';

/** Resolves after the pending setImmediate callbacks (a scheduled compaction) and their batch. */
async function settle(): Promise<void> {
  for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
}

function compactingCounter(storage: LogStorage, options: CompactionOptions<CounterCommand>) {
  const store = new LogStore(storage);
  const log = withCompaction(
    new SingleVoterLog<CounterCommand, CounterResult>('g', store, counterCodec),
    options,
  );
  return { store, log };
}

/** Indexes of the stored entries of group 'g'. */
function storedIndexes(store: LogStore): number[] {
  return [...store.entries('g', 0)].map((entry) => entry.index);
}

describe('CompactionTracker', () => {
  it('is due after maxEntries or maxBytes, and only once the tail outweighs the snapshot', () => {
    const tracker = new CompactionTracker({ maxEntries: 3, maxBytes: 1000, snapshotRatio: 1 });
    expect(tracker.due).toBe(false);
    tracker.recordApplied(10);
    tracker.recordApplied(10);
    expect(tracker.due).toBe(false);
    tracker.recordApplied(10);
    expect(tracker.due).toBe(true);

    tracker.recordSnapshot(500);
    expect(tracker.entriesSinceSnapshot).toBe(0);
    for (let i = 0; i < 10; i++) tracker.recordApplied(10);
    // 10 entries (over maxEntries) but 100 bytes against a 500-byte snapshot: not yet.
    expect(tracker.due).toBe(false);
    for (let i = 0; i < 40; i++) tracker.recordApplied(10);
    expect(tracker.due).toBe(true);

    tracker.recordSnapshot(0);
    tracker.recordApplied(1000);
    expect(tracker.due).toBe(true);
  });

  it('weighs queue commands by their size in the log', () => {
    const enqueue = queueCommandWeight({
      type: 'enqueue',
      size: 1024,
      ttl: undefined,
      message: sampleMessage(1024),
    });
    expect(enqueue).toBeGreaterThan(1024);
    expect(queueCommandWeight({ type: 'settle', owner: 'o', ids: [1, 2, 3] })).toBeGreaterThan(
      ENTRY_OVERHEAD_BYTES,
    );
    expect(queueCommandWeight({ type: 'purge' })).toBe(ENTRY_OVERHEAD_BYTES);
  });
});

describe('withCompaction', () => {
  it('snapshots and truncates the log once maxEntries were applied, then keeps the tail short', async () => {
    const { store, log } = compactingCounter(new MemoryLogStorage(), {
      policy: { maxEntries: 10, snapshotRatio: 0 },
      compactOnClose: false,
    });
    await log.open(new CounterMachine());
    for (let i = 1; i <= 9; i++) await log.propose({ add: i });
    await settle();
    expect(store.snapshot('g')).toBeUndefined();
    expect(storedIndexes(store)).toHaveLength(9);

    await log.propose({ add: 10 });
    await settle();
    expect(store.snapshot('g')?.meta.index).toBe(10);
    expect(storedIndexes(store)).toStrictEqual([]);

    for (let i = 11; i <= 45; i++) await log.propose({ add: i });
    await settle();
    expect(store.snapshot('g')?.meta.index).toBeGreaterThanOrEqual(40);
    expect(storedIndexes(store).length).toBeLessThan(10);
    await log.close();
  });

  it('keeps every applied value across a restart from snapshot + tail', async () => {
    const storage = new MemoryLogStorage();
    const first = compactingCounter(storage, {
      policy: { maxEntries: 7, snapshotRatio: 0 },
      compactOnClose: false,
    });
    await first.log.open(new CounterMachine());
    await Promise.all(Array.from({ length: 30 }, (_, i) => first.log.propose({ add: i + 1 })));
    await settle();
    await first.log.close();
    expect(storedIndexes(first.store).length).toBeLessThan(30);

    const second = compactingCounter(storage, { policy: { maxEntries: 7, snapshotRatio: 0 } });
    const machine = new CounterMachine();
    await second.log.open(machine);
    expect(machine.state.values).toStrictEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    await second.log.close();
  });

  it('compacts on close when anything was applied since the last snapshot', async () => {
    const { store, log } = compactingCounter(new MemoryLogStorage(), { policy: { maxEntries: 1000 } });
    await log.open(new CounterMachine());
    for (let i = 1; i <= 5; i++) await log.propose({ add: i });
    await log.close();
    await store.sync();
    expect(store.snapshot('g')?.meta.index).toBe(5);
    expect(storedIndexes(store)).toStrictEqual([]);
  });

  it('compacts right after open when the replayed tail is already over the policy', async () => {
    const storage = new MemoryLogStorage();
    const plain = new SingleVoterLog<CounterCommand, CounterResult>('g', new LogStore(storage), counterCodec);
    await plain.open(new CounterMachine());
    for (let i = 1; i <= 20; i++) await plain.propose({ add: i });
    await plain.close();

    const { store, log } = compactingCounter(storage, {
      policy: { maxEntries: 10, snapshotRatio: 0 },
      compactOnClose: false,
    });
    await log.open(new CounterMachine());
    await settle();
    expect(store.snapshot('g')?.meta.index).toBe(20);
    await log.close();
  });

  it('logs a failed compaction instead of throwing, and stops compacting after close', async () => {
    const warnings: unknown[] = [];
    const logger: StorageLogger = { debug() {}, info() {}, error() {}, warn: (obj) => warnings.push(obj) };
    const storage = new MemoryLogStorage();
    const { log } = compactingCounter(storage, {
      policy: { maxEntries: 2, snapshotRatio: 0 },
      logger,
      compactOnClose: false,
    });
    const machine = new CounterMachine();
    machine.snapshot = () => {
      throw new Error('snapshot failed');
    };
    await log.open(machine);
    await log.propose({ add: 1 });
    await log.propose({ add: 2 });
    await settle();
    // One attempt, not a retry loop: the next comes after another maxEntries.
    expect(warnings).toHaveLength(1);
    await log.propose({ add: 3 });
    await settle();
    expect(warnings).toHaveLength(1);
    await log.propose({ add: 4 });
    await settle();
    expect(warnings).toHaveLength(2);
    await log.close();
    await expect(log.propose({ add: 5 })).rejects.toMatchObject({ code: 'LOG_CLOSED' });
  });
  it('prepares a due compaction over as many turns as prepare asks for, then compacts', async () => {
    let calls = 0;
    const { store, log } = compactingCounter(new MemoryLogStorage(), {
      policy: { maxEntries: 3, snapshotRatio: 0 },
      compactOnClose: false,
      // Ready on the third call: two turns of preparation.
      prepare: () => ++calls >= 3,
    });
    await log.open(new CounterMachine());
    for (let i = 1; i <= 3; i++) await log.propose({ add: i });
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls).toBe(1);
    expect(store.snapshot('g')).toBeUndefined();
    await settle();
    await settle();
    expect(calls).toBe(3);
    expect(store.snapshot('g')?.meta.index).toBe(3);
    await log.close();
  });

  it('postpones a compaction whose preparation throws, and logs it once', async () => {
    const warnings: unknown[] = [];
    const logger: StorageLogger = { debug() {}, info() {}, error() {}, warn: (obj) => warnings.push(obj) };
    const { store, log } = compactingCounter(new MemoryLogStorage(), {
      policy: { maxEntries: 2, snapshotRatio: 0 },
      compactOnClose: false,
      logger,
      prepare: () => {
        throw new Error('bodies not writable');
      },
    });
    await log.open(new CounterMachine());
    await log.propose({ add: 1 });
    await log.propose({ add: 2 });
    await settle();
    expect(warnings).toHaveLength(1);
    expect(store.snapshot('g')).toBeUndefined();
    await log.propose({ add: 3 });
    await settle();
    expect(warnings).toHaveLength(1);
    await log.close();
  });
  it('trickles once per turn in which entries were applied, with the last applied index', async () => {
    const seen: number[] = [];
    const { log } = compactingCounter(new MemoryLogStorage(), {
      policy: { maxEntries: 1000 },
      compactOnClose: false,
      trickle: (lastApplied) => seen.push(lastApplied),
    });
    await log.open(new CounterMachine());
    await Promise.all([log.propose({ add: 1 }), log.propose({ add: 2 }), log.propose({ add: 3 })]);
    await settle();
    expect(seen).toStrictEqual([3]);
    await log.propose({ add: 4 });
    await settle();
    await settle();
    expect(seen).toStrictEqual([3, 4]);
    await log.close();
  });
});
