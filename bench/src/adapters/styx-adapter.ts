/** Styx through @styx/client: durable queues (replicated and synced before a confirm). */
import { connect } from '@styx/client';
import type { BrokerAdapter } from './adapter.ts';
import { commonQueueArguments } from './adapter.ts';
import type { BenchConnection } from './client-api.ts';

export const styxAdapter: BrokerAdapter = {
  target: 'styx',
  async connect(url) {
    // The SDK's Connection has amqplib's shape; its typed event emitter is wider than BenchConnection.
    return (await connect(url)) as unknown as BenchConnection;
  },
  queueOptions(spec) {
    return { durable: true, arguments: commonQueueArguments(spec) };
  },
};
