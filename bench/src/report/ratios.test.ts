import { describe, expect, it } from 'vitest';
import type { Metric } from '../scenarios/scenario.ts';
import { computeRatios, ratioOf, verdictOf } from './ratios.ts';
import { caseResult } from './test-support/case-result.ts';

const result = caseResult;

const rate = (value: number): Metric => ({
  key: 'throughput',
  label: 'rate',
  unit: 'msg/s',
  value,
  better: 'higher',
});
const p99 = (value: number): Metric => ({
  key: 'lateness.p99',
  label: 'p99',
  unit: 'ms',
  value,
  better: 'lower',
});

describe('ratioOf', () => {
  it('divides Styx by RabbitMQ', () => {
    expect(ratioOf(30, 15)).toBe(2);
    expect(ratioOf(5, 20)).toBe(0.25);
  });
  it('is 1 for two zeros and null when only RabbitMQ is zero or a value is negative', () => {
    expect(ratioOf(0, 0)).toBe(1);
    expect(ratioOf(3, 0)).toBeNull();
    expect(ratioOf(-1, 4)).toBeNull();
  });
});

describe('verdictOf', () => {
  it('reads the ratio in the direction that is better', () => {
    expect(verdictOf(2, 'higher')).toBe('better');
    expect(verdictOf(0.5, 'higher')).toBe('worse');
    expect(verdictOf(0.5, 'lower')).toBe('better');
    expect(verdictOf(2, 'lower')).toBe('worse');
  });
  it('calls ratios within 1 % the same, and has no verdict without a ratio', () => {
    expect(verdictOf(1.005, 'higher')).toBe('same');
    expect(verdictOf(0.995, 'lower')).toBe('same');
    expect(verdictOf(null, 'lower')).toBe('n/a');
  });
});

describe('computeRatios', () => {
  it('pairs metrics by case and key', () => {
    const ratios = computeRatios([
      result('styx', 'c.burst', [rate(20_000), p99(50)]),
      result('rabbitmq', 'c.burst', [rate(10_000), p99(500)]),
    ]);
    expect(ratios).toEqual([
      expect.objectContaining({
        caseId: 'c.burst',
        metric: 'throughput',
        styx: 20_000,
        rabbitmq: 10_000,
        ratio: 2,
        verdict: 'better',
      }),
      expect.objectContaining({ metric: 'lateness.p99', ratio: 0.1, verdict: 'better' }),
    ]);
  });

  it('leaves out cases one broker did not run to the end, and metrics only one side has', () => {
    const ratios = computeRatios([
      result('styx', 'a', [rate(1)]),
      result('rabbitmq', 'a', [rate(2)], 'error'),
      result('styx', 'b', [rate(1), p99(3)]),
      result('rabbitmq', 'b', [rate(4)]),
      result('styx', 'c', [rate(1)], 'unsupported'),
      result('rabbitmq', 'c', [rate(4)]),
    ]);
    expect(ratios.map((r) => `${r.caseId}/${r.metric}`)).toEqual(['b/throughput']);
    expect(ratios[0]?.ratio).toBe(0.25);
    expect(ratios[0]?.verdict).toBe('worse');
  });
});
