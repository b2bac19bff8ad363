// The tiny socket abstraction that lets Node (the `ws` package) and browsers (global WebSocket)
// share every line of protocol code. A socket carries whole binary WebSocket messages.

/** What a socket reports; called at most once each for open/close, any number of times for message. */
export interface SocketHandlers {
  open(): void;
  /** One binary WebSocket message. */
  message(data: Uint8Array): void;
  /** The socket is closed (after an error too); no handler runs after this. */
  close(code: number, reason: string): void;
  /** A transport error; close() follows. */
  error(err: Error): void;
}

/** A connected (or connecting) WebSocket, reduced to what the SDK needs. */
export interface StyxSocket {
  /** Queues one binary message. */
  send(data: Uint8Array): void;
  /** Starts a close; handlers.close runs when it completes. */
  close(code?: number, reason?: string): void;
  /** Bytes queued by send() and not yet handed to the network, as WebSocket.bufferedAmount. */
  readonly bufferedAmount: number;
}

/** Options every socket implementation understands. */
export interface SocketOpenOptions {
  /** The largest message accepted from the server, in bytes (enforced where the platform can). */
  maxPayload: number;
  /** Platform-specific extras (Node: options for the `ws` constructor, e.g. TLS `ca`). */
  extra?: Record<string, unknown>;
}

/** Opens a socket to `url` and reports to `handlers`. May throw for a malformed URL. */
export type SocketFactory = (url: string, handlers: SocketHandlers, options: SocketOpenOptions) => StyxSocket;
