/** Styx/RabbitMQ ratios: each metric of each case both brokers ran to the end. */

import type { CaseResult, Ratio } from '../runner/results.ts';
import type { Better, Metric } from '../scenarios/scenario.ts';

/** Ratios within this of 1 count as the same. */
export const SAME_WITHIN = 0.01;

/** Who did better, given the ratio styx/rabbitmq and which way the metric is better. */
export function verdictOf(ratio: number | null, better: Better): Ratio['verdict'] {
  if (ratio === null) return 'n/a';
  if (Math.abs(ratio - 1) <= SAME_WITHIN) return 'same';
  return ratio > 1 === (better === 'higher') ? 'better' : 'worse';
}

/**
 * styx / rabbitmq, or null when it means nothing: RabbitMQ's value is 0, or either is negative (a
 * ratio of signed values does not say who is ahead). Both 0 is a ratio of 1.
 */
export function ratioOf(styx: number, rabbitmq: number): number | null {
  if (styx < 0 || rabbitmq < 0) return null;
  if (rabbitmq === 0) return styx === 0 ? 1 : null;
  return styx / rabbitmq;
}

function ratioFor(caseId: string, s: Metric, r: Metric): Ratio {
  const ratio = ratioOf(s.value, r.value);
  return {
    caseId,
    metric: s.key,
    label: s.label,
    unit: s.unit,
    styx: s.value,
    rabbitmq: r.value,
    ratio,
    verdict: verdictOf(ratio, s.better),
  };
}

/** Pairs the 'ok' results of the two brokers by case and metric key, in the order of the results. */
export function computeRatios(results: readonly CaseResult[]): Ratio[] {
  const ratios: Ratio[] = [];
  for (const styx of results) {
    if (styx.target !== 'styx' || styx.status !== 'ok') continue;
    const rabbit = results.find(
      (r) => r.target === 'rabbitmq' && r.caseId === styx.caseId && r.status === 'ok',
    );
    if (rabbit === undefined) continue;
    for (const s of styx.metrics) {
      const r = rabbit.metrics.find((m) => m.key === s.key);
      if (r !== undefined) ratios.push(ratioFor(styx.caseId, s, r));
    }
  }
  return ratios;
}
