/** b. Consume and ack with prefetch 1,000: msgs/s. */
import type { BenchConnection } from '../adapters/client-api.ts';
import type { CaseContext, CaseOutcome, Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { ArrivalRecorder } from './support/arrivals.ts';
import { nowMs } from './support/clock.ts';
import { startConsumer } from './support/consumer.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { publishWithConfirms } from './support/publisher.ts';
import { waitUntil } from './support/wait.ts';

/** Unacked messages a consumer may hold (the prefetch 1,000). */
export const CONSUME_PREFETCH = 1000;

/**
 * Fills `queue` with `n` messages through node 1 (not measured), then drains it with one consumer
 * acking each message on the connection `consumerConnection` opens (measured).
 */
export async function fillAndDrain(
  ctx: CaseContext,
  queue: string,
  n: number,
  consumerConnection: () => Promise<BenchConnection>,
): Promise<CaseOutcome> {
  const pub = await ctx.connect();
  ctx.status(`filling ${n} messages`);
  await publishWithConfirms(await pub.createConfirmChannel(), {
    exchange: '',
    routingKey: queue,
    count: n,
    window: 1000,
  });
  const arrivals = new ArrivalRecorder(n);
  const conn = await consumerConnection();
  const window = openCpuWindow(ctx);
  const startMs = nowMs();
  await startConsumer(conn, queue, CONSUME_PREFETCH, (msg, ch) => {
    arrivals.record(msg.content);
    ch.ack(msg);
  });
  await waitUntil(() => arrivals.complete, {
    what: 'messages consumed',
    progress: () => arrivals.unique,
    expected: n,
    stallMs: ctx.stallTimeoutMs,
    onPoll: () => ctx.status(`${arrivals.unique}/${n} consumed`),
  });
  const cpu = window.close(n);
  return {
    metrics: withCpuFirst(cpu, [
      {
        key: 'throughput',
        label: 'consumed',
        unit: 'msg/s',
        value: perSecond(n, arrivals.lastMs - startMs),
        better: 'higher',
      },
      {
        key: 'first-delivery',
        label: 'first delivery after consume',
        unit: 'ms',
        value: arrivals.firstMs - startMs,
        better: 'lower',
      },
    ]),
    histograms: [],
    notes: arrivals.notes(),
  };
}

export const consumeAck: Scenario = {
  id: 'b',
  name: 'consume',
  title: 'Consume and ack, prefetch 1,000',
  cases: (sizes) => [
    {
      id: 'b.consume',
      scenario: 'b',
      title: 'consume + ack',
      params: { messages: sizes.consume, prefetch: CONSUME_PREFETCH },
      requires: [],
      async run(ctx) {
        const queue = await ctx.declareQueue('q');
        return fillAndDrain(ctx, queue, sizes.consume, () => ctx.connect());
      },
    },
  ],
};
