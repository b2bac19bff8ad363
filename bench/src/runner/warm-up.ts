/**
 * A short, unmeasured publish-and-consume right after a broker starts, so the first measured case
 * does not pay for the broker's warm-up (code loading, JIT, first log segment): without it the
 * first case of a freshly booted RabbitMQ ran at about half its later rate. Then a few thousand
 * messages dead-lettered by expiry and by rejection under each strategy, so the dead-lettering
 * cases measure the brokers as they run once warm (Styx's dead-letter path is JIT-compiled only
 * after a few thousand messages have taken it: a cold 10k burst ran ~30 % slower than a warm one).
 * Both brokers get the same warm-up.
 */
import type { BrokerAdapter } from '../adapters/adapter.ts';
import { STRATEGIES } from '../adapters/adapter.ts';
import type { BrokerUnderTest } from '../brokers/broker.ts';
import { ArrivalRecorder } from '../scenarios/support/arrivals.ts';
import { startConsumer } from '../scenarios/support/consumer.ts';
import { deadLetterTopology } from '../scenarios/support/dead-letter-setup.ts';
import { publishWithConfirms } from '../scenarios/support/publisher.ts';
import { waitUntil } from '../scenarios/support/wait.ts';
import { TrackedCaseContext } from './case-context.ts';

/** Messages published and consumed by the warm-up. */
export const WARM_UP_MESSAGES = 10_000;
/** Messages dead-lettered by the warm-up per strategy and trigger (expiry, rejection). */
export const WARM_UP_DEAD_LETTERS = 2_500;

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
  for (const strategy of STRATEGIES) {
    for (const trigger of ['expired', 'rejected'] as const) {
      await warmUpDeadLettering(broker, adapter, stallMs, strategy, trigger);
    }
  }
}

/** Dead-letters `WARM_UP_DEAD_LETTERS` messages to a consumed target, by expiry or by rejection. */
async function warmUpDeadLettering(
  broker: BrokerUnderTest,
  adapter: BrokerAdapter,
  stallMs: number,
  strategy: (typeof STRATEGIES)[number],
  trigger: 'expired' | 'rejected',
): Promise<void> {
  const n = WARM_UP_DEAD_LETTERS;
  const ctx = new TrackedCaseContext(broker, adapter, `warm-up-${trigger}-${strategy}`, stallMs, () => {});
  try {
    const topo = await deadLetterTopology(ctx, {
      strategy,
      count: n,
      ...(trigger === 'expired' ? { messageTtlMs: 1 } : {}),
    });
    if (trigger === 'rejected') {
      await startConsumer(await ctx.connect(), topo.source, 1000, (msg, ch) => ch.reject(msg, false));
    }
    await publishWithConfirms(await (await ctx.connect()).createConfirmChannel(), {
      exchange: '',
      routingKey: topo.source,
      count: n,
      window: 1000,
    });
    await waitUntil(() => topo.arrivals.complete, {
      what: `warm-up dead-letters (${trigger}, ${strategy})`,
      progress: () => topo.arrivals.unique,
      expected: n,
      stallMs,
    });
  } catch {
    // A broker without this path: the cases that need it report it (see the probes).
  } finally {
    await ctx.dispose();
  }
}
