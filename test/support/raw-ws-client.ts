// A raw-protocol client for bad-input tests: it sends whatever bytes or frames a test builds (the SDK
// refuses to send most of them) and records every frame the broker answers with, in order.
import type { Frame, FrameOf, Hello, MethodName } from '@styx/client/wire';
import { decodeBatch, encodeBatch, frame, PROTOCOL_VERSION } from '@styx/client/wire';
import WebSocket from 'ws';

/** How long a wait for one frame or for the socket to close may take unless a test says otherwise, ms. */
export const DEFAULT_WAIT_MS = 5_000;

/** How the socket ended. */
export interface SocketEnd {
  readonly code: number;
  readonly reason: string;
}

/** A Hello with guest/guest on '/', the current protocol version and the server's limits. */
export function helloFrame(overrides: Partial<Hello> = {}): FrameOf<'hello'> {
  return frame(0, 'hello', {
    protocolVersion: PROTOCOL_VERSION,
    username: 'guest',
    password: 'guest',
    vhost: '/',
    heartbeatMs: 0,
    frameMax: 0,
    ...overrides,
  });
}

/**
 * One WebSocket to the broker. `received` holds every decoded frame in arrival order; a wait
 * consumes frames from a cursor so consecutive waits see consecutive frames.
 */
export class RawClient {
  readonly received: Frame[] = [];
  /** Binary messages from the broker that did not decode (must stay empty: the broker sends valid batches). */
  readonly undecodable: Error[] = [];
  /** Resolves when the socket closes, however it closes. */
  readonly ended: Promise<SocketEnd>;
  private readonly ws: WebSocket;
  private cursor = 0;
  private waiters: Array<() => void> = [];
  private endedValue: SocketEnd | undefined;

  private constructor(ws: WebSocket) {
    this.ws = ws;
    ws.binaryType = 'nodebuffer';
    ws.on('message', (data: Buffer, isBinary: boolean) => {
      if (!isBinary) {
        this.undecodable.push(new Error(`text message from the broker: ${data.toString('utf8')}`));
        return;
      }
      try {
        this.received.push(...decodeBatch(data));
      } catch (err) {
        this.undecodable.push(err as Error);
      }
      this.wake();
    });
    this.ended = new Promise((resolve) => {
      ws.on('close', (code: number, reason: Buffer) => {
        this.endedValue = { code, reason: reason.toString('utf8') };
        resolve(this.endedValue);
        this.wake();
      });
    });
    // A reset socket also emits 'close'; the error itself is expected in several tests.
    ws.on('error', () => undefined);
  }

  /** Opens a socket (no hello yet). */
  static open(url: string, timeoutMs = DEFAULT_WAIT_MS): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      const client = new RawClient(ws);
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`WebSocket to ${url} did not open within ${timeoutMs} ms`));
      }, timeoutMs);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve(client);
      });
      ws.once('error', (err: Error) => {
        clearTimeout(timer);
        reject(err);
      });
    });
  }

  /** Opens a socket and completes the handshake; returns the client and the HelloOk. */
  static async connect(
    url: string,
    hello: Partial<Hello> = {},
  ): Promise<{ client: RawClient; helloOk: FrameOf<'helloOk'>['helloOk'] }> {
    const client = await RawClient.open(url);
    client.send([helloFrame(hello)]);
    const ok = await client.next('helloOk');
    return { client, helloOk: ok.helloOk };
  }

  /** Sends frames as one WebSocket message (one batch). */
  send(frames: Frame[]): void {
    this.ws.send(encodeBatch(frames), { binary: true });
  }

  /** Sends raw bytes (binary) or a string (a text WebSocket message). */
  sendRaw(data: Uint8Array | string): void {
    this.ws.send(data, { binary: typeof data !== 'string' });
  }

  /** Opens channel `n` and waits for channel-open-ok. */
  async openChannel(n: number): Promise<void> {
    this.send([frame(n, 'channelOpen', {})]);
    await this.next('channelOpenOk', n);
  }

  /**
   * The next received frame (after those already consumed by waits); if `method` is given it must be
   * that method (and on `channel`, if given) — anything else fails the wait with what arrived instead,
   * so an unexpected reply is reported rather than skipped.
   */
  async next<K extends MethodName>(
    method: K,
    channel?: number,
    timeoutMs = DEFAULT_WAIT_MS,
  ): Promise<FrameOf<K>> {
    const what = `${method}${channel === undefined ? '' : ` on channel ${channel}`}`;
    let f = await this.nextAny(timeoutMs, what);
    // Heartbeats may come at any moment; only a wait for one sees them.
    while (f.method === 'heartbeat' && method !== 'heartbeat') f = await this.nextAny(timeoutMs, what);
    if (f.method !== method || (channel !== undefined && f.channel !== channel)) {
      throw new Error(
        `expected ${method}${channel === undefined ? '' : ` on channel ${channel}`}, got ${describeFrame(f)}`,
      );
    }
    return f as unknown as FrameOf<K>;
  }

  /** The next received frame, whatever it is. */
  nextAny(timeoutMs = DEFAULT_WAIT_MS, what = 'a frame'): Promise<Frame> {
    return this.until(
      () => this.cursor < this.received.length,
      timeoutMs,
      () => `waited ${timeoutMs} ms for ${what}; socket ${this.endedValue ? 'closed' : 'open'}`,
    ).then(() => this.received[this.cursor++] as Frame);
  }

  /** Frames received and not yet consumed by a wait, heartbeats left out. */
  unread(): Frame[] {
    return this.received.slice(this.cursor).filter((f) => f.method !== 'heartbeat');
  }

  /** Waits for the socket to close (by either side). */
  waitClosed(timeoutMs = DEFAULT_WAIT_MS): Promise<SocketEnd> {
    return this.until(
      () => this.endedValue !== undefined,
      timeoutMs,
      () =>
        `socket still open after ${timeoutMs} ms; unread frames: ${this.unread().map(describeFrame).join(', ')}`,
    ).then(() => this.endedValue as SocketEnd);
  }

  get isClosed(): boolean {
    return this.endedValue !== undefined;
  }

  /** Stop reading from the TCP socket: the broker's writes back up in its buffers. */
  pauseReading(): void {
    socketOf(this.ws).pause();
  }

  /** Drop the TCP connection without a close handshake. */
  terminate(): void {
    this.ws.terminate();
  }

  private until(ready: () => boolean, timeoutMs: number, explain: () => string): Promise<void> {
    if (ready()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (!ready()) return;
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        reject(new Error(explain()));
      }, timeoutMs);
      this.waiters.push(check);
    });
  }

  private wake(): void {
    for (const waiter of [...this.waiters]) waiter();
  }
}

/** `ws` keeps the TCP socket in a private field; pausing it is the only way to stop reading. */
function socketOf(ws: WebSocket): { pause(): void } {
  const socket = (ws as unknown as { _socket?: { pause(): void } })._socket;
  if (socket === undefined) throw new Error('the WebSocket has no TCP socket (not open?)');
  return socket;
}

/** A frame for error messages: its channel, method and, for closes, code and text. */
export function describeFrame(f: Frame): string {
  if (f.method === 'connectionClose')
    return `connectionClose ${f.connectionClose.replyCode} '${f.connectionClose.replyText}'`;
  if (f.method === 'channelClose')
    return `channelClose(${f.channel}) ${f.channelClose.replyCode} '${f.channelClose.replyText}'`;
  return `${f.method}(${f.channel})`;
}
