import { describe, expect, it } from 'vitest';
import * as stages from './stage-histograms.ts';

const { addStageHistograms, parseStageHistograms, stageCount, stageQuantile, subtractStageHistograms } =
  stages;

/** A node's exposition: one unrelated histogram, then two stages of the family. */
function exposition(node: string, proposed: readonly number[], copied: readonly number[]): string {
  const lines = [
    '# TYPE styx_log_sync_duration_seconds histogram',
    `styx_log_sync_duration_seconds_bucket{node="${node}",le="0.01"} 99`,
    '# TYPE styx_dead_letter_stage_seconds histogram',
  ];
  const bounds = ['0.01', '0.1', '+Inf'];
  for (const [i, le] of bounds.entries()) {
    lines.push(
      `styx_dead_letter_stage_seconds_bucket{node="${node}",stage="expiry_proposed",le="${le}"} ${proposed[i]}`,
    );
  }
  lines.push(`styx_dead_letter_stage_seconds_count{node="${node}",stage="expiry_proposed"} ${proposed[2]}`);
  for (const [i, le] of bounds.entries()) {
    lines.push(
      `styx_dead_letter_stage_seconds_bucket{node="${node}",stage="copy_committed",dead_letter_strategy="at_most_once",le="${le}"} ${copied[i]}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

describe('stage histograms', () => {
  it('reads each stage of the family alone, without the node label', () => {
    const stages = parseStageHistograms(exposition('n1', [2, 3, 4], [0, 1, 1]));
    expect(stages).toEqual([
      {
        stage: 'stage="expiry_proposed"',
        bounds: [0.01, 0.1, Number.POSITIVE_INFINITY],
        cumulative: [2, 3, 4],
      },
      {
        stage: 'stage="copy_committed",dead_letter_strategy="at_most_once"',
        bounds: [0.01, 0.1, Number.POSITIVE_INFINITY],
        cumulative: [0, 1, 1],
      },
    ]);
  });

  it('adds nodes up stage by stage, and subtracts an earlier scrape', () => {
    const a = parseStageHistograms(exposition('n1', [2, 3, 4], [0, 1, 1]));
    const b = parseStageHistograms(exposition('n2', [1, 1, 1], [5, 5, 6]));
    const sum = addStageHistograms(a, b);
    expect(sum.map((h) => h.cumulative)).toEqual([
      [3, 4, 5],
      [5, 6, 7],
    ]);
    expect(subtractStageHistograms(sum, b).map((h) => h.cumulative)).toEqual([
      [2, 3, 4],
      [0, 1, 1],
    ]);
    // The inputs are left as they were.
    expect(a[0]?.cumulative).toEqual([2, 3, 4]);
  });

  it('refuses to add histograms whose buckets differ', () => {
    const a = parseStageHistograms(exposition('n1', [1, 1, 1], [1, 1, 1]));
    const other = [{ ...(a[0] as (typeof a)[number]), bounds: [0.02, 0.1, Number.POSITIVE_INFINITY] }];
    expect(() => addStageHistograms(a, other)).toThrow(/buckets differ/);
  });

  it('interpolates quantiles within the bucket, as histogram_quantile does', () => {
    const h = { stage: 's', bounds: [0.01, 0.1, Number.POSITIVE_INFINITY], cumulative: [50, 90, 100] };
    expect(stageCount(h)).toBe(100);
    expect(stageQuantile(h, 0.25)).toBeCloseTo(0.005, 9);
    expect(stageQuantile(h, 0.5)).toBeCloseTo(0.01, 9);
    expect(stageQuantile(h, 0.7)).toBeCloseTo(0.01 + 0.09 * 0.5, 9);
    // In +Inf: the highest finite bound, as Prometheus answers.
    expect(stageQuantile(h, 0.99)).toBe(0.1);
  });

  it('has no quantile for an empty histogram and refuses a q outside (0, 1)', () => {
    const empty = { stage: 's', bounds: [0.01, Number.POSITIVE_INFINITY], cumulative: [0, 0] };
    expect(stageQuantile(empty, 0.5)).toBeUndefined();
    expect(() => stageQuantile(empty, 1)).toThrow(RangeError);
    expect(() => stageQuantile(empty, 0)).toThrow(RangeError);
  });

  it('fails loudly on a bucket line without le', () => {
    expect(() => parseStageHistograms('styx_dead_letter_stage_seconds_bucket{stage="x"} 1\n')).toThrow(
      /without le/,
    );
  });
});
