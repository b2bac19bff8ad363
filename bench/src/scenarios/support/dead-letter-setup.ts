/**
 * The dead-letter topology scenarios c, d and e share: source queue → fanout dead-letter exchange →
 * target queue, with a consumer on the target that acks and records each arrival.
 */
import type { DeadLetterStrategy } from '../../adapters/adapter.ts';
import type { HdrHistogram } from '../../histogram/hdr-histogram.ts';
import type { CaseContext } from '../scenario.ts';
import { ArrivalRecorder } from './arrivals.ts';
import { startConsumer } from './consumer.ts';

/** Prefetch of the consumer on the dead-letter target (as scenario b). */
export const TARGET_PREFETCH = 1000;

export interface DeadLetterTopology {
  readonly source: string;
  readonly exchange: string;
  readonly target: string;
  readonly arrivals: ArrivalRecorder;
}

export interface TopologyOptions {
  readonly strategy: DeadLetterStrategy;
  /** x-message-ttl of the source queue, ms; none when undefined. */
  readonly messageTtlMs?: number;
  /** Messages expected at the target, numbered from 0. */
  readonly count: number;
  /**
   * Called for each first arrival at the target with the message's sequence number, publish and
   * arrival times (ms, bench clock).
   */
  readonly onArrival?: (seq: number, publishedAtMs: number, arrivedAtMs: number) => void;
}

/** Declares the topology and starts the target's consumer. */
export async function deadLetterTopology(ctx: CaseContext, o: TopologyOptions): Promise<DeadLetterTopology> {
  const exchange = await ctx.declareExchange('dlx');
  const target = await ctx.declareQueue('dead');
  await ctx.bind(target, exchange);
  const source = await ctx.declareQueue('source', {
    ...(o.messageTtlMs !== undefined ? { messageTtlMs: o.messageTtlMs } : {}),
    deadLetterExchange: exchange,
    deadLetterStrategy: o.strategy,
  });
  const arrivals = new ArrivalRecorder(o.count);
  const conn = await ctx.connect();
  await startConsumer(conn, target, TARGET_PREFETCH, (msg, ch) => {
    const a = arrivals.record(msg.content);
    ch.ack(msg);
    if (a !== undefined) o.onArrival?.(a.seq, a.publishedAtMs, a.arrivedAtMs);
  });
  return { source, exchange, target, arrivals };
}

/** Records arrival − (publish + ttl) into `h` (µs): how late an expiring message reached the target. */
export function latenessRecorder(h: HdrHistogram, ttlMs: number) {
  return (_seq: number, publishedAtMs: number, arrivedAtMs: number): void => {
    h.record((arrivedAtMs - publishedAtMs - ttlMs) * 1000);
  };
}
