/**
 * The node's active listeners — the client WebSocket port, the management API, the cluster port —
 * for RabbitMQ's listener health checks (`/api/health/checks/port-listener/{port}`,
 * `/api/health/checks/protocol-listener/{protocol}`) and `styx ctl`. Each server adds its listener
 * once it listens and removes it when it closes.
 */

/** A listener's protocol, under RabbitMQ's names where it has one. */
export type ListenerProtocol = 'styx' | 'styx/ssl' | 'http' | 'https' | 'clustering' | 'amqp' | 'amqp/ssl';

export interface NodeListener {
  readonly protocol: ListenerProtocol;
  readonly host: string;
  readonly port: number;
}

/** The protocol names a client protocol's listener serves. */
export const CLIENT_PROTOCOLS: ReadonlySet<ListenerProtocol> = new Set([
  'styx',
  'styx/ssl',
  'amqp',
  'amqp/ssl',
]);

/**
 * Other names of the protocols, as RabbitMQ's check accepts them (`management`, `http_api`, `ui`
 * for the management API; `amqp091`... for AMQP) and what a Styx user would type for its own.
 */
const ALIASES: Readonly<Record<string, ListenerProtocol>> = {
  styx: 'styx',
  ws: 'styx',
  websocket: 'styx',
  'styx-ws': 'styx',
  // The TLS listeners, under RabbitMQ's `/ssl` suffix (`amqp/ssl`, `http/web-stomp/ssl`).
  'styx/ssl': 'styx/ssl',
  wss: 'styx/ssl',
  styxs: 'styx/ssl',
  https: 'https',
  'management/ssl': 'https',
  http: 'http',
  http1: 'http',
  'http1.1': 'http',
  http_api: 'http',
  management: 'http',
  management_ui: 'http',
  ui: 'http',
  clustering: 'clustering',
  cluster: 'clustering',
  distribution: 'clustering',
  amqp: 'amqp',
  amqp091: 'amqp',
  'amqp0.9.1': 'amqp',
  'amqp0-9-1': 'amqp',
  amqp0_9_1: 'amqp',
  'amqp/ssl': 'amqp/ssl',
  amqps: 'amqp/ssl',
};

/** The protocol a name means (case-insensitive), or the name lowercased when it is none of ours. */
export function normalizeProtocol(name: string): string {
  const lower = name.toLowerCase();
  return ALIASES[lower] ?? lower;
}

export class NodeListeners {
  readonly #listeners: NodeListener[] = [];

  /** Record a listener that is listening now; returns the function that removes it. */
  add(listener: NodeListener): () => void {
    this.#listeners.push(listener);
    return () => {
      const at = this.#listeners.indexOf(listener);
      if (at >= 0) this.#listeners.splice(at, 1);
    };
  }

  /** Every active listener, in the order they started. */
  list(): readonly NodeListener[] {
    return [...this.#listeners];
  }
}
