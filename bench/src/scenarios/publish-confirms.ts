/** a. Publish with confirms, 1,000 in flight: msgs/s and confirm latency. */
import type { Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { latencyHistogram, recordMs } from './support/arrivals.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { publishWithConfirms } from './support/publisher.ts';

/** Unconfirmed messages allowed at once (the "1,000 in flight"). */
export const PUBLISH_WINDOW = 1000;

export const publishConfirms: Scenario = {
  id: 'a',
  name: 'publish',
  title: 'Publish with confirms, 1,000 in flight',
  cases: (sizes) => [
    {
      id: 'a.publish',
      scenario: 'a',
      title: 'publish with confirms',
      params: { messages: sizes.publish, window: PUBLISH_WINDOW },
      requires: [],
      async run(ctx) {
        const queue = await ctx.declareQueue('q');
        const conn = await ctx.connect();
        const ch = await conn.createConfirmChannel();
        const confirmLatency = latencyHistogram();
        const progress = { published: 0, confirmed: 0 };
        const ticker = setInterval(() => ctx.status(`${progress.confirmed}/${sizes.publish} confirmed`), 250);
        try {
          const window = openCpuWindow(ctx);
          const r = await publishWithConfirms(
            ch,
            {
              exchange: '',
              routingKey: queue,
              count: sizes.publish,
              window: PUBLISH_WINDOW,
              onConfirm: (_seq, ms) => recordMs(confirmLatency, ms),
            },
            progress,
          );
          return {
            metrics: withCpuFirst(window.close(sizes.publish), [
              {
                key: 'throughput',
                label: 'published',
                unit: 'msg/s',
                value: perSecond(sizes.publish, r.lastConfirmMs - r.startMs),
                better: 'higher',
              },
            ]),
            histograms: [{ key: 'confirm', label: 'confirm latency', histogram: confirmLatency }],
            notes: [],
          };
        } finally {
          clearInterval(ticker);
        }
      },
    },
  ],
};
