/**
 * g. Scenarios a, c and d on a 3-node cluster: the single-node cases with `nodes: 3`. The runner
 * launches a cluster for them (clients connect to node 1), or reports them skipped for a broker
 * the bench cannot launch as a cluster yet. And b with its consumer on a node that does not lead
 * the queue (`g.b.consume.remote`): every delivery and every ack crosses between nodes (Styx's
 * queue link; RabbitMQ's quorum queue delivering through a member that is not its leader).
 */
import { CONSUME_PREFETCH, fillAndDrain } from './consume-ack.ts';
import { hotExpiry } from './hot-expiry.ts';
import { publishConfirms } from './publish-confirms.ts';
import { rejectRepublish } from './reject-republish.ts';
import type { BenchCase, Scenario } from './scenario.ts';
import type { Sizes } from './sizes.ts';

/** The cluster's size. */
export const CLUSTER_NODES = 3;

/** Which cases of a, c and d run on the cluster (of the paced streams, 5k: issue 28 asks for its lateness on a cluster too). */
const CLUSTER_CASES = /^(a\.publish|c\.burst\..*|c\.stream\.(full|5k)\..*|d\.reject\..*)$/;

export const onCluster: Scenario = {
  id: 'g',
  name: 'cluster',
  title: 'a, c and d on a 3-node cluster',
  cases(sizes): BenchCase[] {
    const cases: BenchCase[] = [publishConfirms, hotExpiry, rejectRepublish]
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
    return [...cases, remoteConsume(sizes)];
  },
};

/**
 * Consume and ack (b) through a node that does not lead the queue: filled through node 1, drained
 * by a consumer connected to the first node that is not the queue's leader.
 */
function remoteConsume(sizes: Sizes): BenchCase {
  return {
    id: 'g.b.consume.remote',
    scenario: 'g',
    title: `${CLUSTER_NODES} nodes: consume + ack through a node that does not lead the queue`,
    params: { messages: sizes.consume, prefetch: CONSUME_PREFETCH, nodes: CLUSTER_NODES },
    requires: [],
    nodes: CLUSTER_NODES,
    async run(ctx) {
      const queue = await ctx.declareQueue('q');
      let where = '';
      // Asked once the queue is filled: its group has a leader by then.
      const outcome = await fillAndDrain(ctx, queue, sizes.consume, async () => {
        const leader = await ctx.broker.queueLeader(queue);
        if (leader === undefined) throw new Error(`the broker names no leader of ${queue}`);
        const index = ctx.broker.urls.findIndex((_, i) => i !== leader);
        const url = ctx.broker.urls[index];
        if (url === undefined) throw new Error('the broker has no node besides the leader');
        where = `led by node ${leader + 1}, consumed through node ${index + 1}`;
        return ctx.connect(url);
      });
      return { ...outcome, notes: [where, ...outcome.notes] };
    },
  };
}
