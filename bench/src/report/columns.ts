/**
 * Which broker columns a report table has, and which ratios stand beside them: each Styx column over
 * RabbitMQ (the SDK's, and the same-client one: amqplib over AMQP against both brokers, which is the
 * one that counts once both ran, issue 28), and Styx AMQP over Styx SDK (the protocol's own cost).
 */
import type { StyxTarget, Target } from '../brokers/broker.ts';
import { TARGET_LABELS, TARGETS } from '../brokers/broker.ts';
import type { CaseResult } from '../runner/results.ts';
import type { Better } from '../scenarios/scenario.ts';
import { formatRatio } from './format.ts';
import { ratioOf, verdictOf } from './ratios.ts';

export interface RatioColumn {
  /** The numerator's target. */
  readonly of: Target;
  /** The denominator's target. */
  readonly over: Target;
  readonly header: string;
  /** Who a verdict is about ('Styx better'). */
  readonly subject: string;
}

/** Every ratio the tables may show, in column order. */
const RATIO_COLUMNS: readonly RatioColumn[] = [
  { of: 'styx', over: 'rabbitmq', header: 'Styx/RabbitMQ (SDK)', subject: 'Styx' },
  { of: 'styx-amqp', over: 'rabbitmq', header: 'Styx AMQP/RabbitMQ (same client)', subject: 'Styx' },
  { of: 'styx-amqp', over: 'styx', header: 'AMQP/SDK', subject: 'AMQP' },
];

/** The targets that have any result in `results`, in the canonical order (Styx, Styx AMQP, RabbitMQ). */
export function targetsIn(results: readonly CaseResult[]): Target[] {
  return TARGETS.filter((t) => results.some((r) => r.target === t));
}

/** The ratio columns whose two targets are both among `targets`. */
export function ratioColumns(targets: readonly Target[]): RatioColumn[] {
  return RATIO_COLUMNS.filter((c) => targets.includes(c.of) && targets.includes(c.over));
}

/** How a ratio's Styx side reached the broker, for the per-metric ratio tables. */
export const STYX_CLIENT: Readonly<Record<StyxTarget, string>> = {
  styx: 'SDK (WebSocket)',
  'styx-amqp': 'amqplib over AMQP (same client)',
};

/** One broker column's figure in a row: how it reads, and its value when it can stand in a ratio. */
export interface Cell {
  readonly text: string;
  readonly value?: number;
}

/**
 * A row's cells after its label: each of `targets`' figure (`cell`), then each ratio column's ratio
 * (blank where either side has no value), followed by its verdict when `better` says which way is
 * better; undefined when no target has a figure (the row is left out).
 */
export function comparisonCells(
  targets: readonly Target[],
  cell: (target: Target) => Cell | undefined,
  better?: Better,
): string[] | undefined {
  const cells = new Map(targets.map((t) => [t, cell(t)]));
  if ([...cells.values()].every((c) => c === undefined)) return undefined;
  const ratio = (c: RatioColumn): string => {
    const a = cells.get(c.of)?.value;
    const b = cells.get(c.over)?.value;
    if (a === undefined || b === undefined) return '';
    const r = ratioOf(a, b);
    if (better === undefined) return formatRatio(r);
    const verdict = verdictOf(r, better);
    const said = verdict === 'better' || verdict === 'worse' ? `${c.subject} ${verdict}` : verdict;
    return `${formatRatio(r)} ${said}`;
  };
  return [...targets.map((t) => cells.get(t)?.text ?? ''), ...ratioColumns(targets).map(ratio)];
}

/** The header of a comparison table: the label column, each target, each ratio column. */
export function comparisonHeader(label: string, targets: readonly Target[]): string[] {
  return [label, ...targets.map((t) => TARGET_LABELS[t]), ...ratioColumns(targets).map((c) => c.header)];
}
