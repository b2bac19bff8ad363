import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Heartbeater } from './heartbeat.ts';

describe('Heartbeater', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function run(sentPattern: () => boolean, receivedPattern: () => boolean) {
    const log: string[] = [];
    const hb = new Heartbeater(10_000, {
      takeSent: sentPattern,
      takeReceived: receivedPattern,
      beat: () => log.push(`beat@${Date.now() % 1_000_000}`),
      timeout: () => log.push(`timeout@${Date.now() % 1_000_000}`),
    });
    return { hb, log };
  }

  it('beats every half interval when nothing else was sent', () => {
    vi.setSystemTime(0);
    const { hb, log } = run(
      () => false,
      () => true,
    );
    vi.advanceTimersByTime(20_000);
    expect(log).toEqual(['beat@5000', 'beat@10000', 'beat@15000', 'beat@20000']);
    hb.stop();
  });

  it('does not beat while other frames are being sent', () => {
    const { hb, log } = run(
      () => true,
      () => true,
    );
    vi.advanceTimersByTime(60_000);
    expect(log).toEqual([]);
    hb.stop();
  });

  it('times out after two silent intervals in a row, not after one', () => {
    vi.setSystemTime(0);
    let received = [false, true, false, false];
    const { hb, log } = run(
      () => true,
      () => received.shift() ?? false,
    );
    vi.advanceTimersByTime(30_000);
    expect(log).toEqual([]);
    received = [];
    vi.advanceTimersByTime(10_000);
    expect(log).toEqual(['timeout@40000']);
    hb.stop();
  });

  it('stops', () => {
    const { hb, log } = run(
      () => false,
      () => false,
    );
    hb.stop();
    vi.advanceTimersByTime(100_000);
    expect(log).toEqual([]);
  });
});
