// Test support: a fake socket that plays the server's side of a connection by hand. Tests decode
// what the SDK sent and inject the frames a server would answer with. Not a server: it answers
// nothing by itself.

import type { Channel, ConfirmChannel } from '../channel/channel.ts';
import { connectWith } from '../connect/connect.ts';
import type { ConnectOptions, SocketOptions } from '../connect/target.ts';
import type { Connection, Platform } from '../connection/connection.ts';
import type { SocketFactory, SocketHandlers, SocketOpenOptions } from '../socket/socket.ts';
import type { Frame, FrameOf, MethodName } from '../wire/index.ts';
import { decodeBatch, encodeBatch, frame } from '../wire/index.ts';

/** Lets queued microtasks (the SDK's flushes) and promise continuations run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** One fake socket and everything the SDK did with it. */
export class FakePeer {
  url = '';
  options: SocketOpenOptions | null = null;
  handlers: SocketHandlers | null = null;
  /** Every batch the SDK sent, raw. */
  readonly batches: Uint8Array[] = [];
  /** Frames sent and not yet taken by take(). */
  #unread: Frame[] = [];
  /** What the fake socket reports as WebSocket.bufferedAmount. */
  bufferedAmount = 0;
  closed: { code?: number; reason?: string } | null = null;

  readonly factory: SocketFactory = (url, handlers, options) => {
    this.url = url;
    this.handlers = handlers;
    this.options = options;
    const peer = this;
    return {
      send(data: Uint8Array): void {
        peer.batches.push(data);
        peer.#unread.push(...decodeBatch(data));
      },
      close(code?: number, reason?: string): void {
        peer.closed = { code, reason };
      },
      get bufferedAmount(): number {
        return peer.bufferedAmount;
      },
    };
  };

  readonly platform: Platform = {
    openSocket: this.factory,
    content: (body) =>
      Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    name: 'test',
  };

  /** Frames sent since the last take(), in order. */
  take(): Frame[] {
    const frames = this.#unread;
    this.#unread = [];
    return frames;
  }

  /** Takes exactly one frame, of the given method. */
  takeOne<K extends MethodName>(method: K): FrameOf<K> {
    const frames = this.take();
    if (frames.length !== 1 || frames[0]?.method !== method) {
      throw new Error(`expected one ${method}, got ${frames.map((f) => f.method).join(', ') || 'nothing'}`);
    }
    return frames[0] as unknown as FrameOf<K>;
  }

  /** The server sends these frames as one batch (as a Buffer, like `ws` delivers). */
  send(...frames: Frame[]): void {
    this.handlers?.message(Buffer.from(encodeBatch(frames)));
  }

  /** Raw bytes from the server. */
  sendBytes(bytes: Uint8Array): void {
    this.handlers?.message(bytes);
  }
}

/** The HelloOk a server might send. */
export function helloOk(overrides: Partial<FrameOf<'helloOk'>['helloOk']> = {}): Frame {
  return frame(0, 'helloOk', {
    heartbeatMs: 0,
    frameMax: 1 << 20,
    channelMax: 0,
    connectionName: 'test-conn',
    serverProperties: { entries: [{ key: 'product', value: { longStr: 'styx' } }] },
    ...overrides,
  });
}

/** Connects through a fake peer and completes the handshake. */
export async function connectFake(
  peer: FakePeer,
  url: string | ConnectOptions = 'styx://user:secret@broker.test:5680/prod',
  socketOptions?: SocketOptions,
  ok: Frame = helloOk(),
): Promise<Connection> {
  const pending = connectWith(peer.platform, url, socketOptions);
  peer.handlers?.open();
  await settle();
  peer.takeOne('hello');
  peer.send(ok);
  return pending;
}

/** Opens a channel through a fake peer, answering ChannelOpen. */
export async function openChannel(peer: FakePeer, conn: Connection): Promise<Channel> {
  const opening = conn.createChannel();
  await settle();
  const open = peer.takeOne('channelOpen');
  peer.send(frame(open.channel, 'channelOpenOk', {}));
  return opening;
}

/** Opens a confirm channel through a fake peer, answering ChannelOpen and ConfirmSelect. */
export async function openConfirmChannel(peer: FakePeer, conn: Connection): Promise<ConfirmChannel> {
  const opening = conn.createConfirmChannel();
  await settle();
  const open = peer.takeOne('channelOpen');
  peer.send(frame(open.channel, 'channelOpenOk', {}));
  await settle();
  peer.takeOne('confirmSelect');
  peer.send(frame(open.channel, 'confirmSelectOk', {}));
  return opening;
}
