/** Styx/RabbitMQ ratios: each metric of each case a Styx column and RabbitMQ ran to the end. */

import type { StyxTarget } from '../brokers/broker.ts';
import { REFERENCE_TARGET, STYX_TARGETS } from '../brokers/broker.ts';
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

function ratioFor(caseId: string, target: StyxTarget, s: Metric, r: Metric): Ratio {
  const ratio = ratioOf(s.value, r.value);
  return {
    caseId,
    target,
    metric: s.key,
    label: s.label,
    unit: s.unit,
    styx: s.value,
    rabbitmq: r.value,
    ratio,
    verdict: verdictOf(ratio, s.better),
  };
}

/**
 * Pairs the 'ok' results of each Styx column (SDK, AMQP) with RabbitMQ's by case and metric key:
 * cases in the order of the results, within a case the SDK's ratios before the AMQP column's.
 */
export function computeRatios(results: readonly CaseResult[]): Ratio[] {
  const ratios: Ratio[] = [];
  const ok = (target: string, caseId: string): CaseResult | undefined =>
    results.find((r) => r.target === target && r.caseId === caseId && r.status === 'ok');
  for (const caseId of new Set(results.map((r) => r.caseId))) {
    const rabbit = ok(REFERENCE_TARGET, caseId);
    if (rabbit === undefined) continue;
    for (const target of STYX_TARGETS) {
      const styx = ok(target, caseId);
      if (styx === undefined) continue;
      for (const s of styx.metrics) {
        const r = rabbit.metrics.find((m) => m.key === s.key);
        if (r !== undefined) ratios.push(ratioFor(caseId, target, s, r));
      }
    }
  }
  return ratios;
}
