import type { RequestListener, Server } from 'node:http';
import { createServer } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import type { Broker } from '../../broker/broker.ts';
import type { Logger } from '../../logging/logger.ts';
import type { TlsContext } from '../tls/tls-context.ts';
import type { ConnectionLimits } from './connection.ts';
import { Connection, DEFAULT_CONNECTION_LIMITS } from './connection.ts';

export interface WsServerOptions {
  readonly host: string;
  readonly port: number;
  readonly limits?: Partial<ConnectionLimits>;
  /** Serve wss (TLS, the node's certificate; client certificates when it has a CA), not ws. */
  readonly tls?: TlsContext | undefined;
}

/** Thrown by `listen` when the address cannot be bound (busy port, bad host). */
export class ListenError extends Error {
  readonly code: string;
  constructor(code: string, message: string, cause: unknown) {
    super(message, { cause });
    this.code = code;
    this.name = 'ListenError';
  }
}

/**
 * The client endpoint: WebSocket on an HTTP server. Each socket becomes a `Connection`. Per-message
 * deflate is off: bodies are usually already compact and compression would cost the hot path.
 */
export class WsServer {
  private readonly http: Server | HttpsServer;
  private readonly wss: WebSocketServer;
  private readonly limits: ConnectionLimits;
  private readonly logger: Logger;
  private readonly options: WsServerOptions;

  constructor(broker: Broker, options: WsServerOptions, logger: Logger) {
    this.options = options;
    this.logger = logger.child({ component: 'ws' });
    this.limits = { ...DEFAULT_CONNECTION_LIMITS, ...options.limits };
    const notWebSocket: RequestListener = (_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' });
      res.end('Styx speaks WebSocket here: connect with @styx/client.\n');
    };
    this.http =
      options.tls === undefined
        ? createServer(notWebSocket)
        : options.tls.httpsServer('client', notWebSocket);
    this.wss = new WebSocketServer({
      server: this.http,
      perMessageDeflate: false,
      // Slack above frame_max so an oversized message is answered with a clear 501 FRAME_ERROR by
      // the connection; beyond that, ws drops the socket itself (close code 1009).
      maxPayload: this.limits.frameMax + 1024 * 1024,
    });
    this.wss.on('connection', (ws, req) => {
      // A TLS socket answers its peer's address as a plain one does: the loopback-only rule of
      // `guest` sees where the client really is, over ws and wss alike.
      const remote = req.socket.remoteAddress ?? 'unknown';
      const conn = new Connection(ws, broker, this.limits, remote, this.logger);
      void conn;
    });
    this.wss.on('error', (err) => this.logger.error({ err }, 'websocket server error'));
  }

  /** Bind and listen. Rejects with ListenError on a busy port or an unusable host. */
  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const onError = (err: NodeJS.ErrnoException): void => {
        const where = `${this.options.host}:${this.options.port}`;
        if (err.code === 'EADDRINUSE')
          reject(new ListenError(err.code, `port ${where} is already in use`, err));
        else if (err.code === 'EACCES')
          reject(new ListenError(err.code, `no permission to listen on ${where}`, err));
        else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND')
          reject(new ListenError(err.code, `cannot listen on ${where}: address not available`, err));
        else
          reject(
            new ListenError(err.code ?? 'LISTEN_FAILED', `cannot listen on ${where}: ${err.message}`, err),
          );
      };
      this.http.once('error', onError);
      this.http.listen(this.options.port, this.options.host, () => {
        this.http.off('error', onError);
        resolve(this.http.address() as AddressInfo);
      });
    });
  }

  /** Stop accepting, close every connection (320 CONNECTION_FORCED) and the listener. */
  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.wss.close(() => resolve());
      for (const client of this.wss.clients) client.terminate();
    });
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
