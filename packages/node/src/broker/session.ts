/**
 * Who is acting: the authenticated user, the vhost of the connection, and the connection. Its own
 * module so that the interfaces the broker holds connections through (client-connection.ts) name it
 * without importing broker.ts, which imports them. broker.ts re-exports it for its callers.
 */
export interface Session {
  readonly user: string;
  readonly vhost: string;
  readonly connectionId: string;
  /**
   * The node acting for an administrator, not a client: a definitions import declares what the
   * file holds in any vhost, as RabbitMQ's does, so permission regexes are not checked.
   */
  readonly trusted?: boolean;
}
