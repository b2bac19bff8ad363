/** The tables printed on stdout at the end of a run. */
import { TARGET_LABELS } from '../brokers/broker.ts';
import type { CaseResult, Ratio } from '../runner/results.ts';
import { STYX_CLIENT } from './columns.ts';
import {
  formatCount,
  formatCpu,
  formatMs,
  formatNodeCpu,
  formatRatio,
  formatValue,
  textTable,
} from './format.ts';
import { headlineOf } from './headline.ts';

/** One row per case and broker: rate, main latency, other metrics, CPU of both sides. */
export function resultsTable(results: readonly CaseResult[]): string {
  const header = [
    'case',
    'broker',
    'status',
    'cpu µs/msg',
    'msg/s',
    'latency',
    'p50',
    'p99',
    'max',
    'other',
    'broker CPU',
    'per node',
    'gen CPU',
    'wall',
  ];
  const rows = results.map((r) => {
    const h = headlineOf(r);
    const wall = r.cpu?.wallMs ?? 0;
    return [
      r.caseId,
      TARGET_LABELS[r.target],
      r.status,
      h.cpuPerMessage === undefined ? '' : formatCount(h.cpuPerMessage.value),
      h.throughput === undefined ? '' : formatCount(h.throughput.value),
      h.latency?.label ?? '',
      h.latency === undefined ? '' : formatMs(h.latency.p50),
      h.latency === undefined ? '' : formatMs(h.latency.p99),
      h.latency === undefined ? '' : formatMs(h.latency.max),
      h.others.map((m) => `${m.label} ${formatValue(m.value, m.unit)}`).join('; '),
      r.cpu === null ? '' : formatCpu(r.cpu.brokerMs, wall),
      formatNodeCpu(r.cpu?.brokerNodesMs, h.cpuPerMessage?.value),
      r.cpu === null ? '' : formatCpu(r.cpu.generatorMs, wall),
      r.cpu === null ? '' : `${(wall / 1000).toFixed(1)} s`,
    ];
  });
  return textTable(header, rows);
}

/** The reasons of every case that did not run to the end. */
export function problemsList(results: readonly CaseResult[]): string {
  return results
    .filter((r) => r.status !== 'ok')
    .map((r) => `${r.caseId} on ${TARGET_LABELS[r.target]}: ${r.status}: ${(r.reason ?? '').split('\n')[0]}`)
    .join('\n');
}

/** Styx/RabbitMQ ratios of each case's headline metrics (rate, latency p50/p99/max, others), per Styx column. */
export function ratiosTable(ratios: readonly Ratio[]): string {
  const rows = ratios.map((q) => [
    q.caseId,
    q.label,
    STYX_CLIENT[q.target],
    formatValue(q.styx, q.unit),
    formatValue(q.rabbitmq, q.unit),
    formatRatio(q.ratio),
    q.verdict === 'better' ? 'Styx better' : q.verdict === 'worse' ? 'Styx worse' : q.verdict,
  ]);
  return textTable(['case', 'metric', 'Styx client', 'Styx', 'RabbitMQ', 'Styx/RabbitMQ', ''], rows);
}
