import { describe, expect, it } from 'vitest';
import type { DetectorEvent } from './failure-detector.ts';
import { FailureDetector } from './failure-detector.ts';

/** A detector on a hand-driven clock that ticks every second, and the events it emitted. */
function detector(stallThresholdMs = 3_000) {
  const events: DetectorEvent[] = [];
  const d = new FailureDetector({ stallThresholdMs, onEvent: (e) => events.push(e) });
  let now = 1_000;
  d.tick(now);
  const advance = (ms: number): number => {
    // Ticks every second, as the cluster's timer does.
    for (let left = ms; left > 0; left -= 1_000) {
      now += Math.min(1_000, left);
      d.tick(now);
    }
    return now;
  };
  const miss = (peer: string): void => {
    const token = d.pingStarted(peer, now);
    advance(1_000);
    d.pingMissed(peer, token, now);
  };
  /** The clock jumps with no tick in between: this process was paused. */
  const jump = (ms: number): number => {
    now += ms;
    return now;
  };
  return { d, events, advance, miss, now: () => now, jump };
}

describe('FailureDetector', () => {
  it('suspects a member after two missed pings in a row, not after one', () => {
    const { d, events, miss } = detector();
    d.pingAnswered('b', 'inc-1', 1_000);
    miss('b');
    expect(d.isSuspected('b')).toBe(false);
    expect(events).toEqual([]);
    miss('b');
    expect(d.isSuspected('b')).toBe(true);
    expect(events).toEqual([{ type: 'suspected', peer: 'b', reason: 'missed-pings' }]);
  });

  it('an answer in between resets the count', () => {
    const { d, miss, now } = detector();
    miss('b');
    d.pingAnswered('b', 'inc-1', now());
    miss('b');
    expect(d.isSuspected('b')).toBe(false);
  });

  it('forgives missed pings of a member whose Raft traffic keeps arriving, and suspects it once that stops', () => {
    const { d, events, miss, now } = detector();
    d.pingAnswered('b', 'inc-1', now());
    // Its pings time out behind its own traffic, which arrives between them.
    for (let i = 0; i < 10; i++) {
      miss('b');
      d.heardFrom('b', now());
    }
    expect(d.isSuspected('b')).toBe(false);
    expect(events).toEqual([]);
    // It goes quiet (paused, cut off, gone): two missed pings suspect it as before.
    miss('b');
    miss('b');
    expect(d.isSuspected('b')).toBe(true);
    expect(events).toEqual([{ type: 'suspected', peer: 'b', reason: 'missed-pings' }]);
  });

  it('does not recover a suspected member by its traffic: only a ping answer does', () => {
    const { d, events, miss, now } = detector();
    miss('b');
    miss('b');
    d.heardFrom('b', now());
    expect(d.isSuspected('b')).toBe(true);
    d.heardFrom('c', now()); // never pinged: nothing to forgive, no state made up
    expect(d.isSuspected('c')).toBe(false);
    d.pingAnswered('b', 'inc-1', now());
    expect(d.isSuspected('b')).toBe(false);
    expect(events.map((e) => e.type)).toEqual(['suspected', 'recovered']);
  });

  it('suspects a member whose connection closed at once, once', () => {
    const { d, events, now } = detector();
    d.disconnected('b', now());
    d.disconnected('b', now());
    expect(d.isSuspected('b')).toBe(true);
    expect(events).toEqual([{ type: 'suspected', peer: 'b', reason: 'disconnected' }]);
  });

  it('recovers a suspected member that answers, with the time it was unreachable', () => {
    const { d, events, advance } = detector();
    d.disconnected('b', 1_000);
    advance(4_000);
    d.pingAnswered('b', 'inc-1', 5_000);
    expect(d.isSuspected('b')).toBe(false);
    expect(d.unreachableFor('b', 5_000)).toBe(0);
    expect(events.at(-1)).toEqual({ type: 'recovered', peer: 'b', unreachableMs: 4_000 });
  });

  it('counts the time unreachable on the clock given, for callers to time out', () => {
    const { d, advance, now } = detector();
    d.disconnected('b', now());
    expect(d.unreachableFor('b', now())).toBe(0);
    advance(59_000);
    expect(d.unreachableFor('b', now())).toBe(59_000);
    advance(2_000);
    expect(d.unreachableFor('b', now())).toBe(61_000);
    expect(d.unreachableFor('c', now())).toBe(0);
  });

  it('reports a new incarnation as a restart, and the first one known as nothing', () => {
    const { d, events, now } = detector();
    d.pingAnswered('b', 'inc-1', now());
    d.pingAnswered('b', 'inc-1', now());
    expect(events).toEqual([]);
    d.disconnected('b', now());
    d.pingAnswered('b', 'inc-2', now());
    expect(events.map((e) => e.type)).toEqual(['suspected', 'restarted', 'recovered']);
    expect(events[1]).toEqual({ type: 'restarted', peer: 'b', incarnation: 'inc-2', previous: 'inc-1' });
    expect(d.incarnationOf('b')).toBe('inc-2');
  });

  it('a node that sends no incarnation keeps the one known (never a restart)', () => {
    const { d, events, now } = detector();
    d.pingAnswered('b', 'inc-1', now());
    d.pingAnswered('b', undefined, now());
    expect(d.incarnationOf('b')).toBe('inc-1');
    expect(events).toEqual([]);
  });

  it('an announced incarnation is a restart but does not recover a suspected member', () => {
    const { d, events, now } = detector();
    d.pingAnswered('b', 'inc-1', now());
    d.disconnected('b', now());
    d.announced('b', 'inc-2', now());
    expect(events.map((e) => e.type)).toEqual(['suspected', 'restarted']);
    expect(d.isSuspected('b')).toBe(true);
  });

  describe('a local stall (this process paused)', () => {
    it('voids the pings sent before it: members that were up stay up', () => {
      const { d, events, jump } = detector();
      d.pingAnswered('b', 'inc-1', 1_000);
      const first = d.pingStarted('b', 1_000);
      // SIGSTOP for 20 s: on resume the ping's timeout fires before the next tick.
      const resumed = jump(20_000);
      d.pingMissed('b', first, resumed);
      const second = d.pingStarted('b', resumed);
      expect(second).not.toBe(first);
      d.pingMissed('b', first, resumed);
      expect(d.isSuspected('b')).toBe(false);
      expect(events).toEqual([{ type: 'stalled', pausedMs: 20_000 }]);
    });

    it('restarts the missed count: a member needs two misses after the stall', () => {
      const { d, jump, miss } = detector();
      miss('b');
      jump(10_000);
      d.tick(12_000);
      miss('b');
      expect(d.isSuspected('b')).toBe(false);
      miss('b');
      expect(d.isSuspected('b')).toBe(true);
    });

    it('does not count toward a suspected member’s time unreachable', () => {
      const { d, advance, jump, now } = detector();
      d.disconnected('b', now());
      advance(4_000);
      // Paused for 100 s: b is not 104 s unreachable, as far as this node can tell.
      jump(100_000);
      expect(d.unreachableFor('b', now())).toBe(4_000);
      advance(2_000);
      expect(d.unreachableFor('b', now())).toBe(6_000);
    });

    it('is noticed by any input, once, and then ticks go on normally', () => {
      const { d, events, advance, jump } = detector();
      jump(5_000);
      advance(3_000);
      expect(events).toEqual([{ type: 'stalled', pausedMs: 6_000 }]);
      expect(d.unreachableFor('b', 9_000)).toBe(0);
    });

    it('a gap within the threshold is not a stall', () => {
      const { d, events, jump, now } = detector(3_000);
      jump(2_900);
      d.tick(now());
      expect(events).toEqual([]);
    });
  });

  it('forgets a removed member', () => {
    const { d, now } = detector();
    d.pingAnswered('b', 'inc-1', now());
    d.disconnected('b', now());
    d.remove('b');
    expect(d.isSuspected('b')).toBe(false);
    expect(d.incarnationOf('b')).toBeUndefined();
  });
});
