// @styx/client for browsers: the same API as the Node entry over the global WebSocket. Message
// content is a Uint8Array (there is no Buffer).

import { connectWith } from './connect/connect.ts';
import type { ConnectOptions, SocketOptions } from './connect/target.ts';
import type { Connection, Platform } from './connection/connection.ts';
import { openBrowserSocket } from './socket/browser-socket.ts';

export * from './api.ts';

const browserPlatform: Platform = {
  openSocket: openBrowserSocket,
  // Typed as Buffer for amqplib compatibility; at run time a Uint8Array (see Content).
  content: (body) => body as Buffer,
  name: typeof navigator === 'undefined' ? 'browser' : `browser ${navigator.userAgent}`,
};

/** Connects to a Styx node over the browser's WebSocket; see the Node entry's connect(). */
export function connect(url?: string | ConnectOptions, socketOptions?: SocketOptions): Promise<Connection> {
  return connectWith(browserPlatform, url, socketOptions);
}
