/**
 * d. Republish on reject: a consumer rejects every message (requeue=false) and the broker
 * dead-letters it to a target queue. Measures msgs/s at the target and reject → arrival latency
 * (how far dead-lettering lags behind the rejecting consumer).
 */
import { STRATEGIES } from '../adapters/adapter.ts';
import type { BenchCase, Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { latencyHistogram, recordMs } from './support/arrivals.ts';
import { readStamp } from './support/body.ts';
import { nowMs } from './support/clock.ts';
import { startConsumer } from './support/consumer.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { deadLetterTopology } from './support/dead-letter-setup.ts';
import { publishWithConfirms } from './support/publisher.ts';
import { waitUntil } from './support/wait.ts';

/** Prefetch of the rejecting consumer. */
export const REJECT_PREFETCH = 1000;

export const rejectRepublish: Scenario = {
  id: 'd',
  name: 'reject-republish',
  title: 'Republish on reject: every message rejected (requeue=false) → DLX → target',
  cases(sizes) {
    return STRATEGIES.map(
      (strategy): BenchCase => ({
        id: `d.reject.${strategy}`,
        scenario: 'd',
        title: `reject → DLX, ${strategy}`,
        params: { messages: sizes.reject, strategy, prefetch: REJECT_PREFETCH },
        requires: [{ kind: 'dead-letter', reason: 'rejected', strategy }],
        async run(ctx) {
          const n = sizes.reject;
          // When each message was rejected (bench clock, ms); 0 = not yet.
          const rejectedAt = new Float64Array(n);
          const latency = latencyHistogram();
          const topo = await deadLetterTopology(ctx, {
            strategy,
            count: n,
            onArrival: (seq, _published, arrived) => {
              const r = rejectedAt[seq] ?? 0;
              if (r > 0) recordMs(latency, arrived - r);
            },
          });
          // The source is filled first (not measured), then the rejecter starts.
          ctx.status(`filling ${n} messages`);
          const pub = await ctx.connect();
          await publishWithConfirms(await pub.createConfirmChannel(), {
            exchange: '',
            routingKey: topo.source,
            count: n,
            window: 1000,
          });
          let rejected = 0;
          let firstRejectMs = 0;
          let lastRejectMs = 0;
          const rejecter = await ctx.connect();
          const window = openCpuWindow(ctx);
          await startConsumer(rejecter, topo.source, REJECT_PREFETCH, (msg, ch) => {
            const { seq } = readStamp(msg.content);
            const t = nowMs();
            if (seq < n && rejectedAt[seq] === 0) rejectedAt[seq] = t;
            if (firstRejectMs === 0) firstRejectMs = t;
            lastRejectMs = t;
            rejected++;
            ch.reject(msg, false);
          });
          await waitUntil(() => topo.arrivals.complete, {
            what: 'dead-lettered messages',
            progress: () => topo.arrivals.unique + rejected,
            expected: n,
            stallMs: ctx.stallTimeoutMs,
            onPoll: () => ctx.status(`${rejected}/${n} rejected, ${topo.arrivals.unique}/${n} arrived`),
          });
          const cpu = window.close(n);
          return {
            metrics: withCpuFirst(cpu, [
              {
                key: 'throughput',
                label: 'dead-lettered',
                unit: 'msg/s',
                value: perSecond(n, topo.arrivals.lastMs - firstRejectMs),
                better: 'higher',
              },
              {
                key: 'reject-rate',
                label: 'rejected',
                unit: 'msg/s',
                value: perSecond(rejected, lastRejectMs - firstRejectMs),
                better: 'higher',
              },
            ]),
            histograms: [{ key: 'reject', label: 'reject → arrival', histogram: latency }],
            notes: topo.arrivals.notes(),
          };
        },
      }),
    );
  },
};
