/**
 * g. Scenarios a, c and d on a 3-node cluster: the single-node cases with `nodes: 3`. The runner
 * launches a cluster for them (clients connect to node 1), or reports them skipped for a broker
 * the bench cannot launch as a cluster yet.
 */
import { hotExpiry } from './hot-expiry.ts';
import { publishConfirms } from './publish-confirms.ts';
import { rejectRepublish } from './reject-republish.ts';
import type { Scenario } from './scenario.ts';

/** The cluster's size. */
export const CLUSTER_NODES = 3;

/** Which cases of a, c and d run on the cluster (of the paced streams, 5k: issue 28 asks for its lateness on a cluster too). */
const CLUSTER_CASES = /^(a\.publish|c\.burst\..*|c\.stream\.(full|5k)\..*|d\.reject\..*)$/;

export const onCluster: Scenario = {
  id: 'g',
  name: 'cluster',
  title: 'a, c and d on a 3-node cluster',
  cases(sizes) {
    return [publishConfirms, hotExpiry, rejectRepublish]
      .flatMap((s) => s.cases(sizes))
      .filter((c) => CLUSTER_CASES.test(c.id))
      .map((c) => ({
        ...c,
        id: `g.${c.id}`,
        scenario: 'g' as const,
        title: `${CLUSTER_NODES} nodes: ${c.title}`,
        params: { ...c.params, nodes: CLUSTER_NODES },
        nodes: CLUSTER_NODES,
      }));
  },
};
