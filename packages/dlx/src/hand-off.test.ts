import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF } from './backoff.ts';
import type { HandOffSchedulerOptions } from './hand-off.ts';
import { HandOffScheduler } from './hand-off.ts';

const OPTIONS: HandOffSchedulerOptions = { backoff: DEFAULT_BACKOFF, confirmTimeoutMs: 1_000 };
const NO_ROUTE = { queues: [], cycleDropped: [] };

function tracked(id = 1, now = 0): HandOffScheduler {
  const s = new HandOffScheduler(OPTIONS);
  s.track(id, now);
  return s;
}

describe('HandOffScheduler', () => {
  it('a new hand-off is due at once; settles only when every target confirmed', () => {
    const s = tracked(7, 1_000);
    expect(s.due(999)).toEqual([]);
    expect(s.due(1_000)).toEqual([7]);
    expect(s.start(7, 1_000, { queues: ['q2', 'q3'], cycleDropped: [] })).toEqual({
      type: 'send',
      attempt: 1,
      queues: ['q2', 'q3'],
      timeoutAt: 2_000,
    });
    expect(s.due(1_500)).toEqual([]);
    expect(s.confirm(7, 'q3')).toBe('waiting');
    expect(s.confirm(7, 'q2')).toBe('settled');
    expect(s.get(7)).toMatchObject({ phase: 'settling', targetsConfirmed: ['q3', 'q2'] });
    // Settling: never due, confirms ignored, until forgotten when the settle is applied.
    expect(s.due(10_000)).toEqual([]);
    expect(s.nextDeadline()).toBeUndefined();
    expect(s.confirm(7, 'q2')).toBe('ignored');
    expect(s.forget(7)).toBe(true);
    expect(s.confirm(7, 'q2')).toBe('ignored');
  });

  it('unroutable (missing DLX or no binding): kept, retried with back-off 100, 200, 400 ... capped at 5 s', () => {
    const s = tracked(1, 0);
    let now = 0;
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      const plan = s.start(1, now, NO_ROUTE);
      if (plan.type !== 'unroutable') throw new Error(plan.type);
      waits.push(plan.retryAt - now);
      expect(s.nextDeadline()).toBe(plan.retryAt);
      expect(s.due(plan.retryAt - 1)).toEqual([]);
      now = plan.retryAt;
      expect(s.due(now)).toEqual([1]);
    }
    expect(waits).toEqual([100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
    expect(s.get(1)?.attempt).toBe(9);
  });

  it('a new exchange or binding wakes waiting hand-offs at once, not in-flight ones', () => {
    const s = new HandOffScheduler(OPTIONS);
    s.track(1, 0);
    s.track(2, 0);
    s.start(1, 0, NO_ROUTE); // waiting until 100
    s.start(2, 0, { queues: ['t'], cycleDropped: [] }); // in flight until 1000
    expect(s.wake(50)).toBe(1);
    expect(s.due(50)).toEqual([1]);
    expect(s.get(2)?.phase).toBe('in-flight');
    // The attempt count is kept: the next failure backs off further.
    const plan = s.start(1, 50, NO_ROUTE);
    expect(plan).toEqual({ type: 'unroutable', attempt: 2, retryAt: 250 });
  });

  it('a nack schedules a retry; the retry resends only to targets that have not confirmed', () => {
    const s = tracked();
    s.start(1, 0, { queues: ['a', 'b'], cycleDropped: [] });
    expect(s.confirm(1, 'a')).toBe('waiting');
    expect(s.fail(1, 10)).toBe(110);
    expect(s.get(1)?.phase).toBe('waiting');
    expect(s.start(1, 110, { queues: ['a', 'b'], cycleDropped: [] })).toMatchObject({
      type: 'send',
      queues: ['b'],
    });
    expect(s.confirm(1, 'b')).toBe('settled');
  });

  it('an attempt whose confirms do not all arrive in time is due again', () => {
    const s = tracked();
    s.start(1, 0, { queues: ['a'], cycleDropped: [] });
    expect(s.due(999)).toEqual([]);
    expect(s.due(1_000)).toEqual([1]);
    expect(s.start(1, 1_000, { queues: ['a'], cycleDropped: [] })).toMatchObject({
      type: 'send',
      attempt: 2,
      queues: ['a'],
    });
  });

  it('a late confirm from an earlier attempt counts', () => {
    const s = tracked();
    s.start(1, 0, { queues: ['a', 'b'], cycleDropped: [] });
    s.fail(1, 0); // b nacked
    expect(s.confirm(1, 'a')).toBe('waiting'); // a's confirm arrives while waiting
    expect(s.start(1, 100, { queues: ['a', 'b'], cycleDropped: [] })).toMatchObject({ queues: ['b'] });
    expect(s.confirm(1, 'b')).toBe('settled');
  });

  it('routing is redone per attempt: a binding added meanwhile gets the copy too', () => {
    const s = tracked();
    s.start(1, 0, { queues: ['a'], cycleDropped: [] });
    s.fail(1, 0);
    expect(s.start(1, 100, { queues: ['a', 'new'], cycleDropped: [] })).toMatchObject({
      queues: ['a', 'new'],
    });
    expect(s.confirm(1, 'a')).toBe('waiting');
    expect(s.confirm(1, 'new')).toBe('settled');
  });

  it('a cycle drop settles that target: all dropped → settled without a send; some → send to the rest', () => {
    const all = tracked();
    expect(all.start(1, 0, { queues: [], cycleDropped: ['a'] })).toEqual({ type: 'settled', attempt: 1 });
    const some = tracked();
    expect(some.start(1, 0, { queues: ['b'], cycleDropped: ['a'] })).toMatchObject({
      type: 'send',
      queues: ['b'],
    });
    expect(some.confirm(1, 'b')).toBe('settled');
  });

  it('a failed settle proposal goes back to waiting and settles again without resending', () => {
    const s = tracked();
    s.start(1, 0, { queues: ['a'], cycleDropped: [] });
    s.confirm(1, 'a');
    expect(s.fail(1, 5)).toBeUndefined(); // a stale nack changes nothing while settling
    s.settleFailed(1, 5);
    expect(s.due(5)).toEqual([1]);
    expect(s.start(1, 5, { queues: ['a'], cycleDropped: [] })).toEqual({ type: 'settled', attempt: 2 });
  });

  it('nextDeadline is the earliest due time across hand-offs', () => {
    const s = new HandOffScheduler(OPTIONS);
    s.track(1, 0);
    s.track(2, 0);
    s.start(1, 0, NO_ROUTE); // 100
    s.start(2, 0, { queues: ['t'], cycleDropped: [] }); // 1000
    expect(s.nextDeadline()).toBe(100);
    s.forget(1);
    expect(s.nextDeadline()).toBe(1_000);
  });

  it('rejects misuse with a HandOffStateError', () => {
    const s = tracked();
    expect(() => s.track(1, 0)).toThrow(expect.objectContaining({ code: 'DLX_HAND_OFF_STATE', id: 1 }));
    expect(() => s.start(2, 0, NO_ROUTE)).toThrow(expect.objectContaining({ code: 'DLX_HAND_OFF_STATE' }));
    s.start(1, 0, { queues: [], cycleDropped: ['x'] });
    expect(() => s.start(1, 0, NO_ROUTE)).toThrow(expect.objectContaining({ code: 'DLX_HAND_OFF_STATE' }));
    expect(() => s.track(-1, 0)).toThrow(expect.objectContaining({ code: 'DLX_INVALID_INPUT' }));
    expect(() => new HandOffScheduler({ ...OPTIONS, confirmTimeoutMs: 0 })).toThrow(
      expect.objectContaining({ code: 'DLX_INVALID_CONFIG' }),
    );
  });

  it('snapshots to plain data that survives JSON and restores the same behaviour', () => {
    const s = new HandOffScheduler(OPTIONS);
    s.track(1, 0);
    s.track(2, 0);
    s.track(3, 0);
    s.start(1, 0, { queues: ['a', 'b'], cycleDropped: [] });
    s.confirm(1, 'a');
    s.start(2, 0, NO_ROUTE);
    s.start(3, 0, { queues: ['c'], cycleDropped: [] });
    s.confirm(3, 'c');
    const restored = HandOffScheduler.fromSnapshot(JSON.parse(JSON.stringify(s.toSnapshot())), OPTIONS);
    expect(restored.toSnapshot()).toEqual(s.toSnapshot());
    expect(restored.confirm(1, 'b')).toBe('settled');
    expect(restored.due(100)).toEqual([2]);
    expect(restored.get(3)?.phase).toBe('settling');
    expect(() => HandOffScheduler.fromSnapshot({ version: 2 } as never)).toThrow(
      expect.objectContaining({ code: 'DLX_SNAPSHOT_INVALID' }),
    );
  });
  it('due and nextDeadline agree with a scan of every hand-off under random operations', () => {
    let seed = 12345;
    const random = (): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 4294967296;
    };
    const s = new HandOffScheduler(OPTIONS);
    const ids = new Set<number>();
    let nextId = 1;
    let now = 0;
    for (let step = 0; step < 8_000; step++) {
      now += Math.floor(random() * 50);
      const all = [...ids];
      const id = all[Math.floor(random() * all.length)];
      const r = random();
      if (r < 0.25 || id === undefined) {
        s.track(nextId, now);
        ids.add(nextId++);
      } else if (r < 0.45) {
        const state = s.get(id);
        if (state?.phase !== 'settling')
          s.start(id, now, random() < 0.2 ? NO_ROUTE : { queues: ['a', 'b'], cycleDropped: [] });
      } else if (r < 0.6) {
        s.confirm(id, random() < 0.5 ? 'a' : 'b');
      } else if (r < 0.7) {
        s.fail(id, now);
      } else if (r < 0.8) {
        s.forget(id);
        ids.delete(id);
      } else if (r < 0.82) {
        s.wake(now);
      } else if (r < 0.85) {
        s.settleFailed(id, now);
      }
      // The reference: a scan of every tracked hand-off.
      const states = [...ids].map((i) => s.get(i)).filter((x) => x !== undefined && x.phase !== 'settling');
      const expectedDue = states
        .filter((x) => (x?.nextAttemptAt ?? Infinity) <= now)
        .sort((x, y) => (x?.nextAttemptAt ?? 0) - (y?.nextAttemptAt ?? 0) || (x?.id ?? 0) - (y?.id ?? 0))
        .map((x) => x?.id);
      const deadline = Math.min(...states.map((x) => x?.nextAttemptAt ?? Infinity));
      expect(s.nextDeadline()).toBe(deadline === Infinity ? undefined : deadline);
      if (step % 7 === 0) {
        // Due until acted on: asking twice gives the same answer, and a limit takes the earliest.
        expect(s.due(now, 3)).toEqual(expectedDue.slice(0, 3));
        expect(s.due(now)).toEqual(expectedDue);
        expect(s.due(now)).toEqual(expectedDue);
      }
    }
  });
});
