/**
 * The bench's first figures: broker CPU µs per message, then msg/s, for each case, one column per
 * broker column that ran (Styx SDK, Styx AMQP, RabbitMQ) with the ratios of `columns.ts` beside
 * them. One row per case, in the order of the results.
 */
import type { CaseResult } from '../runner/results.ts';
import type { Metric } from '../scenarios/scenario.ts';
import { comparisonCells, comparisonHeader, targetsIn } from './columns.ts';
import { formatCount } from './format.ts';
import type { Headline } from './headline.ts';
import { headlineOf } from './headline.ts';

export interface FigureTable {
  readonly title: string;
  readonly header: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

/** The two headline figures, each a table of its own. */
const FIGURES: readonly { title: string; pick: (h: Headline) => Metric | undefined }[] = [
  { title: 'Broker CPU per message (µs/msg, lower is better)', pick: (h) => h.cpuPerMessage },
  { title: 'Throughput (msg/s, higher is better)', pick: (h) => h.throughput },
];

/** One table per figure; a figure no case has for any broker gives no table, a case without it no row. */
export function headlineTables(results: readonly CaseResult[]): FigureTable[] {
  const targets = targetsIn(results);
  const caseIds = [...new Set(results.map((r) => r.caseId))];
  return FIGURES.flatMap((figure) => {
    const rows = caseIds.flatMap((caseId) => {
      const cells = comparisonCells(targets, (t) => {
        const r = results.find((x) => x.caseId === caseId && x.target === t && x.status === 'ok');
        const m = r === undefined ? undefined : figure.pick(headlineOf(r));
        return m === undefined ? undefined : { value: m.value, text: formatCount(m.value) };
      });
      return cells === undefined ? [] : [[caseId, ...cells]];
    });
    return rows.length === 0
      ? []
      : [{ title: figure.title, header: comparisonHeader('case', targets), rows }];
  });
}
