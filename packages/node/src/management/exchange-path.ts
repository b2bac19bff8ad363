/**
 * How the management API names exchanges in a path: the default exchange '' cannot be a path
 * segment, so it is spelled `amq.default` there, as in RabbitMQ's API. Its own module because both
 * the access rules (access.ts) and the routes (topology-api.ts, management-api.ts) read it.
 */

/** The path segment naming the default exchange '' (as RabbitMQ's API does). */
export const DEFAULT_EXCHANGE_ALIAS = 'amq.default';

/** The exchange a path segment names. */
export function exchangeFromPath(segment: string): string {
  return segment === DEFAULT_EXCHANGE_ALIAS ? '' : segment;
}
