/**
 * Declaring many durable queues through one Styx SDK connection, for the stand-alone benchmark
 * scripts (metrics-scrape.ts, failover-storm.ts; the scenarios declare through their adapter).
 */
import type * as styx from '@styx/client';

/**
 * Channels declaring at once: a channel runs one declare at a time (AMQP's synchronous methods),
 * each a metadata commit and a queue group start, so many channels keep the node's batches full.
 */
export const DECLARE_CHANNELS = 64;

export interface DeclareOptions {
  /** The arguments of queue `i` (none when absent). */
  readonly argumentsOf?: (i: number) => Record<string, unknown>;
  /** Called after every 500th declare, with how many are done. */
  readonly onProgress?: (declared: number) => void;
}

/** Declares the durable queues `names` over DECLARE_CHANNELS channels of `conn`; resolves when all exist. */
export async function declareDurableQueues(
  conn: styx.Connection,
  names: readonly string[],
  options: DeclareOptions = {},
): Promise<void> {
  let declared = 0;
  const declarers = await Promise.all(Array.from({ length: DECLARE_CHANNELS }, () => conn.createChannel()));
  await Promise.all(
    declarers.map(async (declarer, k) => {
      for (let i = k; i < names.length; i += DECLARE_CHANNELS) {
        const args = options.argumentsOf?.(i) ?? {};
        await declarer.assertQueue(names[i] as string, { durable: true, arguments: args });
        if (++declared % 500 === 0) options.onProgress?.(declared);
      }
    }),
  );
  await Promise.all(declarers.map((declarer) => declarer.close()));
}
