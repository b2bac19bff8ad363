// Browser sockets: the global WebSocket (also present in Node >= 22, Deno and Bun).
import type { SocketFactory, SocketHandlers, SocketOpenOptions, StyxSocket } from './socket.ts';

/**
 * Opens a global WebSocket. Browsers cannot cap an incoming message's size, so `maxPayload` is not
 * enforced here; browsers do not expose transport error details either.
 */
export const openBrowserSocket: SocketFactory = (
  url: string,
  handlers: SocketHandlers,
  _options: SocketOpenOptions,
): StyxSocket => {
  const ws = new WebSocket(url);
  ws.binaryType = 'arraybuffer';
  ws.onopen = () => handlers.open();
  ws.onmessage = (ev: MessageEvent) => {
    if (!(ev.data instanceof ArrayBuffer)) {
      handlers.error(new Error('text WebSocket message from the server; Styx sends binary frames only'));
      ws.close();
      return;
    }
    handlers.message(new Uint8Array(ev.data));
  };
  ws.onerror = () => handlers.error(new Error(`WebSocket error on ${url}`));
  ws.onclose = (ev: CloseEvent) => handlers.close(ev.code, ev.reason);
  return {
    send(data: Uint8Array): void {
      ws.send(data);
    },
    close(code?: number, reason?: string): void {
      // Browsers accept only 1000 and 3000-4999 from scripts; anything else would throw.
      if (code === 1000 || (code !== undefined && code >= 3000 && code <= 4999)) ws.close(code, reason);
      else ws.close();
    },
    get bufferedAmount(): number {
      return ws.bufferedAmount;
    },
  };
};
