/** Styx through @styx/client: durable queues (replicated and synced before a confirm). */
import { connect } from '@styx/client';
import type { BrokerAdapter, QueueSpec } from './adapter.ts';
import { commonQueueArguments } from './adapter.ts';
import type { BenchConnection, BenchQueueOptions } from './client-api.ts';

/**
 * Styx's queues for `spec`, whichever protocol declares them: durable, no `x-queue-type` (every
 * Styx queue is a replicated durable queue; it would accept 'quorum' or 'classic' and mean the same).
 */
export function styxQueueOptions(spec: QueueSpec): BenchQueueOptions {
  return { durable: true, arguments: commonQueueArguments(spec) };
}

export const styxAdapter: BrokerAdapter = {
  target: 'styx',
  async connect(url) {
    // The SDK's Connection has amqplib's shape; its typed event emitter is wider than BenchConnection.
    return (await connect(url)) as unknown as BenchConnection;
  },
  queueOptions: styxQueueOptions,
};
