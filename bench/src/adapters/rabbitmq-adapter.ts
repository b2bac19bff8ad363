/** RabbitMQ through amqplib (Nagle off): quorum queues, as close to Styx's replicated queues as it gets. */
import { connect } from 'amqplib';
import type { BrokerAdapter } from './adapter.ts';
import { commonQueueArguments } from './adapter.ts';

export const rabbitMqAdapter: BrokerAdapter = {
  target: 'rabbitmq',
  connect(url) {
    return connect(url, { noDelay: true });
  },
  queueOptions(spec) {
    return { durable: true, arguments: { 'x-queue-type': 'quorum', ...commonQueueArguments(spec) } };
  },
};
