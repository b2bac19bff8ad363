/** Starting a consumer on its own channel, with a prefetch limit. */
import type { BenchChannel, BenchConnection, BenchMessage } from '../../adapters/client-api.ts';

export interface Consumer {
  readonly channel: BenchChannel;
  readonly consumerTag: string;
}

/**
 * Consumes `queue` on a new channel of `conn` with `prefetch` unacknowledged messages at most (0 =
 * unlimited). `onMessage` gets the channel so it can ack or reject.
 */
export async function startConsumer(
  conn: BenchConnection,
  queue: string,
  prefetch: number,
  onMessage: (msg: BenchMessage, channel: BenchChannel) => void,
): Promise<Consumer> {
  const channel = await conn.createChannel();
  channel.on('error', () => {
    // A channel error also rejects the pending operation or shows as a stall; nothing more to do.
  });
  await channel.prefetch(prefetch);
  const { consumerTag } = await channel.consume(queue, (msg) => {
    if (msg !== null) onMessage(msg, channel);
  });
  return { channel, consumerTag };
}
