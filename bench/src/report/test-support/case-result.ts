/** A CaseResult for report tests: only the target, case, metrics and status matter to them. */
import type { Target } from '../../brokers/broker.ts';
import type { CaseResult } from '../../runner/results.ts';
import type { Metric } from '../../scenarios/scenario.ts';

export function caseResult(
  target: Target,
  caseId: string,
  metrics: Metric[],
  status: CaseResult['status'] = 'ok',
): CaseResult {
  return {
    caseId,
    scenario: 'a',
    title: caseId,
    target,
    status,
    params: {},
    metrics,
    histograms: [],
    notes: [],
    cpu: null,
  };
}
