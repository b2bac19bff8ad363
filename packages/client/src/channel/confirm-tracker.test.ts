import { describe, expect, it } from 'vitest';
import { ConfirmTracker } from './confirm-tracker.ts';

function track(n: number): { tracker: ConfirmTracker; results: (string | null)[] } {
  const tracker = new ConfirmTracker();
  const results: (string | null)[] = Array(n + 1).fill('pending');
  for (let i = 1; i <= n; i++) {
    const seq = tracker.register((err) => {
      results[i] = err === null ? null : err.message;
    });
    expect(seq).toBe(i);
  }
  return { tracker, results };
}

describe('ConfirmTracker', () => {
  it('numbers publishes from 1 and settles single acks and nacks in any order', () => {
    const { tracker, results } = track(4);
    tracker.ack(3, false);
    tracker.nack(1, false, new Error('message nacked'));
    expect(results.slice(1)).toEqual(['message nacked', 'pending', null, 'pending']);
    expect(tracker.outstanding).toBe(2);
  });

  it('settles every outstanding number up to the tag for multiple', () => {
    const { tracker, results } = track(6);
    tracker.ack(2, false);
    tracker.ack(4, true);
    expect(results.slice(1)).toEqual([null, null, null, null, 'pending', 'pending']);
    tracker.nack(6, true, new Error('message nacked'));
    expect(results.slice(1)).toEqual([null, null, null, null, 'message nacked', 'message nacked']);
    expect(tracker.outstanding).toBe(0);
    expect(tracker.nextSequence).toBe(7);
  });

  it('ignores confirms for numbers that are not outstanding', () => {
    const { tracker, results } = track(2);
    tracker.ack(1, false);
    tracker.ack(1, false);
    tracker.nack(1, false, new Error('late'));
    tracker.ack(99, false);
    expect(results.slice(1)).toEqual([null, 'pending']);
  });

  it('waitForAll resolves when everything registered so far is acked, ignoring later publishes', async () => {
    const { tracker } = track(3);
    let done = false;
    const waiting = tracker.waitForAll().then(() => {
      done = true;
    });
    tracker.register();
    tracker.ack(2, true);
    await Promise.resolve();
    expect(done).toBe(false);
    tracker.ack(3, false);
    await waiting;
    expect(done).toBe(true);
    expect(tracker.outstanding).toBe(1);
  });

  it('waitForAll rejects at the first nack in its range', async () => {
    const { tracker } = track(3);
    const waiting = tracker.waitForAll();
    tracker.nack(2, false, new Error('message nacked'));
    await expect(waiting).rejects.toThrow('message nacked');
  });

  it('waitForAll resolves at once when nothing is outstanding', async () => {
    await expect(new ConfirmTracker().waitForAll()).resolves.toBeUndefined();
  });

  it('failAll fails every outstanding publish and waiter', async () => {
    const { tracker, results } = track(2);
    tracker.ack(1, false);
    const waiting = tracker.waitForAll();
    tracker.failAll(new Error('channel closed'));
    expect(results.slice(1)).toEqual([null, 'channel closed']);
    await expect(waiting).rejects.toThrow('channel closed');
  });
});

describe('ConfirmTracker after failAll', () => {
  it('rejects a later waitForAll when publishes were failed, so none is ever taken as confirmed', async () => {
    const { tracker, results } = track(3);
    tracker.ack(1, false);
    const lost = new Error('channel closed');
    tracker.failAll(lost);
    expect(results.slice(1)).toEqual([null, 'channel closed', 'channel closed']);
    expect(tracker.outstanding).toBe(0);
    await expect(tracker.waitForAll()).rejects.toBe(lost);
  });

  it('still resolves a later waitForAll when nothing was outstanding at the close', async () => {
    const { tracker } = track(2);
    tracker.ack(2, true);
    tracker.failAll(new Error('channel closed'));
    await expect(tracker.waitForAll()).resolves.toBeUndefined();
  });
});
