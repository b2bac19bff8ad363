import { LatencyHistogram } from '@styx/raft';
import { describe, expect, it } from 'vitest';
import {
  ExpositionWriter,
  escapeLabelValue,
  formatValue,
  labelPairs,
  withLabels,
} from './exposition-writer.ts';

describe('ExpositionWriter', () => {
  it('writes HELP and TYPE before a family and its samples after, one line each', () => {
    const w = new ExpositionWriter();
    w.family('rabbitmq_queue_messages_ready', 'gauge', 'Messages ready');
    w.sample(
      labelPairs([
        ['vhost', '/'],
        ['queue', 'a'],
      ]),
      3,
    );
    w.sample(
      labelPairs([
        ['vhost', '/'],
        ['queue', 'b'],
      ]),
      0,
    );
    w.family('rabbitmq_connections', 'gauge', 'Connections');
    w.sample('', 2);
    expect(w.text()).toBe(
      [
        '# HELP rabbitmq_queue_messages_ready Messages ready',
        '# TYPE rabbitmq_queue_messages_ready gauge',
        'rabbitmq_queue_messages_ready{vhost="/",queue="a"} 3',
        'rabbitmq_queue_messages_ready{vhost="/",queue="b"} 0',
        '# HELP rabbitmq_connections Connections',
        '# TYPE rabbitmq_connections gauge',
        'rabbitmq_connections 2',
        '',
      ].join('\n'),
    );
  });

  it('escapes backslash, double quote and newline in label values, and backslash and newline in HELP', () => {
    expect(escapeLabelValue('plain name')).toBe('plain name');
    expect(escapeLabelValue('a"b\\c\nd')).toBe('a\\"b\\\\c\\nd');
    const w = new ExpositionWriter();
    w.family('x_total', 'counter', 'a \\ path\nnext "quoted"');
    w.sample(labelPairs([['queue', '"}\n#\\']]), 1);
    expect(w.text()).toBe(
      '# HELP x_total a \\\\ path\\nnext "quoted"\n# TYPE x_total counter\nx_total{queue="\\"}\\n#\\\\"} 1\n',
    );
  });

  it('formats non-finite values as the format spells them', () => {
    expect(formatValue(Number.NaN)).toBe('NaN');
    expect(formatValue(Number.POSITIVE_INFINITY)).toBe('+Inf');
    expect(formatValue(Number.NEGATIVE_INFINITY)).toBe('-Inf');
    expect(formatValue(0.25)).toBe('0.25');
    expect(formatValue(12345678901)).toBe('12345678901');
  });

  it('writes a histogram as cumulative buckets ending with +Inf, then _sum and _count', () => {
    const h = new LatencyHistogram([0.001, 0.01, 0.1]);
    for (const s of [0.0005, 0.001, 0.005, 0.05, 3]) h.observe(s);
    const w = new ExpositionWriter();
    w.family('styx_log_sync_duration_seconds', 'histogram', 'Sync time');
    w.histogram(labelPairs([['node', 'n1']]), h);
    expect(w.text()).toBe(
      [
        '# HELP styx_log_sync_duration_seconds Sync time',
        '# TYPE styx_log_sync_duration_seconds histogram',
        'styx_log_sync_duration_seconds_bucket{node="n1",le="0.001"} 2',
        'styx_log_sync_duration_seconds_bucket{node="n1",le="0.01"} 3',
        'styx_log_sync_duration_seconds_bucket{node="n1",le="0.1"} 4',
        'styx_log_sync_duration_seconds_bucket{node="n1",le="+Inf"} 5',
        `styx_log_sync_duration_seconds_sum{node="n1"} ${0.0005 + 0.001 + 0.005 + 0.05 + 3}`,
        'styx_log_sync_duration_seconds_count{node="n1"} 5',
        '',
      ].join('\n'),
    );
  });

  it('refuses what would make the output invalid: a family twice, bad names, samples of the wrong kind', () => {
    const w = new ExpositionWriter();
    expect(() => w.sample('', 1)).toThrow(/before any family/);
    w.family('a_total', 'counter', 'A');
    expect(() => w.family('a_total', 'counter', 'A again')).toThrow(/twice/);
    expect(() => w.family('bad-name', 'gauge', 'x')).toThrow(/bad metric name/);
    expect(() => w.family('9lives', 'gauge', 'x')).toThrow(/bad metric name/);
    expect(() => labelPairs([['le-bad', 'x']])).toThrow(/bad label name/);
    expect(() => labelPairs([['__reserved', 'x']])).toThrow(/bad label name/);
    expect(() => w.histogram('', new LatencyHistogram([1]))).toThrow(/not a histogram/);
    w.family('h', 'histogram', 'H');
    expect(() => w.sample('', 1)).toThrow(/is a histogram/);
  });

  it('joins label sets', () => {
    expect(withLabels('', 'a="1"')).toBe('a="1"');
    expect(withLabels('a="1"', '')).toBe('a="1"');
    expect(withLabels('a="1"', 'b="2"')).toBe('a="1",b="2"');
  });
});

describe('LatencyHistogram', () => {
  it('counts an observation equal to a bound in that bucket (le is <=)', () => {
    const h = new LatencyHistogram([1, 2]);
    h.observe(1);
    h.observe(2);
    h.observe(2.5);
    expect([...h.counts]).toEqual([1, 1, 1]);
    expect(h.count).toBe(3);
    expect(h.sum).toBe(5.5);
  });

  it('refuses bounds that are not increasing and finite', () => {
    expect(() => new LatencyHistogram([1, 1])).toThrow(RangeError);
    expect(() => new LatencyHistogram([2, 1])).toThrow(RangeError);
    expect(() => new LatencyHistogram([1, Number.POSITIVE_INFINITY])).toThrow(RangeError);
  });
});
