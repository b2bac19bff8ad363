/**
 * A replica that is not whole (a live message without its body: a bug, a damaged disk) never
 * stalls its queue: as leader it fetches the bodies from the other replicas and carries on, and a
 * body lost on every replica removes its message, loudly, instead of holding a consumer's credit.
 */

import type { ReplicatedLog } from '@styx/raft';
import { InMemoryLog } from '@styx/raft';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BodyFetchResult, BodySource } from './body-repair.ts';
import type { ActorUnderTest } from './queue-actor-test-support.ts';
import {
  enqueueCommand,
  FakeTarget,
  GROUP,
  makeActor,
  OWNER,
  RecordingSinks,
  ScriptedLog,
} from './queue-actor-test-support.ts';
import { storedMessage, T0 } from './queue-test-harness.ts';
import type { QueueApplyResult, QueueCommand, QueueConfig, StoredMessage } from './types.ts';

/** A source that answers from `held` (what the other replicas have); `lost`: ids they all lack. */
class FakeSource implements BodySource {
  readonly asked: number[][] = [];
  failures = 0;
  readonly held: Map<number, StoredMessage>;
  readonly lostIds: number[];
  constructor(held: Map<number, StoredMessage>, lostIds: number[] = []) {
    this.held = held;
    this.lostIds = lostIds;
  }
  async fetch(_groupId: string, ids: readonly number[]): Promise<BodyFetchResult> {
    this.asked.push([...ids]);
    if (this.failures > 0) {
      this.failures--;
      throw new Error('no replica answered');
    }
    const found = new Map<number, StoredMessage>();
    for (const id of ids) {
      const message = this.held.get(id);
      if (message !== undefined) found.set(id, message);
    }
    return { found, lost: ids.filter((id) => this.lostIds.includes(id)) };
  }
}

function setup(
  log: ReplicatedLog<QueueCommand, QueueApplyResult>,
  source: BodySource,
  config: Partial<QueueConfig> = {},
  sinks = new RecordingSinks(),
): ActorUnderTest {
  return makeActor(log, config, {}, sinks, source);
}

function numbered(n: number): StoredMessage {
  return { ...storedMessage(4), routingKey: `m${n}` };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('a queue leader missing bodies', () => {
  it('fetches them from another replica and delivers every message', async () => {
    const source = new FakeSource(new Map());
    const { actor, sinks, store, logger } = setup(new InMemoryLog(GROUP), source);
    await actor.open();
    const owner = sinks.owner(OWNER);
    for (let n = 1; n <= 3; n++) await actor.enqueue(numbered(n), undefined);
    const ids = [...actor.liveIds()];
    const damaged = ids[1] as number;
    source.held.set(damaged, store.get(GROUP, damaged) as StoredMessage);
    store.delete(GROUP, damaged); // the damage
    await actor.consume(OWNER, 'ctag', 10, false, false);
    await vi.advanceTimersByTimeAsync(10);
    expect(owner.deliveries.map((d) => d.message.routingKey).sort()).toEqual(['m1', 'm2', 'm3']);
    expect(source.asked).toEqual([[damaged]]);
    expect(store.get(GROUP, damaged)?.routingKey).toBe('m2'); // stored again
    expect(actor.bodyRepairStatus()).toEqual({ missing: 0, repaired: 1, lost: 0 });
    expect(logger.lines.some((l) => l.level === 'error' && /not whole/.test(l.msg ?? ''))).toBe(true);
    await actor.settle(OWNER, ids);
    expect(actor.counts().unacked).toBe(0);
  });

  it('removes a message whose body every replica lacks, and the queue goes on', async () => {
    const source = new FakeSource(new Map());
    const { actor, sinks, store, logger } = setup(new InMemoryLog(GROUP), source);
    await actor.open();
    const owner = sinks.owner(OWNER);
    for (let n = 1; n <= 3; n++) await actor.enqueue(numbered(n), undefined);
    const [first, damaged] = [...actor.liveIds()] as [number, number];
    source.lostIds.push(damaged);
    store.delete(GROUP, damaged);
    // Prefetch 1: a lost message holding the only credit would stall the consumer for good.
    await actor.consume(OWNER, 'ctag', 1, false, false);
    expect(owner.deliveries.map((d) => d.message.routingKey)).toEqual(['m1']);
    await actor.settle(OWNER, [first]);
    await vi.advanceTimersByTimeAsync(10);
    expect(owner.deliveries.map((d) => d.message.routingKey)).toEqual(['m1', 'm3']);
    expect(actor.counts()).toMatchObject({ ready: 0, unacked: 1 });
    expect(actor.bodyRepairStatus()).toEqual({ missing: 0, repaired: 0, lost: 1 });
    expect(logger.lines.some((l) => l.level === 'error' && /lost on every replica/.test(l.msg ?? ''))).toBe(
      true,
    );
  });

  it('keeps asking, with back-off, while no replica answers', async () => {
    const source = new FakeSource(new Map());
    source.failures = 3;
    const { actor, sinks, store } = setup(new InMemoryLog(GROUP), source);
    await actor.open();
    const owner = sinks.owner(OWNER);
    await actor.enqueue(numbered(1), undefined);
    const [id] = [...actor.liveIds()] as [number];
    source.held.set(id, store.get(GROUP, id) as StoredMessage);
    store.delete(GROUP, id);
    await actor.consume(OWNER, 'ctag', 1, false, false);
    await vi.advanceTimersByTimeAsync(100);
    expect(owner.deliveries).toHaveLength(0);
    expect(actor.bodyRepairStatus().missing).toBe(1);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(source.asked.length).toBe(4);
    expect(owner.deliveries.map((d) => d.message.routingKey)).toEqual(['m1']);
  });

  it('scans its state when it takes over and repairs before anyone asks', async () => {
    const source = new FakeSource(new Map());
    const log = new ScriptedLog('follower', [enqueueCommand(numbered(1)), enqueueCommand(numbered(2))]);
    const { actor, store } = setup(log, source);
    await actor.open();
    const [, damaged] = [...actor.liveIds()] as [number, number];
    source.held.set(damaged, store.get(GROUP, damaged) as StoredMessage);
    store.delete(GROUP, damaged);
    await vi.advanceTimersByTimeAsync(10);
    expect(source.asked).toEqual([]); // a follower does not repair
    log.setRole('leader');
    await vi.advanceTimersByTimeAsync(10);
    expect(source.asked).toEqual([[damaged]]);
    expect(store.has(GROUP, damaged)).toBe(true);
  });

  it('answers a basic.get once the body is back', async () => {
    const source = new FakeSource(new Map());
    const { actor, store } = setup(new InMemoryLog(GROUP), source);
    await actor.open();
    await actor.enqueue(numbered(1), undefined);
    const [id] = [...actor.liveIds()] as [number];
    source.held.set(id, store.get(GROUP, id) as StoredMessage);
    store.delete(GROUP, id);
    const got = actor.get(OWNER, false);
    await vi.advanceTimersByTimeAsync(10);
    expect((await got)?.message.routingKey).toBe('m1');
  });

  it('hands a pending dead-letter off once its body is back, instead of dropping it', async () => {
    const source = new FakeSource(new Map());
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    sinks.exchange('dlx', dlq);
    const { actor, store } = setup(
      new InMemoryLog(GROUP),
      source,
      { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-least-once' },
      sinks,
    );
    await actor.open();
    await actor.enqueue(numbered(1), undefined);
    const [id] = [...actor.liveIds()] as [number];
    source.held.set(id, store.get(GROUP, id) as StoredMessage);
    // The body goes missing just as the message is rejected into a pending hand-off.
    const got = await actor.get(OWNER, false);
    store.delete(GROUP, id);
    await actor.discard(OWNER, [got?.id ?? 0]);
    await vi.advanceTimersByTimeAsync(30_000);
    expect(dlq.kept.map((m) => m.routingKey)).toEqual(['m1']);
    expect(actor.counts().deadLetterPending).toBe(0);
  });
});
