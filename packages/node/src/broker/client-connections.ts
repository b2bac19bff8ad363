import type { ClientChannel, ClientConnection } from './client-connection.ts';

/**
 * The client connections open on this node, by id, whatever protocol each speaks: what the broker
 * finds channels by (queues deliver to owner ids), sums metrics over and tells of node-wide events.
 */
export class ClientConnections {
  readonly #byId = new Map<string, ClientConnection>();
  /**
   * Owner ids already taken apart, with their live connection: a queue resolves its consumer's
   * owner on every delivery, and cutting the id and hashing the cut string each time cost about
   * half a microsecond per delivery. The owner string a queue holds is the same object every time,
   * so its hash is cached. Whether the channel is open is still asked each time (channelFor);
   * entries go with their connection.
   */
  readonly #owners = new Map<string, { readonly connection: ClientConnection; readonly number: number }>();

  get size(): number {
    return this.#byId.size;
  }

  add(connection: ClientConnection): void {
    this.#byId.set(connection.id, connection);
  }

  /** False when `connection` was not registered (it closed before its handshake completed). */
  delete(connection: ClientConnection): boolean {
    if (!this.#byId.delete(connection.id)) return false;
    for (const [owner, known] of this.#owners)
      if (known.connection === connection) this.#owners.delete(owner);
    return true;
  }

  has(connectionId: string): boolean {
    return this.#byId.has(connectionId);
  }

  values(): IterableIterator<ClientConnection> {
    return this.#byId.values();
  }

  /** The open channel with owner id `owner` (`${connectionId}/${channelNumber}`). */
  channel(owner: string): ClientChannel | undefined {
    let known = this.#owners.get(owner);
    if (known === undefined) {
      const slash = owner.lastIndexOf('/');
      const connection = this.#byId.get(owner.slice(0, slash));
      if (connection === undefined) return undefined;
      known = { connection, number: Number(owner.slice(slash + 1)) };
      this.#owners.set(owner, known);
    }
    return known.connection.channelFor(known.number);
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
