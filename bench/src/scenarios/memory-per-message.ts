/**
 * f. Memory per queued message: the broker's resident memory before and after filling one queue
 * with 1M messages (100k in quick mode), divided by the count. Anonymous memory (heaps) and
 * file-backed memory (mapped files, e.g. LMDB's map) are reported apart: the kernel may drop clean
 * file pages under pressure, so anonymous memory is the cost that stays.
 */
import { processMemory } from '../brokers/process-stats.ts';
import type { Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { sleep } from './support/clock.ts';
import { publishWithConfirms } from './support/publisher.ts';

/** How long the broker is left alone before each memory reading, ms (lets GC and flushes settle). */
const SETTLE_MS = 2000;

export const memoryPerMessage: Scenario = {
  id: 'f',
  name: 'memory',
  title: 'Memory per queued message',
  cases: (sizes) => [
    {
      id: 'f.memory',
      scenario: 'f',
      title: `memory at ${sizes.memory / 1000}k queued`,
      params: { messages: sizes.memory },
      requires: [],
      freshBroker: true,
      async run(ctx) {
        const n = sizes.memory;
        const queue = await ctx.declareQueue('q');
        const pid = ctx.brokerPid;
        await sleep(SETTLE_MS);
        const before = processMemory(pid);
        const conn = await ctx.connect();
        const progress = { published: 0, confirmed: 0 };
        const ticker = setInterval(() => ctx.status(`${progress.confirmed}/${n} queued`), 250);
        let r: Awaited<ReturnType<typeof publishWithConfirms>>;
        try {
          r = await publishWithConfirms(
            await conn.createConfirmChannel(),
            { exchange: '', routingKey: queue, count: n, window: 1000 },
            progress,
          );
        } finally {
          clearInterval(ticker);
        }
        await sleep(SETTLE_MS);
        const after = processMemory(pid);
        if (before === undefined || after === undefined)
          throw new Error(`cannot read the broker's memory from /proc/${pid}/status`);
        return {
          metrics: [
            {
              key: 'rss-per-msg',
              label: 'RSS per message',
              unit: 'B',
              value: (after.rss - before.rss) / n,
              better: 'lower',
            },
            {
              key: 'anon-per-msg',
              label: 'anonymous memory per message',
              unit: 'B',
              value: (after.anon - before.anon) / n,
              better: 'lower',
            },
            { key: 'rss', label: 'RSS at the end', unit: 'MiB', value: after.rss / 2 ** 20, better: 'lower' },
            {
              key: 'publish-rate',
              label: 'published',
              unit: 'msg/s',
              value: perSecond(n, r.lastConfirmMs - r.startMs),
              better: 'higher',
            },
          ],
          histograms: [],
          notes: [
            `RSS ${(before.rss / 2 ** 20).toFixed(0)} → ${(after.rss / 2 ** 20).toFixed(0)} MiB ` +
              `(anonymous ${(before.anon / 2 ** 20).toFixed(0)} → ${(after.anon / 2 ** 20).toFixed(0)} MiB)`,
          ],
        };
      },
    },
  ],
};
