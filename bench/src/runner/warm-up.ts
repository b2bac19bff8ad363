/**
 * A short, unmeasured publish-and-consume right after a broker starts, so the first measured case
 * does not pay for the broker's warm-up (code loading, JIT, first log segment): without it the
 * first case of a freshly booted RabbitMQ ran at about half its later rate.
 */
import type { BrokerAdapter } from '../adapters/adapter.ts';
import type { BrokerUnderTest } from '../brokers/broker.ts';
import { ArrivalRecorder } from '../scenarios/support/arrivals.ts';
import { startConsumer } from '../scenarios/support/consumer.ts';
import { publishWithConfirms } from '../scenarios/support/publisher.ts';
import { waitUntil } from '../scenarios/support/wait.ts';
import { TrackedCaseContext } from './case-context.ts';

/** Messages published and consumed by the warm-up. */
export const WARM_UP_MESSAGES = 10_000;

/** Warms `broker` up; failures are left for the first case to meet and report. */
export async function warmUp(
  broker: BrokerUnderTest,
  adapter: BrokerAdapter,
  stallMs: number,
): Promise<void> {
  const ctx = new TrackedCaseContext(broker, adapter, 'warm-up', stallMs, () => {});
  try {
    const queue = await ctx.declareQueue('q');
    const arrivals = new ArrivalRecorder(WARM_UP_MESSAGES);
    await startConsumer(await ctx.connect(), queue, 1000, (msg, ch) => {
      arrivals.record(msg.content);
      ch.ack(msg);
    });
    await publishWithConfirms(await (await ctx.connect()).createConfirmChannel(), {
      exchange: '',
      routingKey: queue,
      count: WARM_UP_MESSAGES,
      window: 1000,
    });
    await waitUntil(() => arrivals.complete, {
      what: 'warm-up messages',
      progress: () => arrivals.unique,
      expected: WARM_UP_MESSAGES,
      stallMs,
    });
  } catch {
    // The first case will meet the same trouble and report it with its context.
  } finally {
    await ctx.dispose();
  }
}
