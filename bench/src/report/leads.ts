/**
 * The figures where Styx leads today and must keep leading (issue 28): idle queues at ~0 % CPU in
 * a fraction of RabbitMQ's memory, failover of many queues, head-of-line expiry in milliseconds,
 * restart with a full queue.
 * Picked out of the run's results so report.md shows them together, whichever of them ran.
 */
import type { Target } from '../brokers/broker.ts';
import type { CaseResult } from '../runner/results.ts';
import { formatRatio, formatValue } from './format.ts';
import { ratioOf } from './ratios.ts';

/** (case, metric) pairs of the leads, with what each shows. */
export const LEADS: readonly { caseId: string; metric: string; what: string }[] = [
  { caseId: 'n.idle', metric: 'idle-cpu', what: 'idle queues: broker CPU' },
  { caseId: 'n.idle', metric: 'rss', what: 'idle queues: broker RSS' },
  { caseId: 'n.idle', metric: 'rss-per-queue', what: 'idle queues: RSS per queue' },
  {
    caseId: 'e.mixed-ttl',
    metric: 'lateness.max',
    what: 'head-of-line expiry: short messages, lateness max',
  },
  {
    caseId: 'o.failover',
    metric: 'writable',
    what: 'failover: queues writable again after node 1 was killed',
  },
  { caseId: 'o.failover', metric: 'all-writable', what: 'failover: node 1 killed → every queue writable' },
  { caseId: 'o.failover', metric: 'failover.p50', what: 'failover: node 1 killed → queue writable, p50' },
  { caseId: 'l.restart', metric: 'first', what: 'restart with a full queue: start → first delivery' },
];

export const LEADS_HEADER = ['lead', 'Styx', 'RabbitMQ', 'Styx/RabbitMQ'] as const;

/** One row per lead both or either broker measured in `results`. */
export function leadRows(results: readonly CaseResult[]): string[][] {
  return LEADS.flatMap((l) => {
    const value = (t: Target) =>
      results
        .find((r) => r.caseId === l.caseId && r.target === t && r.status === 'ok')
        ?.metrics.find((m) => m.key === l.metric);
    const s = value('styx');
    const r = value('rabbitmq');
    if (s === undefined && r === undefined) return [];
    const text = (m: typeof s): string => (m === undefined ? '' : formatValue(m.value, m.unit));
    const ratio = s === undefined || r === undefined ? '' : formatRatio(ratioOf(s.value, r.value));
    return [[`${l.what} (${l.caseId})`, text(s), text(r), ratio]];
  });
}
