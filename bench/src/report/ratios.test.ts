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
        target: 'styx',
        metric: 'throughput',
        styx: 20_000,
        rabbitmq: 10_000,
        ratio: 2,
        verdict: 'better',
      }),
      expect.objectContaining({ metric: 'lateness.p99', ratio: 0.1, verdict: 'better' }),
    ]);
  });

  it('gives each Styx column its ratios over RabbitMQ, per case the SDK before the AMQP column', () => {
    const ratios = computeRatios([
      result('styx', 'a', [rate(30)]),
      result('styx', 'b', [rate(10)]),
      result('styx-amqp', 'a', [rate(15)]),
      result('styx-amqp', 'b', [rate(5)], 'error'),
      result('rabbitmq', 'a', [rate(20)]),
      result('rabbitmq', 'b', [rate(10)]),
    ]);
    expect(ratios.map((r) => [r.caseId, r.target, r.styx, r.rabbitmq, r.ratio, r.verdict])).toEqual([
      ['a', 'styx', 30, 20, 1.5, 'better'],
      ['a', 'styx-amqp', 15, 20, 0.75, 'worse'],
      ['b', 'styx', 10, 10, 1, 'same'],
    ]);
  });

  it('has no ratio without RabbitMQ: the two Styx columns are not compared here', () => {
    expect(computeRatios([result('styx', 'a', [rate(30)]), result('styx-amqp', 'a', [rate(15)])])).toEqual(
      [],
    );
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
