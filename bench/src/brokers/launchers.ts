/** How each target's broker is started on N nodes. */
import type { BrokerUnderTest, Target } from './broker.ts';
import { startRabbitMq } from './rabbitmq-broker.ts';
import { startStyx } from './styx-broker.ts';

export const LAUNCHERS: Readonly<Record<Target, (nodes: number) => Promise<BrokerUnderTest>>> = {
  styx: (nodes) => startStyx(nodes, 'styx'),
  'styx-amqp': (nodes) => startStyx(nodes, 'styx-amqp'),
  rabbitmq: startRabbitMq,
};
