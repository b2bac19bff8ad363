// Node sockets: the `ws` package.
import WebSocket from 'ws';
import type { SocketFactory, SocketHandlers, SocketOpenOptions, StyxSocket } from './socket.ts';

/** Opens a `ws` WebSocket. Messages arrive as Buffers, so decoded bodies are Buffers too. */
export const openNodeSocket: SocketFactory = (
  url: string,
  handlers: SocketHandlers,
  options: SocketOpenOptions,
): StyxSocket => {
  const ws = new WebSocket(url, {
    // Styx frames are protobuf: compressing them costs CPU for little gain on small messages.
    perMessageDeflate: false,
    maxPayload: options.maxPayload,
    ...options.extra,
  });
  ws.binaryType = 'nodebuffer';
  ws.on('open', () => handlers.open());
  ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
    if (!isBinary) {
      handlers.error(new Error('text WebSocket message from the server; Styx sends binary frames only'));
      ws.close(1003, 'binary frames only');
      return;
    }
    handlers.message(
      Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data),
    );
  });
  ws.on('error', (err: Error) => handlers.error(err));
  ws.on('close', (code: number, reason: Buffer) => handlers.close(code, reason.toString('utf8')));
  return {
    send(data: Uint8Array): void {
      ws.send(data);
    },
    close(code?: number, reason?: string): void {
      ws.close(code, reason);
    },
    get bufferedAmount(): number {
      return ws.bufferedAmount;
    },
  };
};
