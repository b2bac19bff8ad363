/**
 * c. Hot expiry: messages with a 1 s TTL in a queue with a dead-letter exchange and no consumer.
 * Measures dead-letter throughput and lateness = arrival − (publish + TTL).
 *
 * - burst: a consumer that never acks holds every message past its TTL, then its channel closes;
 *   the messages come back already expired and are dead-lettered all at once.
 * - stream: messages are published at full speed (1,000 in flight) or paced (2k and 5k msgs/s) and
 *   expire as they come.
 * Each runs with both dead-letter strategies.
 */
import type { DeadLetterStrategy } from '../adapters/adapter.ts';
import { STRATEGIES } from '../adapters/adapter.ts';
import type { BenchCase, CaseContext, CaseOutcome, Scenario } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { latencyHistogram, recordMs } from './support/arrivals.ts';
import { nowMs, sleep } from './support/clock.ts';
import { startConsumer } from './support/consumer.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { deadLetterTopology, latenessRecorder } from './support/dead-letter-setup.ts';
import { publishWithConfirms } from './support/publisher.ts';
import { waitUntil } from './support/wait.ts';

/** The TTL of every message, ms (the 1 s). */
export const HOT_TTL_MS = 1000;
/** Unconfirmed messages allowed while publishing. */
const WINDOW = 1000;
/** After the last message's TTL has passed, the holder waits this much longer before releasing, ms. */
const RELEASE_MARGIN_MS = 100;
/** Most messages one holder consumer takes (its prefetch; AMQP's prefetch count is 16 bits). */
const MAX_HOLD_PER_CONSUMER = 50_000;
/** The paces of the paced streams, msgs/s. */
export const STREAM_PACES = [2000, 5000] as const;

async function burst(ctx: CaseContext, n: number, strategy: DeadLetterStrategy): Promise<CaseOutcome> {
  const lateness = latencyHistogram();
  const afterRelease = latencyHistogram();
  let releaseMs = 0;
  const record = latenessRecorder(lateness, HOT_TTL_MS);
  const topo = await deadLetterTopology(ctx, {
    strategy,
    messageTtlMs: HOT_TTL_MS,
    count: n,
    onArrival: (seq, published, arrived) => {
      record(seq, published, arrived);
      if (releaseMs > 0) recordMs(afterRelease, arrived - releaseMs);
    },
  });
  // The holders: consumers that never ack, attached before publishing so each message is delivered
  // (and so stops expiring) right after it is enqueued. Prefetch is set explicitly: 0 ("unlimited")
  // means 2,000 on RabbitMQ's quorum queues, and an AMQP prefetch count is at most 65,535, so
  // several consumers share the burst.
  let held = 0;
  const holderCount = Math.ceil(n / MAX_HOLD_PER_CONSUMER);
  const holderConn = await ctx.connect();
  const holders = [];
  for (let i = 0; i < holderCount; i++)
    holders.push(
      await startConsumer(holderConn, topo.source, Math.ceil(n / holderCount), () => {
        held++;
      }),
    );
  const pub = await ctx.connect();
  const progress = { published: 0, confirmed: 0 };
  const ticker = setInterval(() => ctx.status(`${progress.confirmed}/${n} published, ${held} held`), 250);
  let published: Awaited<ReturnType<typeof publishWithConfirms>>;
  try {
    published = await publishWithConfirms(
      await pub.createConfirmChannel(),
      { exchange: '', routingKey: topo.source, count: n, window: WINDOW },
      progress,
    );
    // Every message is either held or already dead-lettered (expired before it could be delivered).
    await waitUntil(() => held + topo.arrivals.unique >= n, {
      what: 'messages held',
      progress: () => held + topo.arrivals.unique,
      expected: n,
      stallMs: ctx.stallTimeoutMs,
    });
  } finally {
    clearInterval(ticker);
  }
  const earlyExpired = topo.arrivals.unique;
  const wait = published.lastPublishMs + HOT_TTL_MS + RELEASE_MARGIN_MS - nowMs();
  if (wait > 0) await sleep(wait);
  // Measured: the dead-lettering of the released burst (the publishing is setup here).
  const window = openCpuWindow(ctx);
  releaseMs = nowMs();
  await Promise.all(holders.map((h) => h.channel.close()));
  await waitUntil(() => topo.arrivals.complete, {
    what: 'dead-lettered messages',
    progress: () => topo.arrivals.unique,
    expected: n,
    stallMs: ctx.stallTimeoutMs,
    onPoll: () => ctx.status(`${topo.arrivals.unique}/${n} dead-lettered`),
  });
  const cpu = window.close(n - earlyExpired);
  const notes = topo.arrivals.notes();
  if (earlyExpired > 0)
    notes.push(`${earlyExpired} messages expired before the holder got them (not part of the burst)`);
  return {
    metrics: withCpuFirst(cpu, [
      {
        key: 'throughput',
        label: 'dead-lettered',
        unit: 'msg/s',
        value: perSecond(n - earlyExpired, topo.arrivals.lastMs - releaseMs),
        better: 'higher',
      },
    ]),
    histograms: [
      { key: 'lateness', label: 'lateness', histogram: lateness },
      { key: 'release', label: 'release → arrival', histogram: afterRelease },
    ],
    notes,
  };
}

async function stream(
  ctx: CaseContext,
  n: number,
  strategy: DeadLetterStrategy,
  pace: number | undefined,
): Promise<CaseOutcome> {
  const lateness = latencyHistogram();
  const topo = await deadLetterTopology(ctx, {
    strategy,
    messageTtlMs: HOT_TTL_MS,
    count: n,
    onArrival: latenessRecorder(lateness, HOT_TTL_MS),
  });
  const pub = await ctx.connect();
  const progress = { published: 0, confirmed: 0 };
  const status = (): void =>
    ctx.status(`${progress.confirmed}/${n} published, ${topo.arrivals.unique}/${n} dead-lettered`);
  const ticker = setInterval(status, 250);
  // Measured: publishing, expiry and dead-lettering of every message.
  const window = openCpuWindow(ctx);
  let published: Awaited<ReturnType<typeof publishWithConfirms>>;
  try {
    published = await publishWithConfirms(
      await pub.createConfirmChannel(),
      {
        exchange: '',
        routingKey: topo.source,
        count: n,
        window: WINDOW,
        ...(pace !== undefined ? { ratePerSecond: pace } : {}),
      },
      progress,
    );
  } finally {
    clearInterval(ticker);
  }
  await waitUntil(() => topo.arrivals.complete, {
    what: 'dead-lettered messages',
    progress: () => topo.arrivals.unique,
    expected: n,
    // The first expiries are due a TTL after publishing began.
    stallMs: ctx.stallTimeoutMs + HOT_TTL_MS,
    onPoll: status,
  });
  const cpu = window.close(n);
  return {
    metrics: withCpuFirst(cpu, [
      {
        key: 'throughput',
        label: 'dead-lettered',
        unit: 'msg/s',
        value: perSecond(n, topo.arrivals.lastMs - topo.arrivals.firstMs),
        better: 'higher',
      },
      {
        key: 'publish-rate',
        label: 'published',
        unit: 'msg/s',
        value: perSecond(n, published.lastConfirmMs - published.startMs),
        better: 'higher',
      },
    ]),
    histograms: [{ key: 'lateness', label: 'lateness', histogram: lateness }],
    notes: topo.arrivals.notes(),
  };
}

export const hotExpiry: Scenario = {
  id: 'c',
  name: 'hot-expiry',
  title: 'Hot expiry: TTL 1 s into a queue with a DLX and no consumers',
  cases(sizes) {
    const cases: BenchCase[] = [];
    for (const strategy of STRATEGIES) {
      const req = [{ kind: 'dead-letter', reason: 'expired', strategy }] as const;
      cases.push({
        id: `c.burst.${strategy}`,
        scenario: 'c',
        title: `burst, ${strategy}`,
        params: { messages: sizes.burst, ttlMs: HOT_TTL_MS, strategy },
        requires: req,
        run: (ctx) => burst(ctx, sizes.burst, strategy),
      });
      cases.push({
        id: `c.stream.full.${strategy}`,
        scenario: 'c',
        title: `stream at full speed, ${strategy}`,
        params: { messages: sizes.stream, ttlMs: HOT_TTL_MS, strategy, window: WINDOW },
        requires: req,
        run: (ctx) => stream(ctx, sizes.stream, strategy, undefined),
      });
      for (const pace of STREAM_PACES) {
        const n = Math.min(sizes.stream, pace * sizes.pacedSeconds);
        cases.push({
          id: `c.stream.${pace / 1000}k.${strategy}`,
          scenario: 'c',
          title: `stream at ${pace / 1000}k msgs/s, ${strategy}`,
          params: { messages: n, ttlMs: HOT_TTL_MS, strategy, pacePerSecond: pace },
          requires: req,
          run: (ctx) => stream(ctx, n, strategy, pace),
        });
      }
    }
    return cases;
  },
};
