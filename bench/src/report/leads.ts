/**
 * The figures where Styx leads today and must keep leading (issue 28): idle queues at ~0 % CPU in
 * a fraction of RabbitMQ's memory, failover of many queues, head-of-line expiry in milliseconds,
 * restart with a full queue.
 * Picked out of the run's results so report.md shows them together, whichever of them ran.
 */
import type { CaseResult } from '../runner/results.ts';
import { comparisonCells, comparisonHeader, targetsIn } from './columns.ts';
import { formatValue } from './format.ts';

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

/**
 * One row per lead any broker measured in `results`: a column per broker column that ran, then the
 * ratios of `columns.ts`.
 */
export function leadTable(results: readonly CaseResult[]): { header: string[]; rows: string[][] } {
  const targets = targetsIn(results);
  const rows = LEADS.flatMap((l) => {
    const cells = comparisonCells(targets, (t) => {
      const m = results
        .find((r) => r.caseId === l.caseId && r.target === t && r.status === 'ok')
        ?.metrics.find((x) => x.key === l.metric);
      return m === undefined ? undefined : { value: m.value, text: formatValue(m.value, m.unit) };
    });
    return cells === undefined ? [] : [[`${l.what} (${l.caseId})`, ...cells]];
  });
  return { header: comparisonHeader('lead', targets), rows };
}
