/** RabbitMQ through amqplib (Nagle off): quorum queues, as close to Styx's replicated queues as it gets. */
import { connect } from 'amqplib';
import type { BrokerAdapter } from './adapter.ts';
import { commonQueueArguments } from './adapter.ts';
import type { BenchConnection } from './client-api.ts';

/** amqplib's connect as the bench opens every AMQP connection, whichever broker answers. */
export function connectWithAmqplib(url: string): Promise<BenchConnection> {
  return connect(url, { noDelay: true });
}

export const rabbitMqAdapter: BrokerAdapter = {
  target: 'rabbitmq',
  connect: connectWithAmqplib,
  queueOptions(spec) {
    return { durable: true, arguments: { 'x-queue-type': 'quorum', ...commonQueueArguments(spec) } };
  },
};
