/**
 * e. Mixed TTL: one long-TTL message (60 s; less in quick mode) ahead of ten 100 ms ones, in a queue
 * with a dead-letter exchange. A queue that expires only from its head (RabbitMQ's) dead-letters the
 * short ones when the long one goes, a whole long TTL late.
 */
import type { Scenario } from './scenario.ts';
import { latencyHistogram, recordMs } from './support/arrivals.ts';
import { BodyWriter } from './support/body.ts';
import { nowMs } from './support/clock.ts';
import { deadLetterTopology } from './support/dead-letter-setup.ts';
import { waitUntil } from './support/wait.ts';

/** The short messages' TTL, ms, and how many follow the long one. */
export const SHORT_TTL_MS = 100;
export const SHORT_COUNT = 10;

export const mixedTtl: Scenario = {
  id: 'e',
  name: 'mixed-ttl',
  title: 'Mixed TTL: one long message ahead of ten 100 ms ones',
  cases: (sizes) => [
    {
      id: 'e.mixed-ttl',
      scenario: 'e',
      title: `one ${sizes.longTtlMs / 1000} s message ahead of ${SHORT_COUNT} × ${SHORT_TTL_MS} ms`,
      params: { longTtlMs: sizes.longTtlMs, shortTtlMs: SHORT_TTL_MS, short: SHORT_COUNT },
      requires: [{ kind: 'dead-letter', reason: 'expired', strategy: 'at-most-once' }],
      async run(ctx) {
        const lateness = latencyHistogram();
        let longLateMs = 0;
        // Message 0 is the long one; 1..SHORT_COUNT are the short ones.
        const topo = await deadLetterTopology(ctx, {
          strategy: 'at-most-once',
          count: SHORT_COUNT + 1,
          onArrival: (seq, published, arrived) => {
            if (seq === 0) longLateMs = arrived - published - sizes.longTtlMs;
            else recordMs(lateness, arrived - published - SHORT_TTL_MS);
          },
        });
        const pub = await ctx.connect();
        const ch = await pub.createConfirmChannel();
        const body = new BodyWriter();
        for (let seq = 0; seq <= SHORT_COUNT; seq++) {
          const expiration = String(seq === 0 ? sizes.longTtlMs : SHORT_TTL_MS);
          ch.publish('', topo.source, body.stamp(seq, nowMs()), { persistent: true, expiration });
        }
        await ch.waitForConfirms();
        await waitUntil(() => topo.arrivals.complete, {
          what: 'dead-lettered messages',
          progress: () => topo.arrivals.unique,
          expected: SHORT_COUNT + 1,
          // Nothing may arrive until the long message expires, on a head-of-line queue.
          stallMs: ctx.stallTimeoutMs + sizes.longTtlMs,
          onPoll: () => ctx.status(`${topo.arrivals.unique}/${SHORT_COUNT + 1} dead-lettered`),
        });
        return {
          metrics: [
            {
              key: 'long-lateness',
              label: 'long message lateness',
              unit: 'ms',
              value: longLateMs,
              better: 'lower',
            },
          ],
          histograms: [{ key: 'lateness', label: 'short messages lateness', histogram: lateness }],
          notes: topo.arrivals.notes(),
        };
      },
    },
  ],
};
