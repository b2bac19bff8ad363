import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AggregatedLog } from './aggregated-log.ts';
import { RecordingLogger } from './queue-actor-test-support.ts';
import { T0 } from './queue-test-harness.ts';

const clock = { now: () => Date.now() };

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('AggregatedLog', () => {
  it('logs the first event at once, then sums events into one line per interval', async () => {
    const logger = new RecordingLogger();
    const log = new AggregatedLog(logger, 'info', 'dropped', clock, 1000);
    log.add('a');
    expect(logger.lines).toEqual([{ level: 'info', obj: { counts: { a: 1 } }, msg: 'dropped' }]);
    for (let i = 0; i < 500; i++) log.add(i % 2 === 0 ? 'a' : 'b');
    await vi.advanceTimersByTimeAsync(999);
    expect(logger.lines).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(logger.lines[1]).toEqual({ level: 'info', obj: { counts: { a: 250, b: 250 } }, msg: 'dropped' });
    // Quiet for an interval: the next event is logged at once again.
    await vi.advanceTimersByTimeAsync(5000);
    log.add('c', 3);
    expect(logger.lines[2]?.obj).toEqual({ counts: { c: 3 } });
  });

  it('logs what is left on close', () => {
    const logger = new RecordingLogger();
    const log = new AggregatedLog(logger, 'warn', 'waiting', clock, 1000);
    log.add('x');
    log.add('x');
    log.close();
    expect(logger.lines.map((l) => [l.level, l.obj])).toEqual([
      ['warn', { counts: { x: 1 } }],
      ['warn', { counts: { x: 1 } }],
    ]);
  });
});
