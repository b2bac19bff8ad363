// The at-least-once hand-off end to end, with every piece of this package: a source queue's pending
// set and scheduler, deadLetterCopy, the cycle check, and targets deduping by hand-off id — over a
// simulated asynchronous enqueue/confirm interface that loses requests and confirms and nacks,
// driven by a seeded generator so every run is the same.
import { describe, expect, it } from 'vitest';
import { splitCycles } from './cycle.ts';
import type { DeadLetteredCopy, DeadLetterMessage } from './dead-letter-copy.ts';
import { deadLetterCopy } from './dead-letter-copy.ts';
import type { HandOffId } from './dedupe-watermarks.ts';
import { DedupeWatermarks } from './dedupe-watermarks.ts';
import { HandOffScheduler } from './hand-off.ts';
import { PendingDeadLetters } from './pending-dead-letters.ts';
import { message } from './test-support.ts';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

interface Target {
  readonly dedupe: DedupeWatermarks;
  /** Committed copies, by hand-off id. */
  readonly committed: Map<number, DeadLetteredCopy>;
  duplicatesDropped: number;
}

/** One in-flight enqueue: arrives at `at`; its confirm (or nack) comes back to the source. */
interface Transfer {
  readonly at: number;
  readonly target: string;
  readonly id: HandOffId;
  readonly copy: DeadLetteredCopy;
  readonly fate: 'lost-request' | 'lost-confirm' | 'nack' | 'ok';
}

const SOURCE = 'src';
const INCARNATION = 'src#7f3a';

function simulate(seed: number, opts: { dlxMissingUntil: number }) {
  const random = rng(seed);
  const pending = new PendingDeadLetters({ maxMessages: 1_000, maxBytes: 1_000_000 });
  const scheduler = new HandOffScheduler({
    backoff: { initialDelayMs: 100, maxDelayMs: 5_000, jitterRatio: 0, jitterSeed: 0 },
    confirmTimeoutMs: 2_000,
  });
  const stored = new Map<number, DeadLetterMessage>();
  const targets = new Map<string, Target>(
    ['t1', 't2'].map((name) => [
      name,
      { dedupe: new DedupeWatermarks(), committed: new Map(), duplicatesDropped: 0 },
    ]),
  );
  const firstCopy = new Map<number, DeadLetteredCopy>();
  const transfers: Transfer[] = [];
  const settledAt = new Map<number, number>();
  let cycleDrops = 0;
  let dlxExists = false;

  // The DLX is a fanout to t1, t2 and back to the source (a cycle for expired messages).
  const route = (): string[] => (dlxExists ? ['t1', 't2', SOURCE] : []);

  // 20 messages expire from the source at t = 0..19 ms (the committed entries' times).
  for (let id = 1; id <= 20; id++) {
    stored.set(id, message({ exchange: 'orders', routingKey: SOURCE, body: `m${id}` }));
    pending.add({ id, reason: 'expired', size: 2, deadLetteredAt: 1_795_308_382_000 + id });
    scheduler.track(id, id);
  }

  for (let now = 0; now < 60_000 && pending.count > 0; now += 10) {
    if (!dlxExists && now >= opts.dlxMissingUntil) {
      dlxExists = true;
      scheduler.wake(now); // the exchange appeared: retry at once
    }
    // Deliver what has arrived, in send order.
    for (let i = 0; i < transfers.length; ) {
      const t = transfers[i] as Transfer;
      if (t.at > now) {
        i++;
        continue;
      }
      transfers.splice(i, 1);
      if (t.fate === 'lost-request') continue;
      if (t.fate === 'nack') {
        scheduler.fail(t.id.messageId, now);
        continue;
      }
      const target = targets.get(t.target) as Target;
      if (target.dedupe.accept(t.id.source, t.id.messageId, t.id.horizon) === 'new') {
        target.committed.set(t.id.messageId, t.copy);
      } else {
        target.duplicatesDropped += 1;
      }
      if (t.fate === 'lost-confirm') continue;
      if (scheduler.confirm(t.id.messageId, t.target) === 'settled') {
        // Commit deadLetterSettled: only now does the source forget the message.
        for (const name of ['t1', 't2']) {
          expect((targets.get(name) as Target).committed.has(t.id.messageId)).toBe(true);
        }
        pending.settle(t.id.messageId);
        scheduler.forget(t.id.messageId);
        settledAt.set(t.id.messageId, now);
      }
    }
    // Attempts that are due.
    for (const id of scheduler.due(now)) {
      const entry = pending.get(id);
      if (entry === undefined) throw new Error(`due hand-off ${id} is not pending`);
      const copy = deadLetterCopy({
        message: stored.get(id) as DeadLetterMessage,
        queue: SOURCE,
        reason: entry.reason,
        dlx: 'dlx',
        dlk: undefined,
        timeSeconds: Math.floor(entry.deadLetteredAt / 1000),
      });
      if (!firstCopy.has(id)) firstCopy.set(id, copy);
      expect(copy).toEqual(firstCopy.get(id)); // a retry sends an identical copy
      const { deliver, dropped } = splitCycles(copy.properties, route());
      cycleDrops += dropped.length;
      const plan = scheduler.start(id, now, { queues: deliver, cycleDropped: dropped });
      if (plan.type === 'settled') {
        pending.settle(id);
        scheduler.forget(id);
        settledAt.set(id, now);
      } else if (plan.type === 'send') {
        const horizon = pending.lowestId() ?? id;
        for (const target of plan.queues) {
          const r = random();
          const fate = r < 0.15 ? 'lost-request' : r < 0.3 ? 'lost-confirm' : r < 0.4 ? 'nack' : 'ok';
          transfers.push({
            at: now + 10 + Math.floor(random() * 50),
            target,
            id: { source: INCARNATION, messageId: id, horizon },
            copy,
            fate,
          });
        }
      }
    }
  }
  return { pending, targets, settledAt, cycleDrops };
}

describe('at-least-once hand-off, end to end', () => {
  it.each([1, 2, 3])('seed %i: every message reaches every target exactly once, then settles', (seed) => {
    const { pending, targets, settledAt, cycleDrops } = simulate(seed, { dlxMissingUntil: 0 });
    expect(pending.count).toBe(0);
    expect(settledAt.size).toBe(20);
    for (const target of targets.values()) {
      expect([...target.committed.keys()].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
    }
    // Lost confirms forced retries, and the targets recognised them.
    const duplicates = [...targets.values()].reduce((n, t) => n + t.duplicatesDropped, 0);
    expect(duplicates).toBeGreaterThan(0);
    // The route back to the source closed a cycle on every attempt: counted, never silent.
    expect(cycleDrops).toBeGreaterThanOrEqual(20);
  });

  it('a missing DLX keeps the messages pending; its creation wakes the retries at once', () => {
    const { pending, settledAt } = simulate(4, { dlxMissingUntil: 12_345 });
    expect(pending.count).toBe(0);
    const first = Math.min(...settledAt.values());
    expect(first).toBeGreaterThanOrEqual(12_345);
    // Woken at once, not after the (up to 5 s) back-off: the first settles within the transfer time.
    expect(first).toBeLessThan(12_345 + 200);
  });
});
