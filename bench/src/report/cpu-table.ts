/**
 * The bench's first figure: broker CPU µs per message beside msgs/s, for each case both brokers
 * ran, with the Styx/RabbitMQ ratio of each. One row per case, in the order of the results.
 */
import type { Target } from '../brokers/broker.ts';
import type { CaseResult } from '../runner/results.ts';
import { formatCount, formatRatio } from './format.ts';
import { headlineOf } from './headline.ts';
import { ratioOf } from './ratios.ts';

export const CPU_TABLE_HEADER = [
  'case',
  'Styx µs/msg',
  'RabbitMQ µs/msg',
  'CPU ratio',
  'Styx msg/s',
  'RabbitMQ msg/s',
  'rate ratio',
] as const;

/** The rows of the table; a case with neither figure for either broker is left out. */
export function cpuTableRows(results: readonly CaseResult[]): string[][] {
  const caseIds = [...new Set(results.map((r) => r.caseId))];
  const rows: string[][] = [];
  for (const caseId of caseIds) {
    const pick = (target: Target) => {
      const r = results.find((x) => x.caseId === caseId && x.target === target && x.status === 'ok');
      return r === undefined ? undefined : headlineOf(r);
    };
    const styx = pick('styx');
    const rabbit = pick('rabbitmq');
    const cpu = [styx?.cpuPerMessage?.value, rabbit?.cpuPerMessage?.value];
    const rate = [styx?.throughput?.value, rabbit?.throughput?.value];
    if ([...cpu, ...rate].every((v) => v === undefined)) continue;
    const text = (v: number | undefined): string => (v === undefined ? '' : formatCount(v));
    const ratio = ([s, r]: (number | undefined)[]): string =>
      s === undefined || r === undefined ? '' : formatRatio(ratioOf(s, r));
    rows.push([caseId, text(cpu[0]), text(cpu[1]), ratio(cpu), text(rate[0]), text(rate[1]), ratio(rate)]);
  }
  return rows;
}
