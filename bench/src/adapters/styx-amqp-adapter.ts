/**
 * Styx through amqplib over AMQP 0-9-1: RabbitMQ's client code, connect call included, against
 * Styx's AMQP listener, with the same queues as the SDK column, so the two Styx columns differ only
 * in the protocol and the two amqplib columns only in the broker.
 */
import type { BrokerAdapter } from './adapter.ts';
import { connectWithAmqplib } from './rabbitmq-adapter.ts';
import { styxQueueOptions } from './styx-adapter.ts';

export const styxAmqpAdapter: BrokerAdapter = {
  target: 'styx-amqp',
  connect: connectWithAmqplib,
  queueOptions: styxQueueOptions,
};
