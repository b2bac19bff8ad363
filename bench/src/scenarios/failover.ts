/**
 * o. Failover (one of the leads to keep): on a 3-node cluster, N queues (2,000; 500 in quick mode)
 * declared through node 1 (the declare rate of replicated queues, and the broker CPU per declare,
 * issue 28 item 4) and each given one confirmed message, then node 1 SIGKILLed. A publisher
 * connected to node 2 beforehand sends one message to every queue, again and again (100 ms after a
 * nack or a channel failure, or after 5 s without an answer), until each is confirmed. Measured from
 * the kill: until every queue took a confirmed message again (all writable), and each queue's time
 * (the distribution), and how many queues came back at all (those that took no confirmed publish
 * within twice the stall timeout of the last that did are reported as not writable).
 *
 * RabbitMQ places a quorum queue's leader on the declaring node, so node 1 led all of them; Styx's
 * leaders are wherever its placement put them, and queues led elsewhere only lose a follower: the
 * figure is what a client sees, whatever the placement.
 */
import type { Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { latencyHistogram, recordMs } from './support/arrivals.ts';
import { BodyWriter } from './support/body.ts';
import { nowMs, sleep } from './support/clock.ts';
import { declareQueues } from './support/declare-many.ts';
import { RETRY_MS, RetryingChannel } from './support/retrying-channel.ts';
import { StallError, waitUntil } from './support/wait.ts';

/** The cluster's size. */
export const FAILOVER_NODES = 3;

export const failover: Scenario = {
  id: 'o',
  name: 'failover',
  title: 'Failover: queues whose node is killed',
  cases: (sizes) => [
    {
      id: 'o.failover',
      scenario: 'o',
      title: `${sizes.failoverQueues.toLocaleString('en-US')} queues, node 1 SIGKILLed`,
      params: { queues: sizes.failoverQueues, nodes: FAILOVER_NODES },
      requires: [],
      nodes: FAILOVER_NODES,
      freshBroker: true,
      killsNode: true,
      async run(ctx) {
        const n = sizes.failoverQueues;
        const declareStart = nowMs();
        const cpuBefore = ctx.brokerCpuMs();
        const queues = await declareQueues(ctx, n);
        const declareMs = nowMs() - declareStart;
        const cpuAfter = ctx.brokerCpuMs();
        const body = new BodyWriter().stamp(0, nowMs());
        ctx.status('one message into each queue');
        const first = await (await ctx.connect()).createConfirmChannel();
        for (const q of queues) first.publish('', q, body, { persistent: true });
        await first.waitForConfirms();
        const survivorUrl = ctx.broker.urls[1];
        if (survivorUrl === undefined) throw new Error('the broker has no node 2');
        const survivor = new RetryingChannel(await ctx.connect(survivorUrl));
        const perQueue = latencyHistogram();
        let writable = 0;
        const killedAt = nowMs();
        ctx.broker.killNode(0);
        let stopped = false;
        const publishers = queues.map(async (q) => {
          while (!stopped && !(await survivor.publish(q, body))) await sleep(RETRY_MS);
          if (stopped) return;
          recordMs(perQueue, nowMs() - killedAt);
          writable++;
        });
        const notes: string[] = [];
        // A new leader needs an election timeout first; RabbitMQ notices a dead node in seconds.
        const stallMs = ctx.stallTimeoutMs * 2;
        try {
          await waitUntil(() => writable === n, {
            what: 'queues writable after the kill',
            progress: () => writable,
            expected: n,
            stallMs,
            onPoll: () => ctx.status(`${writable}/${n} queues writable again`),
          });
        } catch (err) {
          if (!(err instanceof StallError)) throw err;
          // Queues that never come back are the finding, not a failure of the bench.
          notes.push(
            `${n - writable} of ${n} queues took no confirmed publish within ${stallMs / 1000} s of the last that did`,
          );
        } finally {
          stopped = true;
        }
        if (writable === n) await Promise.all(publishers);
        return {
          metrics: [
            {
              key: 'declare-rate',
              label: 'declared (replicated, through node 1)',
              unit: 'queues/s',
              value: perSecond(n, declareMs),
              better: 'higher',
            },
            // On a loaded machine the rate above tracks the cores the nodes get; the CPU they spent
            // per declare (every node's) does not.
            ...(cpuBefore === undefined || cpuAfter === undefined
              ? []
              : [
                  {
                    key: 'declare-cpu',
                    label: 'broker CPU per declare',
                    unit: 'ms',
                    value: (cpuAfter - cpuBefore) / n,
                    better: 'lower' as const,
                  },
                ]),
            {
              key: 'writable',
              label: 'queues writable again',
              unit: 'queues',
              value: writable,
              better: 'higher',
            },
            ...(writable === n
              ? [
                  {
                    key: 'all-writable',
                    label: 'kill → every queue writable',
                    unit: 'ms',
                    value: perQueue.summary().max / 1000,
                    better: 'lower' as const,
                  },
                ]
              : []),
          ],
          histograms: [{ key: 'failover', label: 'kill → queue writable', histogram: perQueue }],
          notes,
        };
      },
    },
  ],
};
