// connect(): shared by the Node and browser entries, which differ only in their Platform.
import type { Connection, Platform } from '../connection/connection.ts';
import { Connection as ConnectionClass } from '../connection/connection.ts';
import type { ConnectOptions, SocketOptions } from './target.ts';
import { resolveTarget } from './target.ts';

/**
 * Opens a connection and completes the handshake. Rejects with the transport's error, with
 * 'connect ETIMEDOUT' after socketOptions.timeout ms, or with an Error carrying `code` when the
 * server refuses (e.g. 403 ACCESS_REFUSED for bad credentials, 530 NOT_ALLOWED for an unknown vhost).
 */
export async function connectWith(
  platform: Platform,
  url?: string | ConnectOptions,
  socketOptions?: SocketOptions,
): Promise<Connection> {
  const target = resolveTarget(url, socketOptions);
  return new ConnectionClass(platform, target, socketOptions)._open();
}
