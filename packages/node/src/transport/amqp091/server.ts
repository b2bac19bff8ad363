import type { AddressInfo, Server, Socket } from 'node:net';
import { createServer } from 'node:net';
import type { Broker } from '../../broker/broker.ts';
import type { Logger } from '../../logging/logger.ts';
import type { TlsContext } from '../tls/tls-context.ts';
import { ListenError } from '../ws/server.ts';
import type { AmqpConnectionLimits } from './connection.ts';
import { AmqpConnection, DEFAULT_AMQP_LIMITS } from './connection.ts';

export interface AmqpServerOptions {
  readonly host: string;
  readonly port: number;
  readonly limits?: Partial<AmqpConnectionLimits>;
  /** Serve amqps (TLS with the node's certificate; client certificates when it has a CA). */
  readonly tls?: TlsContext | undefined;
}

/** The AMQP 0-9-1 listener (amqp, or amqps with `tls`): each socket becomes an `AmqpConnection`. */
export class AmqpServer {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  private readonly options: AmqpServerOptions;

  constructor(broker: Broker, options: AmqpServerOptions, logger: Logger) {
    this.options = options;
    const log = logger.child({ component: options.tls === undefined ? 'amqp' : 'amqps' });
    const limits = { ...DEFAULT_AMQP_LIMITS, ...options.limits };
    const accept = (socket: Socket): void => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
      new AmqpConnection(socket, broker, limits, log, options.tls !== undefined);
    };
    if (options.tls === undefined) {
      this.server = createServer(accept);
    } else {
      // (tls-context logs a refused handshake.)
      this.server = options.tls.tlsServer('client', accept);
    }
    this.server.on('error', (err) => log.error({ err }, 'AMQP listener error'));
  }

  /** Bind and listen. Rejects with ListenError on a busy port or an unusable host. */
  listen(): Promise<AddressInfo> {
    return new Promise((resolve, reject) => {
      const where = `${this.options.host}:${this.options.port}`;
      const onError = (err: NodeJS.ErrnoException): void => {
        const code = err.code ?? 'LISTEN_FAILED';
        const why =
          code === 'EADDRINUSE'
            ? `port ${where} is already in use`
            : code === 'EACCES'
              ? `no permission to listen on ${where}`
              : `cannot listen on ${where}: ${err.message}`;
        reject(new ListenError(code, `AMQP listener: ${why}`, err));
      };
      this.server.once('error', onError);
      this.server.listen(this.options.port, this.options.host, () => {
        this.server.off('error', onError);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  /** Stop accepting and drop every connection still open (the broker closed them gracefully first). */
  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
