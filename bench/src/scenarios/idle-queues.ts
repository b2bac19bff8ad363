/**
 * n. Idle queues (one of the leads to keep): N queues declared (10,000; 1,000 in quick mode), then,
 * after a settling pause, the broker's CPU over a few idle seconds (Styx quiesces idle Raft groups:
 * no ticks, no heartbeats) and its resident memory per queue. Fresh broker.
 */
import { processMemory } from '../brokers/process-stats.ts';
import type { Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { nowMs, sleep } from './support/clock.ts';
import { declareQueues } from './support/declare-many.ts';

/** Pause after declaring, before measuring, ms (lets groups quiesce and GC settle). */
export const IDLE_SETTLE_MS = 5000;
/** The idle window, ms. */
export const IDLE_WINDOW_MS = 5000;

export const idleQueues: Scenario = {
  id: 'n',
  name: 'idle-queues',
  title: 'Idle queues: CPU and memory',
  cases: (sizes) => [
    {
      id: 'n.idle',
      scenario: 'n',
      title: `${sizes.idleQueues.toLocaleString('en-US')} idle queues`,
      params: { queues: sizes.idleQueues, settleMs: IDLE_SETTLE_MS, windowMs: IDLE_WINDOW_MS },
      requires: [],
      freshBroker: true,
      async run(ctx) {
        const n = sizes.idleQueues;
        const before = processMemory(ctx.brokerPid);
        const t0 = nowMs();
        await declareQueues(ctx, n);
        const declareMs = nowMs() - t0;
        ctx.status('settling');
        await sleep(IDLE_SETTLE_MS);
        ctx.status('measuring idle CPU');
        const cpu0 = ctx.brokerCpuMs();
        const w0 = nowMs();
        await sleep(IDLE_WINDOW_MS);
        const cpu1 = ctx.brokerCpuMs();
        const wall = nowMs() - w0;
        const after = processMemory(ctx.brokerPid);
        if (cpu0 === undefined || cpu1 === undefined || before === undefined || after === undefined)
          throw new Error(`cannot read the broker's CPU or memory from /proc/${ctx.brokerPid}`);
        return {
          metrics: [
            {
              key: 'idle-cpu',
              label: 'idle CPU',
              unit: '% of a core',
              value: ((cpu1 - cpu0) / wall) * 100,
              better: 'lower',
            },
            { key: 'rss', label: 'RSS', unit: 'MiB', value: after.rss / 2 ** 20, better: 'lower' },
            {
              key: 'rss-per-queue',
              label: 'RSS per queue',
              unit: 'B',
              value: (after.rss - before.rss) / n,
              better: 'lower',
            },
            {
              key: 'declare-rate',
              label: 'declared',
              unit: 'queues/s',
              value: perSecond(n, declareMs),
              better: 'higher',
            },
          ],
          histograms: [],
          notes: [],
        };
      },
    },
  ],
};
