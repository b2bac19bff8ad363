import { describe, expect, it } from 'vitest';
import type { Metric } from '../scenarios/scenario.ts';
import { cpuPerMessageMetric, openCpuWindow, withCpuFirst } from '../scenarios/support/cpu-window.ts';
import { headlineTables } from './cpu-table.ts';
import { headlineOf } from './headline.ts';
import { leadTable } from './leads.ts';
import { caseResult } from './test-support/case-result.ts';

const rate = (value: number): Metric => ({
  key: 'throughput',
  label: 'published',
  unit: 'msg/s',
  value,
  better: 'higher',
});

const result = caseResult;

describe('cpu window', () => {
  it('turns ms of CPU over messages into µs per message', () => {
    expect(cpuPerMessageMetric(250, 10_000)?.value).toBe(25);
    expect(cpuPerMessageMetric(250, 10_000)?.unit).toBe('µs/msg');
    expect(cpuPerMessageMetric(250, 0)).toBeUndefined();
    expect(cpuPerMessageMetric(-1, 10)).toBeUndefined();
  });

  it('measures only between open and close', () => {
    const readings = [1000, 1400];
    const w = openCpuWindow({ brokerCpuMs: () => readings.shift() });
    expect(w.close(100)?.value).toBe(4000);
    const unreadable = openCpuWindow({ brokerCpuMs: () => undefined });
    expect(unreadable.close(100)).toBeUndefined();
  });

  it('puts the CPU metric first, and is the headline figure', () => {
    const cpu = cpuPerMessageMetric(100, 1000);
    const metrics = withCpuFirst(cpu, [rate(5)]);
    expect(metrics.map((m) => m.key)).toEqual(['cpu-per-msg', 'throughput']);
    const h = headlineOf(result('styx', 'a', metrics));
    expect(h.cpuPerMessage?.value).toBe(100);
    expect(h.others).toEqual([]);
    expect(withCpuFirst(undefined, [rate(5)])).toHaveLength(1);
  });
});

describe('headlineTables', () => {
  const cpu = (us: number): Metric => cpuPerMessageMetric(us, 1000) as Metric;

  it('pairs the brokers per case, one table per figure, and leaves out cases with no figure', () => {
    const tables = headlineTables([
      result('styx', 'a.publish', [cpu(10), rate(60_000)]),
      result('rabbitmq', 'a.publish', [cpu(20), rate(30_000)]),
      result('styx', 'e.mixed', []),
      result('styx', 'b.consume', [cpu(5), rate(1000)]),
      result('rabbitmq', 'b.consume', [cpu(5), rate(1000)], 'error'),
    ]);
    expect(tables.map((t) => t.title)).toEqual([
      'Broker CPU per message (µs/msg, lower is better)',
      'Throughput (msg/s, higher is better)',
    ]);
    expect(tables[0]?.header).toEqual(['case', 'Styx', 'RabbitMQ', 'Styx/RabbitMQ (SDK)']);
    expect(tables[0]?.rows).toEqual([
      ['a.publish', '10', '20', '×0.50'],
      ['b.consume', '5', '', ''],
    ]);
    expect(tables[1]?.rows).toEqual([
      ['a.publish', '60,000', '30,000', '×2.00'],
      ['b.consume', '1,000', '', ''],
    ]);
  });

  it('puts the AMQP column beside the SDK one with both ratios over RabbitMQ and the protocol cost', () => {
    const tables = headlineTables([
      result('styx', 'a.publish', [cpu(10), rate(60_000)]),
      result('styx-amqp', 'a.publish', [cpu(15), rate(45_000)]),
      result('rabbitmq', 'a.publish', [cpu(20), rate(30_000)]),
      result('styx-amqp', 'd.reject', [cpu(40)], 'error'),
    ]);
    expect(tables[0]?.header).toEqual([
      'case',
      'Styx',
      'Styx AMQP',
      'RabbitMQ',
      'Styx/RabbitMQ (SDK)',
      'Styx AMQP/RabbitMQ (same client)',
      'AMQP/SDK',
    ]);
    expect(tables[0]?.rows).toEqual([['a.publish', '10', '15', '20', '×0.50', '×0.75', '×1.50']]);
    expect(tables[1]?.rows).toEqual([['a.publish', '60,000', '45,000', '30,000', '×2.00', '×1.50', '×0.75']]);
  });

  it('without RabbitMQ shows the two Styx columns and the protocol cost alone', () => {
    const tables = headlineTables([
      result('styx', 'a.publish', [cpu(10)]),
      result('styx-amqp', 'a.publish', [cpu(12)]),
    ]);
    expect(tables).toHaveLength(1);
    expect(tables[0]?.header).toEqual(['case', 'Styx', 'Styx AMQP', 'AMQP/SDK']);
    expect(tables[0]?.rows).toEqual([['a.publish', '10', '12', '×1.20']]);
  });

  it('has no table when no case has a figure', () => {
    expect(headlineTables([result('styx', 'e.mixed', []), result('rabbitmq', 'e.mixed', [])])).toEqual([]);
  });
});

describe('leadTable', () => {
  const m = (key: string, value: number, unit: string): Metric => ({
    key,
    label: key,
    unit,
    value,
    better: 'lower',
  });

  it('shows the leads that ran, with the ratio when both brokers have them', () => {
    const { header, rows } = leadTable([
      caseResult('styx', 'n.idle', [m('idle-cpu', 0.1, '% of a core'), m('rss', 300, 'MiB')]),
      caseResult('rabbitmq', 'n.idle', [m('idle-cpu', 2, '% of a core'), m('rss', 900, 'MiB')]),
      caseResult('styx', 'l.restart', [m('first', 2500, 'ms')]),
    ]);
    expect(header).toEqual(['lead', 'Styx', 'RabbitMQ', 'Styx/RabbitMQ (SDK)']);
    expect(rows).toEqual([
      ['idle queues: broker CPU (n.idle)', '0.1 % of a core', '2 % of a core', '×0.05'],
      ['idle queues: broker RSS (n.idle)', '300 MiB', '900 MiB', '×0.33'],
      ['restart with a full queue: start → first delivery (l.restart)', '2.50 s', '', ''],
    ]);
  });

  it('gives the AMQP column its own ratios', () => {
    const { header, rows } = leadTable([
      caseResult('styx', 'l.restart', [m('first', 2000, 'ms')]),
      caseResult('styx-amqp', 'l.restart', [m('first', 3000, 'ms')]),
      caseResult('rabbitmq', 'l.restart', [m('first', 6000, 'ms')]),
    ]);
    expect(header.slice(4)).toEqual(['Styx/RabbitMQ (SDK)', 'Styx AMQP/RabbitMQ (same client)', 'AMQP/SDK']);
    expect(rows).toEqual([
      [
        'restart with a full queue: start → first delivery (l.restart)',
        '2.00 s',
        '3.00 s',
        '6.00 s',
        '×0.33',
        '×0.50',
        '×1.50',
      ],
    ]);
  });
});
