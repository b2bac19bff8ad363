import { describe, expect, it } from 'vitest';
import { MAX_FAILURE_ROWS, MAX_TARGET_ROWS } from '../metadata/redrive-ledger.ts';
import { OTHER, RedriveTally, SAMPLE_SIZE } from './redrive-tally.ts';

describe('RedriveTally', () => {
  it('counts per destination and per reason, and goes on from a committed progress', () => {
    const tally = new RedriveTally();
    tally.addTarget('', 'q1');
    tally.addTarget('', 'q1');
    tally.addTarget('retry', 'k');
    tally.moved = 3;
    tally.addFailure('no route');
    tally.cursor = 7;
    const progress = tally.progress([5, 6, 7]);
    expect(progress).toMatchObject({
      moved: 3,
      failed: 1,
      cursor: 7,
      inflight: [5, 6, 7],
      targets: [
        { exchange: '', routingKey: 'q1', count: 2 },
        { exchange: 'retry', routingKey: 'k', count: 1 },
      ],
      failures: [{ reason: 'no route', count: 1 }],
    });
    const resumed = RedriveTally.from(progress);
    resumed.addTarget('', 'q1');
    expect(resumed.progress([]).targets[0]).toEqual({ exchange: '', routingKey: 'q1', count: 3 });
    expect(resumed.routed).toBe(4);
  });

  it('keeps its lists within the ledger bounds, counting the rest under one row', () => {
    const tally = new RedriveTally();
    for (let i = 0; i < MAX_TARGET_ROWS + 20; i++) tally.addTarget('', `q${i}`);
    for (let i = 0; i < MAX_FAILURE_ROWS + 20; i++) tally.addFailure(`reason ${i}`);
    for (let i = 0; i < SAMPLE_SIZE + 5; i++)
      tally.addSample({ id: i, exchange: '', routingKey: 'q', queues: ['q'], failure: null });
    const progress = tally.progress([]);
    expect(progress.targets).toHaveLength(MAX_TARGET_ROWS);
    expect(progress.targets.at(-1)).toEqual({ exchange: OTHER, routingKey: OTHER, count: 21 });
    expect(progress.failures).toHaveLength(MAX_FAILURE_ROWS);
    expect(progress.failures.at(-1)).toEqual({ reason: OTHER, count: 21 });
    expect(progress.failed).toBe(MAX_FAILURE_ROWS + 20);
    expect(progress.sample).toHaveLength(SAMPLE_SIZE);
    expect(tally.routed).toBe(MAX_TARGET_ROWS + 20);
  });
});
