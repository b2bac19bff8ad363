/**
 * A durable queue end to end on real storage: a QueueActor on a SingleVoterLog (with compaction)
 * over the node's LMDB log store, bodies in the LmdbBodyStore; closed and reopened as a restart.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { OwnerSink, QueueActorSinks, QueueLogger } from '../queue/queue-actor.ts';
import { QueueActor } from '../queue/queue-actor.ts';
import type { OwnerId, StoredMessage } from '../queue/types.ts';
import { DEFAULT_QUEUE_CONFIG } from '../queue/types.ts';
import { durableQueueLog } from './durable-queue-log.ts';
import type { NodeStorage } from './node-storage.ts';
import { openNodeStorage } from './node-storage.ts';
import { tempDir } from './test-support/storage-fixtures.ts';

const GROUP = '/:q:1';
const MESSAGES = 10_000;
/** Entries between compactions in this test (the default is larger): several happen during the run. */
const COMPACT_EVERY = 2_000;

const silent: QueueLogger = { child: () => silent, debug() {}, info() {}, warn() {}, error() {} };

interface Delivery {
  readonly id: number;
  readonly redelivered: boolean;
  readonly message: StoredMessage;
}

class RecordingOwner implements OwnerSink {
  readonly deliveries: Delivery[] = [];
  deliver(
    _q: QueueActor,
    _tag: string,
    id: number,
    redelivered: boolean,
    _count: number,
    message: StoredMessage,
  ) {
    this.deliveries.push({ id, redelivered, message });
  }
  consumerCancelled(): void {}
}

class Sinks implements QueueActorSinks {
  readonly owners = new Map<OwnerId, RecordingOwner>();
  resolveOwner(owner: OwnerId): OwnerSink | undefined {
    return this.owners.get(owner);
  }
  routeDeadLetter(): 'no-exchange' {
    return 'no-exchange';
  }
  onQueueExpired(): void {}
}

/** Message n: its number in the body, and in a header. */
function message(n: number): StoredMessage {
  const body = Buffer.alloc(100, 0x2e);
  body.write(`message ${n}`);
  return {
    exchange: '',
    routingKey: 'q',
    properties: { deliveryMode: 2, headers: { entries: [{ key: 'n', value: { i32: n } }] } },
    body,
    bcc: n % 2 === 0 ? ['b'] : undefined,
  };
}

/** The number a message carries, checking body and header agree. */
function numberOf(m: StoredMessage): number {
  const n = Number(/^message (\d+)/.exec(Buffer.from(m.body).toString('latin1'))?.[1]);
  const header = m.properties.headers?.entries.find((e) => e.key === 'n')?.value.i32;
  if (header !== n) throw new Error(`body says ${n}, header says ${String(header)}`);
  expect(Buffer.from(m.body).equals(message(n).body)).toBe(true);
  expect(m.bcc).toStrictEqual(message(n).bcc);
  return n;
}

/** [from, from + 1, …, to] */
function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/** Wait (polling every 5 ms, at most 20 s) until `condition` holds: commits wait for fsyncs. */
async function until(condition: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 4000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!condition()) throw new Error(`gave up waiting for ${what}`);
}

describe('durable queue on node storage', () => {
  let dir: ReturnType<typeof tempDir>;
  let storage: NodeStorage;
  beforeEach(async () => {
    dir = tempDir('durable-queue');
    storage = await openNodeStorage(dir.path);
  });
  afterEach(async () => {
    await storage.close();
    dir.remove();
  });

  async function openActor(sinks: Sinks): Promise<QueueActor> {
    const log = durableQueueLog(storage, GROUP, {
      compaction: { maxEntries: COMPACT_EVERY, snapshotRatio: 0 },
    });
    const actor = new QueueActor({
      vhost: '/',
      name: 'q',
      groupId: GROUP,
      log,
      bodyStore: storage.bodyStore,
      config: DEFAULT_QUEUE_CONFIG,
      logger: silent,
      sinks,
    });
    await actor.open();
    return actor;
  }

  it('brings back ready messages, returns checked-out ones redelivered, forgets settled ones', async () => {
    const sinks = new Sinks();
    const actor = await openActor(sinks);
    for (let start = 1; start <= MESSAGES; start += 1000) {
      const batch: Promise<unknown>[] = [];
      for (let n = start; n < start + 1000; n++) batch.push(actor.enqueue(message(n), undefined));
      await Promise.all(batch);
    }
    expect(actor.counts().ready).toBe(MESSAGES);

    // A consumer with prefetch 100 takes 1..100 and acks 1..50; the credit freed brings 101..150.
    const owner = new RecordingOwner();
    sinks.owners.set('c1/1', owner);
    await actor.consume('c1/1', 'ctag', 100, false, false);
    expect(owner.deliveries.map((d) => numberOf(d.message))).toStrictEqual(range(1, 100));
    await actor.settle(
      'c1/1',
      owner.deliveries.slice(0, 50).map((d) => d.id),
    );
    await actor.cancel('c1/1', 'ctag');
    expect(owner.deliveries.map((d) => numberOf(d.message))).toStrictEqual(range(1, 150));
    // basic.get: 151..160 checked out, 161..165 taken with noAck.
    for (const n of range(151, 160))
      expect(numberOf((await actor.get('c1/2', false))?.message as StoredMessage)).toBe(n);
    for (const n of range(161, 165))
      expect(numberOf((await actor.get('c1/3', true))?.message as StoredMessage)).toBe(n);
    expect(actor.counts()).toMatchObject({ ready: MESSAGES - 165, unacked: 110 });

    // Compaction ran during the run: a snapshot exists and the entries before it are gone from LMDB.
    const snapshot = storage.logStore.snapshot(GROUP);
    expect(snapshot?.meta.index).toBeGreaterThanOrEqual(COMPACT_EVERY);
    const snapshotIndex = snapshot?.meta.index ?? 0;
    expect([...storage.logStore.entries(GROUP, 0, snapshotIndex + 1)]).toStrictEqual([]);
    expect(storage.logStore.lastIndex(GROUP)).toBeGreaterThan(snapshotIndex);

    await actor.close();
    // Compacted on close: nothing left to replay.
    expect([...storage.logStore.entries(GROUP, 0)]).toStrictEqual([]);
    await storage.close();

    // Restart: a fresh storage and actor; the channels that held messages are gone.
    storage = await openNodeStorage(dir.path);
    const restartedSinks = new Sinks();
    const restarted = await openActor(restartedSinks);
    await until(() => restarted.counts().unacked === 0, 'the checked-out messages to return');
    const kept = MESSAGES - 55;
    expect(restarted.counts()).toMatchObject({ ready: kept, unacked: 0, consumers: 0 });
    expect(storage.bodyStore.count(GROUP)).toBe(kept);

    const reader = new RecordingOwner();
    restartedSinks.owners.set('c2/1', reader);
    await restarted.consume('c2/1', 'all', 0, false, false);
    await until(() => reader.deliveries.length === kept, 'every message to be delivered');
    const redelivered = new Set<number>();
    const fresh = new Set<number>();
    for (const delivery of reader.deliveries) {
      const n = numberOf(delivery.message);
      (delivery.redelivered ? redelivered : fresh).add(n);
    }
    // 51..150 (consumer) and 151..160 (get) were checked out: back as ready, marked redelivered;
    // 1..50 (acked) and 161..165 (noAck get) are gone; 166.. were never delivered.
    expect([...redelivered].sort((a, b) => a - b)).toStrictEqual(range(51, 160));
    expect([...fresh].sort((a, b) => a - b)).toStrictEqual(range(166, MESSAGES));

    await restarted.settle(
      'c2/1',
      reader.deliveries.map((d) => d.id),
    );
    expect(restarted.counts()).toMatchObject({ ready: 0, unacked: 0 });
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count(GROUP)).toBe(0);
    await restarted.close();
  });

  it('deleting the queue removes its log and its bodies', async () => {
    const actor = await openActor(new Sinks());
    await Promise.all(Array.from({ length: 100 }, (_, i) => actor.enqueue(message(i + 1), undefined)));
    expect(await actor.delete()).toBe(100);
    await storage.bodyStore.flushed();
    expect(storage.bodyStore.count(GROUP)).toBe(0);
    expect(storage.logStore.lastIndex(GROUP)).toBe(0);
    expect(storage.logStore.snapshot(GROUP)).toBeUndefined();
  });
});
