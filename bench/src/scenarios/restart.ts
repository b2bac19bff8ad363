/**
 * l. Restart with a full queue: N persistent messages (1M; 100k in quick mode) published with
 * confirms into one queue, the broker stopped cleanly (SIGTERM for Styx, `rabbitmqctl stop` for
 * RabbitMQ) and started again on its data. Measured from the start command: until the broker
 * accepts a connection, until the queue reports all N messages ready, and until a consumer
 * receives the first of them. Single node.
 */
import type { BenchChannel } from '../adapters/client-api.ts';
import type { Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { nowMs, sleep } from './support/clock.ts';
import { startConsumer } from './support/consumer.ts';
import { publishWithConfirms } from './support/publisher.ts';

/** How often the queue's ready count is polled after the restart, ms. */
const POLL_MS = 20;

/** Opens a connection, retrying while the restarted broker still refuses them. */
async function connectWhenUp(connect: () => Promise<unknown>, limitMs: number): Promise<void> {
  const deadline = nowMs() + limitMs;
  for (;;) {
    try {
      await connect();
      return;
    } catch (err) {
      if (nowMs() > deadline) throw err;
      await sleep(POLL_MS);
    }
  }
}

export const restartWithBacklog: Scenario = {
  id: 'l',
  name: 'restart',
  title: 'Restart with a full queue',
  cases: (sizes) => [
    {
      id: 'l.restart',
      scenario: 'l',
      title: `restart with ${sizes.restart / 1000}k queued`,
      params: { messages: sizes.restart },
      requires: [],
      freshBroker: true,
      async run(ctx) {
        const n = sizes.restart;
        const queue = await ctx.declareQueue('q');
        const progress = { published: 0, confirmed: 0 };
        const ticker = setInterval(() => ctx.status(`${progress.confirmed}/${n} queued`), 250);
        let published: Awaited<ReturnType<typeof publishWithConfirms>>;
        try {
          published = await publishWithConfirms(
            await (await ctx.connect()).createConfirmChannel(),
            { exchange: '', routingKey: queue, count: n, window: 1000 },
            progress,
          );
        } finally {
          clearInterval(ticker);
        }
        ctx.status('stopping cleanly, then starting again');
        const t0 = nowMs();
        const { stopMs } = await ctx.broker.restart();
        // The start command was issued once the clean stop had finished.
        const startMs = t0 + stopMs;
        const listeningMs = nowMs();
        ctx.status('waiting for the queue');
        let ch: BenchChannel | undefined;
        await connectWhenUp(async () => {
          ch = await (await ctx.connect()).createChannel();
          ch.on('error', () => undefined);
        }, ctx.stallTimeoutMs);
        let ready = 0;
        const deadline = nowMs() + ctx.stallTimeoutMs * 4;
        while (ready < n) {
          try {
            ready = (await (ch as BenchChannel).checkQueue(queue)).messageCount;
          } catch {
            // The queue may not be declared again yet (RabbitMQ recovers queues after boot).
            ch = await (await ctx.connect()).createChannel();
            ch.on('error', () => undefined);
          }
          if (ready >= n) break;
          if (nowMs() > deadline)
            throw new Error(`the queue reports ${ready} of ${n} ready after the restart`);
          ctx.status(`${ready}/${n} ready`);
          await sleep(POLL_MS);
        }
        const readyMs = nowMs();
        let firstMs = 0;
        await startConsumer(await ctx.connect(), queue, 1, () => {
          firstMs ||= nowMs();
        });
        while (firstMs === 0) {
          if (nowMs() > readyMs + ctx.stallTimeoutMs) throw new Error('no delivery after the restart');
          await sleep(1);
        }
        return {
          metrics: [
            {
              key: 'first',
              label: 'start → first delivery',
              unit: 'ms',
              value: firstMs - startMs,
              better: 'lower',
            },
            {
              key: 'ready',
              label: 'start → all ready',
              unit: 'ms',
              value: readyMs - startMs,
              better: 'lower',
            },
            {
              key: 'listening',
              label: 'start → listening',
              unit: 'ms',
              value: listeningMs - startMs,
              better: 'lower',
            },
            { key: 'stop', label: 'clean stop', unit: 'ms', value: stopMs, better: 'lower' },
            {
              key: 'publish-rate',
              label: 'published',
              unit: 'msg/s',
              value: perSecond(n, published.lastConfirmMs - published.startMs),
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
