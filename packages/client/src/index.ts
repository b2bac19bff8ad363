// @styx/client for Node: amqplib's promise API (connect, credentials, IllegalOperationError) over
// Styx's protobuf frames on WebSocket, using the `ws` package.

import type { Connect } from './connect/connect.ts';
import { connector } from './connect/connect.ts';
import type { Platform } from './connection/connection.ts';
import { openNodeSocket } from './socket/node-socket.ts';

export * from './api.ts';

const nodePlatform: Platform = {
  openSocket: openNodeSocket,
  // Bodies decode as Buffer views already (the socket hands over Buffers); anything else is wrapped
  // without copying, so content is always a Buffer, as amqplib gives it.
  content: (body) =>
    Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
  name: `Node.JS ${process.version}`,
};

/**
 * Connects to a Styx node, like amqplib's connect(url, socketOptions): `ws://host:port/vhost`,
 * `styx://user:pass@host:port/vhost`, or an `amqp://` URL (port 5680 unless given). Also takes an
 * array of URLs (tried in order) and a `recover` option for a connection that survives the loss of
 * its node (see Connect and RecoveringConnection).
 */
export const connect: Connect = connector(nodePlatform);
