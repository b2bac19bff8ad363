// connect(): shared by the Node and browser entries, which differ only in their Platform.
import type { Connection, Platform } from '../connection/connection.ts';
import { Connection as ConnectionClass } from '../connection/connection.ts';
import { backoffPolicy } from './backoff.ts';
import { firstReachable } from './first-reachable.ts';
import type { RecoverOptions } from './recovering-connection.ts';
import { RecoveringConnection } from './recovering-connection.ts';
import type { ConnectOptions, SocketOptions } from './target.ts';
import { resolveTarget } from './target.ts';

/** One node to connect to: an amqplib-style URL or object. */
export type ConnectUrl = string | ConnectOptions;

/** connect()'s options when recovery is on: the socket options plus `recover`. */
export interface RecoveringSocketOptions extends SocketOptions {
  recover: RecoverOptions;
}

/**
 * connect(url | urls, options?). With one URL (or none) and no `recover` option it is amqplib's
 * connect(). With an array, the URLs are tried in the given order (not shuffled) and the first
 * reachable one is used; a 403/530 refusal stops at once; NodesUnreachableError if none answers.
 * With `recover`, it resolves with a RecoveringConnection once `setup` ran on the first connection.
 */
export interface Connect {
  (
    url: ConnectUrl | readonly ConnectUrl[] | undefined,
    options: RecoveringSocketOptions,
  ): Promise<RecoveringConnection>;
  (url?: ConnectUrl | readonly ConnectUrl[], options?: SocketOptions): Promise<Connection>;
}

/**
 * Opens a connection and completes the handshake. Rejects with the transport's error, with
 * 'connect ETIMEDOUT' after socketOptions.timeout ms, or with an Error carrying `code` when the
 * server refuses (e.g. 403 ACCESS_REFUSED for bad credentials, 530 NOT_ALLOWED for an unknown vhost).
 */
export async function connectWith(
  platform: Platform,
  url?: ConnectUrl,
  socketOptions?: SocketOptions,
): Promise<Connection> {
  const target = resolveTarget(url, socketOptions);
  return new ConnectionClass(platform, target, socketOptions)._open();
}

/** connect() for a platform (see Connect). */
export function connector(platform: Platform): Connect {
  function connect(
    url?: ConnectUrl | readonly ConnectUrl[],
    options?: SocketOptions & { recover?: RecoverOptions },
  ): Promise<Connection | RecoveringConnection> {
    const recover = options?.recover;
    if (recover === undefined && !Array.isArray(url))
      return connectWith(platform, url as ConnectUrl, options);
    return connectMany(platform, Array.isArray(url) ? url : [url as ConnectUrl], options, recover);
  }
  return connect as Connect;
}

async function connectMany(
  platform: Platform,
  urls: readonly (ConnectUrl | undefined)[],
  options: SocketOptions | undefined,
  recover: RecoverOptions | undefined,
): Promise<Connection | RecoveringConnection> {
  if (urls.length === 0) throw new TypeError('connect() needs at least one URL');
  // Check every URL now: a typo in the third URL must not wait for the first two nodes to fail.
  for (const url of urls) resolveTarget(url, options);
  const dial = (index: number): Promise<Connection> => connectWith(platform, urls[index], options);
  if (recover === undefined) return (await firstReachable(urls.length, dial)).value;
  const recovering = new RecoveringConnection({
    urlCount: urls.length,
    dial,
    setup: recover.setup,
    backoff: backoffPolicy(recover.minDelayMs, recover.maxDelayMs),
    maxAttempts: recover.maxAttempts ?? Number.POSITIVE_INFINITY,
    random: recover.random ?? Math.random,
  });
  return recovering._start();
}
