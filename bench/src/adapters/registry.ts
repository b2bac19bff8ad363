/** The adapter of each target. */
import type { Target } from '../brokers/broker.ts';
import type { BrokerAdapter } from './adapter.ts';
import { rabbitMqAdapter } from './rabbitmq-adapter.ts';
import { styxAdapter } from './styx-adapter.ts';
import { styxAmqpAdapter } from './styx-amqp-adapter.ts';

export const ADAPTERS: Readonly<Record<Target, BrokerAdapter>> = {
  styx: styxAdapter,
  'styx-amqp': styxAmqpAdapter,
  rabbitmq: rabbitMqAdapter,
};
