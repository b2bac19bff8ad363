import { describe, expect, it } from 'vitest';
import { RaftInvariantError } from './errors.ts';
import { Inflights } from './inflights.ts';
import { Progress, ProgressState } from './progress.ts';
import { EMPTY_CONF_STATE } from './types.ts';

describe('Inflights', () => {
  it('is full at the message bound, frees by index, and grows lazily through wrap-around', () => {
    const inflights = new Inflights(4, 0);
    for (let round = 0; round < 5; round++) {
      for (let i = 1; i <= 4; i++) inflights.add(round * 10 + i, 1);
      expect(inflights.full()).toBe(true);
      expect(() => inflights.add(round * 10 + 5, 1)).toThrow(RaftInvariantError);
      inflights.freeLE(round * 10 + 2);
      expect(inflights.count).toBe(2);
      expect(inflights.full()).toBe(false);
      inflights.freeLE(round * 10 + 9);
      expect(inflights.count).toBe(0);
    }
  });

  it('is full at the byte bound and counts the bytes it frees', () => {
    const inflights = new Inflights(100, 10);
    inflights.add(1, 6);
    expect(inflights.full()).toBe(false);
    inflights.add(2, 6);
    expect(inflights.full()).toBe(true);
    expect(inflights.bytes).toBe(12);
    inflights.freeLE(1);
    expect(inflights.bytes).toBe(6);
    expect(inflights.full()).toBe(false);
  });

  it('requires increasing indexes', () => {
    const inflights = new Inflights(4, 0);
    inflights.add(5, 0);
    expect(() => inflights.add(5, 0)).toThrow(RaftInvariantError);
  });
});

describe('Progress', () => {
  it('never lowers match on a stale acknowledgement', () => {
    const pr = new Progress(10, 8, 0, false);
    expect(pr.maybeUpdate(7)).toBe(true);
    expect(pr.maybeUpdate(5)).toBe(false);
    expect(pr.match).toBe(7);
    expect(pr.next).toBe(10);
  });

  it('probes one append at a time, pipelines in replicate state until the window is full', () => {
    const pr = new Progress(1, 2, 0, false);
    expect(pr.state).toBe(ProgressState.Probe);
    pr.sentEntries(1, 10, 1);
    expect(pr.isPaused()).toBe(true);
    pr.maybeUpdate(1);
    pr.becomeReplicate();
    expect(pr.next).toBe(2);
    pr.sentEntries(1, 10, 2);
    expect(pr.isPaused()).toBe(false);
    pr.sentEntries(1, 10, 3);
    expect(pr.next).toBe(4);
    expect(pr.isPaused()).toBe(true);
    pr.inflights.freeLE(3);
    pr.maybeUpdate(3);
    expect(pr.isPaused()).toBe(false);
  });

  it('backs off on a rejection, ignoring stale ones', () => {
    const pr = new Progress(10, 8, 0, false);
    pr.match = 3;
    expect(pr.maybeDecrTo(5, 4)).toBe(false); // not about next - 1 = 9: stale
    expect(pr.maybeDecrTo(9, 6)).toBe(true);
    expect(pr.next).toBe(7);
    pr.becomeReplicate();
    pr.sentEntries(2, 0, 8);
    expect(pr.maybeDecrTo(2, 2)).toBe(false); // below match: stale
    expect(pr.maybeDecrTo(7, 5)).toBe(true);
    expect(pr.next).toBe(4);
  });

  it('pauses appends while a snapshot is in flight, and probes after it', () => {
    const pr = new Progress(3, 8, 0, false);
    pr.becomeSnapshot({ meta: { index: 20, term: 2, confState: EMPTY_CONF_STATE }, data: new Uint8Array() });
    expect(pr.isPaused()).toBe(true);
    pr.becomeProbe();
    expect(pr.next).toBe(21);
    expect(pr.snapshot).toBeUndefined();
  });
});
