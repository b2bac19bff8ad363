/**
 * Where a redrive sends one message (pure). A `source` target sends a message back to the queue it
 * died in last: the queue of its latest dead-lettering, as the message filter reads it
 * (`latestDeath`: its first `x-death` entry, else RabbitMQ 3.13's `x-last-death-queue`, else
 * `x-first-death-queue`), published to the default exchange with that queue's name as routing key.
 * That is what RabbitMQ's "move messages" shovel does, and it reaches that queue only: publishing to
 * the exchange and keys it was first published with could also copy it into other queues bound
 * there, whose consumers already had it. An `exchange` target publishes to that exchange with that
 * routing key, whatever the message.
 */
import type { BasicProperties } from '@styx/client/wire';
import type { RedriveTarget } from '../metadata/redrive-types.ts';
import { latestDeath } from '../queue/message-filter.ts';

/** The exchange and routing key one message is published with. */
export interface RedriveDestination {
  readonly exchange: string;
  readonly routingKey: string;
}

/** Why a message with no known source stays in the dead-letter queue. */
export const NO_SOURCE_QUEUE = 'no x-death header: the queue it died in is unknown';

/** Where `target` sends a message with these properties, or the reason it cannot go anywhere. */
export function destinationOf(
  target: RedriveTarget,
  properties: BasicProperties,
): RedriveDestination | string {
  if (target.kind === 'exchange') return { exchange: target.exchange, routingKey: target.routingKey };
  const queue = latestDeath(properties)?.queue;
  if (queue === undefined || queue === '') return NO_SOURCE_QUEUE;
  return { exchange: '', routingKey: queue };
}
