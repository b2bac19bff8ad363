/**
 * The node's connection gate: who may connect (credentials, loopback-only users, maintenance mode,
 * the vhost), the client connections open here whatever their protocol, and what happens to them
 * together — publishers blocked while a resource alarm (memory, disk) is in effect anywhere in the
 * cluster, the connections of a deleted user or vhost closed. Transports come through it; the
 * broker only wires it to the metadata, the alarms and the queues.
 */
import { Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { canUseVhost } from '../metadata/permissions.ts';
import type { VerifiedLogins } from '../metadata/verified-logins.ts';
import type { BrokerCounters } from '../metrics/broker-counters.ts';
import type { ClientConnection } from './client-connection.ts';
import { ClientConnections } from './client-connections.ts';
import { isLoopbackAddress } from './loopback.ts';
import type { Session } from './session.ts';

export interface ConnectionGateOptions {
  readonly logger: Logger;
  readonly metadata: MetadataMachine;
  readonly logins: VerifiedLogins;
  /** Users who may connect only from a loopback address (RabbitMQ's loopback_users). */
  readonly loopbackUsers: ReadonlySet<string>;
  readonly counters: BrokerCounters;
  /** Throws 320 CONNECTION_FORCED while the node is in maintenance mode. */
  readonly checkAcceptsClients: () => void;
  /** Why publishers are blocked now (an alarm in effect), or undefined. */
  readonly publishBlockReason: () => string | undefined;
  /** A connection closed: release what it owned (its exclusive queues). */
  readonly released: (connectionId: string) => void;
}

/** See the module comment. */
export class ConnectionGate {
  /** The client connections open on this node (registered once authenticated). */
  readonly connections = new ClientConnections();
  readonly #options: ConnectionGateOptions;

  constructor(options: ConnectionGateOptions) {
    this.#options = options;
  }

  /** Both halves at once, for a protocol that names the vhost with the credentials (WebSocket). */
  async authenticate(
    user: string,
    password: string,
    vhost: string,
    remoteAddress: string,
    connectionId: string,
  ): Promise<Session> {
    await this.checkCredentials(user, password, remoteAddress);
    return this.openSession(user, vhost, connectionId);
  }

  /**
   * The first half of `authenticate`, for a protocol that checks who the client is before it
   * names a vhost (AMQP 0-9-1: start-ok, then open): 403 ACCESS_REFUSED unless the credentials
   * are right and the user may connect from `remoteAddress`.
   */
  async checkCredentials(user: string, password: string, remoteAddress: string): Promise<void> {
    const o = this.#options;
    o.checkAcceptsClients();
    const record = o.metadata.user(user);
    // Unknown user and wrong password get the same answer after the same scrypt work (an unknown
    // name is checked against a decoy hash), so names cannot be probed, nor timed. A password
    // verified a moment ago for the same stored hash skips scrypt (a reconnection storm).
    if (!(await o.logins.verify(user, password, record?.passwordHash))) {
      throw new ConnectionError(Code.ACCESS_REFUSED, `login refused: user '${user}' - invalid credentials`);
    }
    if (o.loopbackUsers.has(user) && !isLoopbackAddress(remoteAddress)) {
      throw new ConnectionError(Code.ACCESS_REFUSED, `user '${user}' can only connect via localhost`);
    }
  }

  /** The second half of `authenticate`: 530 NOT_ALLOWED unless `vhost` exists and `user` may use it. */
  openSession(user: string, vhost: string, connectionId: string): Session {
    const metadata = this.#options.metadata;
    if (metadata.vhost(vhost) === undefined) {
      throw new ConnectionError(Code.NOT_ALLOWED, `vhost '${vhost}' not found`);
    }
    if (!canUseVhost(metadata, user, vhost)) {
      throw new ConnectionError(Code.NOT_ALLOWED, `access to vhost '${vhost}' refused for user '${user}'`);
    }
    return { user, vhost, connectionId };
  }

  /** A connection finished its handshake: counted, and blocked at once if an alarm is in effect. */
  opened(connection: ClientConnection): void {
    this.connections.add(connection);
    this.#options.counters.connectionsOpened++;
    const reason = this.#options.publishBlockReason();
    if (reason !== undefined) connection.setMemoryBlocked(true, reason);
  }

  /** A connection closed (one that never opened is ignored). */
  closed(connection: ClientConnection): void {
    if (!this.connections.delete(connection)) return;
    this.#options.counters.connectionsClosed++;
    this.#options.released(connection.id);
  }

  /** This node's open client connections. */
  list(): ClientConnection[] {
    return [...this.connections.values()];
  }

  /** An alarm came or the last one went: tell every connection (publishers are throttled). */
  alarmsChanged(): void {
    const reason = this.#options.publishBlockReason();
    for (const connection of this.connections.values()) {
      connection.setMemoryBlocked(reason !== undefined, reason);
    }
  }

  /**
   * Close this node's connections that `match` with 320 CONNECTION_FORCED and `reason`: those of
   * a user or vhost just deleted, which may no longer act (RabbitMQ closes them too). After the
   * current apply, as a close releases the connection's exclusive queues through the metadata.
   */
  closeWhere(match: (connection: ClientConnection) => boolean, reason: string): void {
    const doomed = this.list().filter(match);
    if (doomed.length === 0) return;
    this.#options.logger.info({ count: doomed.length, reason }, 'closing connections');
    queueMicrotask(() => {
      for (const connection of doomed) connection.close(Code.CONNECTION_FORCED, reason);
    });
  }
}
