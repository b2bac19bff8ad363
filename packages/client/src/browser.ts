// @styx/client for browsers: the same API as the Node entry over the global WebSocket. Message
// content is a Uint8Array (there is no Buffer).

import type { Connect } from './connect/connect.ts';
import { connector } from './connect/connect.ts';
import type { Platform } from './connection/connection.ts';
import { openBrowserSocket } from './socket/browser-socket.ts';

export * from './api.ts';

const browserPlatform: Platform = {
  openSocket: openBrowserSocket,
  // Typed as Buffer for amqplib compatibility; at run time a Uint8Array (see Content).
  content: (body) => body as Buffer,
  name: typeof navigator === 'undefined' ? 'browser' : `browser ${navigator.userAgent}`,
};

/** Connects to a Styx node over the browser's WebSocket; see the Node entry's connect(). */
export const connect: Connect = connector(browserPlatform);
