import type { ClientChannel, ClientConnection } from './client-connection.ts';

/**
 * The client connections open on this node, by id, whatever protocol each speaks: what the broker
 * finds channels by (queues deliver to owner ids), sums metrics over and tells of node-wide events.
 */
export class ClientConnections {
  readonly #byId = new Map<string, ClientConnection>();

  get size(): number {
    return this.#byId.size;
  }

  add(connection: ClientConnection): void {
    this.#byId.set(connection.id, connection);
  }

  /** False when `connection` was not registered (it closed before its handshake completed). */
  delete(connection: ClientConnection): boolean {
    return this.#byId.delete(connection.id);
  }

  has(connectionId: string): boolean {
    return this.#byId.has(connectionId);
  }

  values(): IterableIterator<ClientConnection> {
    return this.#byId.values();
  }

  /** The open channel with owner id `owner` (`${connectionId}/${channelNumber}`). */
  channel(owner: string): ClientChannel | undefined {
    const slash = owner.lastIndexOf('/');
    return this.#byId.get(owner.slice(0, slash))?.channelFor(Number(owner.slice(slash + 1)));
  }

  /** Every open channel of every connection. */
  *openChannels(): IterableIterator<ClientChannel> {
    for (const connection of this.#byId.values()) yield* connection.openChannels();
  }

  /** The sum of one figure over every connection (metrics). */
  sum(figure: (connection: ClientConnection) => number): number {
    let sum = 0;
    for (const connection of this.#byId.values()) sum += figure(connection);
    return sum;
  }
}
