import { tableGet } from '@styx/client/wire';
import type { HandOffId, HandOffSchedulerOptions } from '@styx/dlx';
import {
  DEFAULT_DEDUPE_LIMITS,
  DedupeWatermarks,
  readXDeath,
  WIDE_DEDUPE_WINDOW,
  X_DEATH_HEADER,
} from '@styx/dlx';
import { InMemoryLog } from '@styx/raft';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MAX_HAND_OFFS_IN_PROGRESS } from './at-least-once-hand-offs.ts';
import { MAX_COPIES_IN_FLIGHT } from './at-most-once-dead-letters.ts';
import type { DeadLetterTarget } from './dead-letter-route.ts';
import type { DeadLetteringOptions } from './queue-actor.ts';
import type { ActorUnderTest } from './queue-actor-test-support.ts';
import {
  deathOf,
  enqueueCommand,
  FakeTarget,
  GROUP,
  makeActor,
  OWNER,
  RecordingSinks,
  ScriptedLog,
} from './queue-actor-test-support.ts';
import { queueConfig, storedMessage, T0 } from './queue-test-harness.ts';
import type { QueueConfig, QueueReply, RemovalTotals, StoredMessage } from './types.ts';

const ALO: Partial<QueueConfig> = { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-least-once' };
const AMO: Partial<QueueConfig> = { deadLetterExchange: 'dlx', deadLetterStrategy: 'at-most-once' };
const ZERO: RemovalTotals = { rejected: 0, delivery_limit: 0, expired: 0, maxlen: 0 };
/** Fast retries and a short confirm timeout, so the tests step through them. */
const FAST: DeadLetteringOptions = {
  handOff: {
    backoff: { initialDelayMs: 100, maxDelayMs: 5_000, jitterRatio: 0, jitterSeed: 0 },
    confirmTimeoutMs: 1_000,
  },
  logIntervalMs: 1_000,
};

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

/** An open leader actor on an in-memory log with a consumer attached (prefetch 0). */
async function leaderWithConsumer(
  config: Partial<QueueConfig>,
  sinks: RecordingSinks,
  options: DeadLetteringOptions = FAST,
): Promise<ActorUnderTest & { ids: () => number[] }> {
  const under = makeActor(new InMemoryLog(GROUP), config, options, sinks);
  await under.actor.open();
  const owner = sinks.owner(OWNER);
  await under.actor.consume(OWNER, 'ctag', 0, false, false);
  return { ...under, ids: () => owner.deliveries.map((d) => d.id) };
}

/** Enqueue `n` messages (bodies 'm1'..), reject them all; returns their ids. */
async function rejectSome(under: ActorUnderTest & { ids: () => number[] }, n: number): Promise<number[]> {
  for (let i = 1; i <= n; i++) await under.actor.enqueue(storedMessage(i, `rk${i}`), undefined);
  const ids = under.ids().slice(-n);
  await under.actor.discard(OWNER, ids);
  return ids;
}

function settledCommands(log: ScriptedLog): number[][] {
  return log.proposed.flatMap((c) => (c.type === 'deadLetterSettled' ? [[...c.ids]] : []));
}

describe('at-least-once hand-offs', () => {
  it('enqueues the copy at the target with a stable hand-off id, then settles and forgets it', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    sinks.exchange('dlx', dlq);
    const under = await leaderWithConsumer({ ...ALO, deadLetterRoutingKey: 'dead' }, sinks);
    const [id] = await rejectSome(under, 1);
    // Pending until the hand-off settles: body kept, not ready.
    expect(under.actor.counts()).toMatchObject({ ready: 0, unacked: 0, deadLetterPending: 1 });
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.received).toHaveLength(1);
    const { message, handOff } = dlq.received[0] as (typeof dlq.received)[number];
    expect(handOff).toEqual({ source: GROUP, messageId: id, horizon: id });
    expect(message.exchange).toBe('dlx');
    expect(message.routingKey).toBe('dead');
    expect(sinks.routed).toEqual([{ exchange: 'dlx', routingKeys: ['dead'] }]);
    expect(readXDeath(tableGet(message.properties.headers, X_DEATH_HEADER))).toEqual([
      {
        queue: 'q',
        reason: 'rejected',
        count: 1,
        timeSeconds: Math.floor(T0 / 1000),
        exchange: 'ex',
        routingKeys: ['rk1'],
        originalExpiration: undefined,
      },
    ]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    expect(under.store.size(GROUP)).toBe(0);
    expect(under.actor.deadLetterTotals().deadLettered).toEqual({ ...ZERO, rejected: 1 });
  });

  it('settles a batch of confirms with one deadLetterSettled', async () => {
    const sinks = new RecordingSinks();
    sinks.exchange('dlx', new FakeTarget('dlq'));
    const log = new ScriptedLog('leader');
    const under = makeActor(log, ALO, FAST, sinks);
    await under.actor.open();
    sinks.owner(OWNER);
    await under.actor.consume(OWNER, 'c', 0, false, false);
    for (let i = 0; i < 5; i++) await under.actor.enqueue(storedMessage(), undefined);
    await under.actor.discard(OWNER, [3, 4, 5, 6, 7]);
    await vi.advanceTimersByTimeAsync(0);
    expect(settledCommands(log)).toEqual([[3, 4, 5, 6, 7]]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  it('resends an identical copy with the same id when a confirm is lost; the target drops the repeat', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    dlq.script.push('hang');
    sinks.exchange('dlx', dlq);
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(999);
    expect(dlq.received).toHaveLength(1);
    expect(under.actor.counts().deadLetterPending).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(dlq.received).toHaveLength(2);
    const [first, second] = dlq.received;
    expect(second?.handOff).toEqual(first?.handOff);
    expect(second?.message.properties).toEqual(first?.message.properties);
    expect(dlq.kept).toHaveLength(1);
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  it('counts a confirm that arrives late, after the retry started', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    dlq.script.push('defer', 'defer');
    sinks.exchange('dlx', dlq);
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(dlq.received).toHaveLength(2);
    dlq.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    expect(dlq.kept).toHaveLength(1);
  });

  it('retries a refused or unreachable target with back-off, and only the targets that have not confirmed', async () => {
    const sinks = new RecordingSinks();
    const a = new FakeTarget('a');
    const b = new FakeTarget('b');
    b.script.push({ type: 'rejected', reason: 'maxlen' }, 'fail');
    sinks.exchange('dlx', a, b);
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(0);
    expect([a.received.length, b.received.length]).toEqual([1, 1]);
    await vi.advanceTimersByTimeAsync(99);
    expect(b.received).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    // Attempt 2: only b; it is unreachable this time, back-off 200 ms.
    expect([a.received.length, b.received.length]).toEqual([1, 2]);
    expect(under.actor.counts().deadLetterPending).toBe(1);
    await vi.advanceTimersByTimeAsync(200);
    expect([a.received.length, b.received.length]).toEqual([1, 3]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    expect([a.kept.length, b.kept.length]).toEqual([1, 1]);
  });

  it('keeps a message whose DLX is missing, retries within 5 s, and sends at once when woken', async () => {
    const sinks = new RecordingSinks();
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    // 100, 200, 400, ... ms, capped at 5 s: after a minute it is retried every 5 s.
    await vi.advanceTimersByTimeAsync(60_000);
    const attempts = sinks.routed.length;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(sinks.routed.length).toBe(attempts + 1);
    expect(under.actor.counts().deadLetterPending).toBe(1);
    expect(
      under.logger.lines.some(
        (l) => l.level === 'warn' && JSON.stringify(l.obj).includes("no exchange 'dlx'"),
      ),
    ).toBe(true);

    await vi.advanceTimersByTimeAsync(1_000);
    const dlq = new FakeTarget('dlq');
    sinks.exchange('dlx', dlq);
    under.actor.wakeDeadLetters();
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.kept).toHaveLength(1);
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  it('waits while a target queue is not running yet, then reaches every target', async () => {
    const sinks = new RecordingSinks();
    sinks.exchanges.set('dlx', 'unavailable');
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(under.actor.counts().deadLetterPending).toBe(1);
    expect(
      under.logger.lines.some((l) =>
        JSON.stringify(l.obj).includes("target queues of 'dlx' not running yet"),
      ),
    ).toBe(true);
    const [a, b] = [new FakeTarget('a'), new FakeTarget('b')];
    sinks.exchange('dlx', a, b);
    await vi.advanceTimersByTimeAsync(5_000);
    expect([a.kept.length, b.kept.length]).toEqual([1, 1]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  it('treats an exchange with nothing bound as unroutable: kept, not lost', async () => {
    const sinks = new RecordingSinks();
    sinks.exchange('dlx');
    const under = await leaderWithConsumer(ALO, sinks);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(10_000);
    expect(under.actor.counts().deadLetterPending).toBe(1);
    expect(under.logger.lines.some((l) => JSON.stringify(l.obj).includes("nothing bound to 'dlx'"))).toBe(
      true,
    );
  });

  it('drops the copy at a target that closes a cycle, delivers it to the others, counts it once settled', async () => {
    const sinks = new RecordingSinks();
    const other = new FakeTarget('other');
    sinks.exchange('dlx', other, under_q());
    const under = await leaderWithConsumer({ ...ALO, messageTtl: 10 }, sinks);
    await under.actor.cancel(OWNER, 'ctag');
    await under.actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(10);
    await vi.advanceTimersByTimeAsync(0);
    expect(other.kept.map((m) => deathOf(m).reason)).toEqual(['expired']);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    expect(under.actor.deadLetterTotals().droppedCycle).toEqual({ ...ZERO, expired: 1 });
    // The queue itself never got the copy.
    expect(under.actor.counts().ready).toBe(0);

    function under_q(): FakeTarget {
      // A stand-in named like the source queue: the copy's x-death names 'q', so it is a cycle.
      return new FakeTarget('q');
    }
  });

  it('holds a refused reject-publish-dlx publish pending with its body, then forgets it', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    dlq.script.push('hang');
    sinks.exchange('dlx', dlq);
    const under = makeActor(
      new InMemoryLog(GROUP),
      { ...ALO, maxLength: 1, overflow: 'reject-publish-dlx' },
      FAST,
      sinks,
    );
    await under.actor.open();
    await under.actor.enqueue(storedMessage(), undefined);
    const refused = storedMessage(9, 'refused');
    expect(await under.actor.enqueue(refused, undefined)).toEqual({ type: 'rejected', reason: 'maxlen' });
    expect(under.store.size(GROUP)).toBe(2);
    expect(under.actor.counts()).toMatchObject({ ready: 1, deadLetterPending: 1, deadLetterPendingBytes: 9 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(dlq.kept.map((m) => [m.routingKey, deathOf(m).reason])).toEqual([['refused', 'maxlen']]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    expect(under.store.size(GROUP)).toBe(1);
  });

  it('nacks publishes while the pending cap is reached', async () => {
    const sinks = new RecordingSinks();
    const under = await leaderWithConsumer(ALO, sinks, {
      ...FAST,
      pendingLimits: { maxMessages: 2, maxBytes: 1_000_000 },
    });
    await rejectSome(under, 2);
    expect(await under.actor.enqueue(storedMessage(), undefined)).toEqual({
      type: 'rejected',
      reason: 'dead-letter-backlog',
    });
    sinks.exchange('dlx', new FakeTarget('dlq'));
    under.actor.wakeDeadLetters();
    await vi.advanceTimersByTimeAsync(0);
    expect((await under.actor.enqueue(storedMessage(), undefined)).type).toBe('ok');
  });
});

describe('at-least-once hand-offs across leader changes', () => {
  it('a new leader resumes every pending message at once; the target drops what it already has', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    sinks.exchange('dlx', dlq);
    const log = new ScriptedLog('follower');
    const under = makeActor(log, {}, FAST, sinks);
    await under.actor.open();
    log.append({ type: 'setConfig', config: queueConfig(ALO) });
    log.append({ type: 'consume', owner: OWNER, tag: 'c', prefetch: 0, noAck: false, exclusive: false });
    log.append(enqueueCommand(storedMessage(1)));
    log.append(enqueueCommand(storedMessage(2)));
    log.append({ type: 'discard', owner: OWNER, ids: [3, 4] });
    // Followers execute no effects: nothing sent.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(dlq.received).toEqual([]);
    // The previous leader had handed message 3 off before it died (its settle was never committed).
    await dlq.enqueue(storedMessage(1), undefined, { source: GROUP, messageId: 3, horizon: 3 });
    sinks.owner(OWNER);
    log.setRole('leader');
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.received.map((r) => r.handOff?.messageId)).toEqual([3, 3, 4]);
    expect(dlq.kept).toHaveLength(2);
    expect(settledCommands(log)).toEqual([[3, 4]]);
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  /**
   * A source dead-lettering `n` messages to a target that dedupes with a `targetWindow`-id window,
   * its cluster agreeing on `agreed` (the source keeps half of it in progress). The target commits
   * every copy but its confirms are lost (its leader died after committing) until a new leadership
   * of the source sends everything unsettled again. Returns the most in flight and what was kept.
   */
  async function lostConfirmsThenResend(
    n: number,
    agreed: number | undefined,
    targetWindow: number,
  ): Promise<{ mostInFlight: number; kept: number[] }> {
    const dedupe = new DedupeWatermarks({ maxIdsPerSource: targetWindow, maxSources: 256 });
    const kept: number[] = [];
    let answering = false;
    let inFlight = 0;
    let mostInFlight = 0;
    const dlq: DeadLetterTarget = {
      name: 'dlq',
      enqueue(_message: StoredMessage, _ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply> {
        const h = handOff as HandOffId;
        const fresh = dedupe.accept(h.source, h.messageId, h.horizon) === 'new';
        if (fresh) kept.push(h.messageId);
        if (!answering) {
          inFlight += 1;
          mostInFlight = Math.max(mostInFlight, inFlight);
          return new Promise(() => {});
        }
        return Promise.resolve(fresh ? { type: 'ok' } : { type: 'duplicate' });
      },
    };
    const sinks = new RecordingSinks();
    sinks.exchange('dlx', dlq);
    const log = new ScriptedLog('leader');
    const slowTimeout = { ...(FAST.handOff as HandOffSchedulerOptions), confirmTimeoutMs: 60_000 };
    const window = agreed === undefined ? undefined : () => agreed;
    const under = makeActor(log, ALO, { ...FAST, handOff: slowTimeout }, sinks, undefined, window);
    await under.actor.open();
    const owner = sinks.owner(OWNER);
    await under.actor.consume(OWNER, 'c', 0, false, false);
    for (let i = 1; i <= n; i++) await under.actor.enqueue(storedMessage(i), undefined);
    await under.actor.discard(
      OWNER,
      owner.deliveries.map((d) => d.id),
    );
    await vi.advanceTimersByTimeAsync(5_000);
    expect(under.actor.counts().deadLetterPending).toBe(n);
    // A new leadership resends everything unsettled; from now on the target answers.
    log.setRole('follower');
    answering = true;
    log.setRole('leader');
    await vi.advanceTimersByTimeAsync(5_000);
    expect(under.actor.counts().deadLetterPending).toBe(0);
    return { mostInFlight, kept };
  }

  it('keeps at most MAX_HAND_OFFS_IN_PROGRESS in progress, so a target with a bounded dedupe window recognises every repeat after a leader change', async () => {
    // No agreed window given: the initial one (1,024), as in a cluster with the flag disabled.
    const n = 3_000;
    const { mostInFlight, kept } = await lostConfirmsThenResend(
      n,
      undefined,
      DEFAULT_DEDUPE_LIMITS.maxIdsPerSource,
    );
    expect(mostInFlight).toBe(MAX_HAND_OFFS_IN_PROGRESS);
    // Every message exactly once at the target (without the cap: 1,976 forgotten ids sent again).
    expect(kept).toHaveLength(n);
    expect(new Set(kept).size).toBe(n);
  });

  it('with the wide window agreed, keeps half of it (2,048) in progress and every repeat is still recognised', async () => {
    const n = WIDE_DEDUPE_WINDOW / 2 + 1_000;
    const { mostInFlight, kept } = await lostConfirmsThenResend(n, WIDE_DEDUPE_WINDOW, WIDE_DEDUPE_WINDOW);
    expect(mostInFlight).toBe(WIDE_DEDUPE_WINDOW / 2);
    expect(kept).toHaveLength(n);
    expect(new Set(kept).size).toBe(n);
  });

  it('why the window must be agreed: 2,048 in progress against a target still at 1,024 brings copies back', async () => {
    const n = WIDE_DEDUPE_WINDOW / 2 + 1_000;
    const { kept } = await lostConfirmsThenResend(
      n,
      WIDE_DEDUPE_WINDOW,
      DEFAULT_DEDUPE_LIMITS.maxIdsPerSource,
    );
    expect(new Set(kept).size).toBe(n);
    expect(kept.length).toBeGreaterThan(n);
  });

  it('stops on losing leadership: late confirms and timers propose nothing', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    dlq.script.push('defer');
    sinks.exchange('dlx', dlq);
    const log = new ScriptedLog('leader');
    const under = makeActor(log, ALO, FAST, sinks);
    await under.actor.open();
    sinks.owner(OWNER);
    await under.actor.consume(OWNER, 'c', 0, false, false);
    await under.actor.enqueue(storedMessage(), undefined);
    await under.actor.discard(OWNER, [3]);
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.received).toHaveLength(1);
    log.setRole('follower');
    dlq.release();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(settledCommands(log)).toEqual([]);
    expect(dlq.received).toHaveLength(1);
    expect(under.actor.counts().deadLetterPending).toBe(1);
  });
});

describe('at-most-once dead-lettering', () => {
  it('publishes without waiting, and counts and logs every copy that goes nowhere', async () => {
    const sinks = new RecordingSinks();
    const under = await leaderWithConsumer(AMO, sinks);
    await rejectSome(under, 2);
    await vi.advanceTimersByTimeAsync(0);
    // No exchange: gone, counted, logged once for both.
    expect(under.actor.deadLetterTotals().droppedAtMostOnce).toEqual({ ...ZERO, rejected: 2 });
    expect(under.actor.deadLetterTotals().deadLettered).toEqual({ ...ZERO, rejected: 2 });
    const infos = under.logger.lines.filter((l) => l.msg === 'dead-lettered copies dropped');
    expect(infos).toHaveLength(1);
    expect(infos[0]?.obj).toEqual({ counts: { "no-exchange 'dlx'/rejected": 1 } });
    await vi.advanceTimersByTimeAsync(1_000);
    const summed = under.logger.lines.filter((l) => l.msg === 'dead-lettered copies dropped');
    expect(summed.map((l) => l.obj)).toEqual([
      { counts: { "no-exchange 'dlx'/rejected": 1 } },
      { counts: { "no-exchange 'dlx'/rejected": 1 } },
    ]);

    // Refused by its target: counted too.
    const full = new FakeTarget('full');
    full.script.push({ type: 'rejected', reason: 'maxlen' });
    sinks.exchange('dlx', full);
    await rejectSome(under, 1);
    await vi.advanceTimersByTimeAsync(0);
    expect(under.actor.deadLetterTotals().droppedAtMostOnce).toEqual({ ...ZERO, rejected: 3 });
    expect(under.actor.counts().deadLetterPending).toBe(0);
  });

  it('keeps at most MAX_COPIES_IN_FLIGHT enqueues unanswered; the others go in order as answers come back', async () => {
    const sinks = new RecordingSinks();
    const dlq = new FakeTarget('dlq');
    sinks.exchange('dlx', dlq);
    const n = MAX_COPIES_IN_FLIGHT + 10;
    for (let i = 0; i < n; i++) dlq.script.push(i === MAX_COPIES_IN_FLIGHT ? 'fail' : 'defer');
    const under = await leaderWithConsumer(AMO, sinks);
    await rejectSome(under, n);
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.received).toHaveLength(MAX_COPIES_IN_FLIGHT);
    // Every message left the queue at once: only the copies wait.
    expect(under.actor.deadLetterTotals().deadLettered).toEqual({ ...ZERO, rejected: n });
    dlq.release();
    await vi.advanceTimersByTimeAsync(0);
    // In the order they died; the one whose enqueue failed is counted as lost, the rest kept.
    expect(dlq.received.map((r) => r.message.body.byteLength)).toEqual(
      Array.from({ length: n }, (_, i) => i + 1),
    );
    dlq.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(dlq.kept).toHaveLength(n - 1);
    expect(under.actor.deadLetterTotals().droppedAtMostOnce).toEqual({ ...ZERO, rejected: 1 });
  });

  it('drops a copy that closes a fully automatic cycle, counted', async () => {
    const sinks = new RecordingSinks();
    const self = new FakeTarget('q');
    sinks.exchange('dlx', self);
    const under = makeActor(new InMemoryLog(GROUP), { ...AMO, messageTtl: 5 }, FAST, sinks);
    await under.actor.open();
    await under.actor.enqueue(storedMessage(), undefined);
    await vi.advanceTimersByTimeAsync(5);
    expect(self.received).toEqual([]);
    expect(under.actor.deadLetterTotals().droppedCycle).toEqual({ ...ZERO, expired: 1 });
    expect(under.actor.deadLetterTotals().droppedAtMostOnce).toEqual(ZERO);
  });
});

describe('the dedupe window a target takes (a replicated parameter)', () => {
  const handOff = (messageId: number): HandOffId => ({ source: 'src#1', messageId, horizon: 0 });
  const windowEntries = (log: ScriptedLog) => log.proposed.filter((c) => c.type === 'setDedupeWindow');

  it('while the cluster has not agreed on a wider window, its log gets no entry an older build could not apply', async () => {
    const log = new ScriptedLog('leader');
    const under = makeActor(log, {}, FAST, new RecordingSinks(), undefined, () => 1024);
    await under.actor.open();
    for (let id = 1; id <= 3; id++) await under.actor.enqueue(storedMessage(id), undefined, handOff(id));
    expect(windowEntries(log)).toEqual([]);
    // Without the option (a node that never heard of it) alike.
    const bare = new ScriptedLog('leader');
    const plain = makeActor(bare, {}, FAST);
    await plain.actor.open();
    await plain.actor.enqueue(storedMessage(1), undefined, handOff(1));
    expect(windowEntries(bare)).toEqual([]);
  });

  it('once agreed, records the window in its log right before its first hand-off, once', async () => {
    let agreed = 1024;
    const log = new ScriptedLog('leader');
    const under = makeActor(log, {}, FAST, new RecordingSinks(), undefined, () => agreed);
    await under.actor.open();
    await under.actor.enqueue(storedMessage(1), undefined, handOff(1));
    // A plain publish never asks for it: only hand-offs depend on the window.
    agreed = WIDE_DEDUPE_WINDOW;
    await under.actor.enqueue(storedMessage(2), undefined);
    expect(windowEntries(log)).toEqual([]);
    const before = log.proposed.length;
    await Promise.all([2, 3, 4].map((id) => under.actor.enqueue(storedMessage(id), undefined, handOff(id))));
    await vi.advanceTimersByTimeAsync(0);
    expect(log.proposed[before]).toEqual({ type: 'setDedupeWindow', maxIdsPerSource: WIDE_DEDUPE_WINDOW });
    expect(log.proposed[before + 1]).toMatchObject({ type: 'enqueue', handOff: handOff(2) });
    expect(windowEntries(log)).toHaveLength(1);
    await under.actor.enqueue(storedMessage(5), undefined, handOff(5));
    expect(windowEntries(log)).toHaveLength(1);
  });

  it('a follower proposes nothing; the replica that leads next records the window', async () => {
    const log = new ScriptedLog('follower');
    const under = makeActor(log, {}, FAST, new RecordingSinks(), undefined, () => WIDE_DEDUPE_WINDOW);
    await under.actor.open();
    await expect(under.actor.enqueue(storedMessage(1), undefined, handOff(1))).rejects.toThrow();
    expect(windowEntries(log)).toEqual([]);
    log.setRole('leader');
    await under.actor.enqueue(storedMessage(1), undefined, handOff(1));
    expect(windowEntries(log)).toHaveLength(1);
  });
});
