import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectWith } from '../connect/connect.ts';
import { HeartbeatTimeoutError, IllegalOperationError, ServerCloseError } from '../errors.ts';
import { connectFake, FakePeer, helloOk, settle } from '../test-support/fake-peer.ts';
import { SDK_VERSION } from '../version.ts';
import { DEFAULT_FRAME_MAX, decodeBatch, fieldTableToJs, frame } from '../wire/index.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('handshake', () => {
  it('sends Hello with the URL’s credentials, vhost, heartbeat and frameMax, then resolves on HelloOk', async () => {
    const peer = new FakePeer();
    const pending = connectWith(peer.platform, 'styx://alice:s3cret@broker.test:5681/orders?heartbeat=15', {
      clientProperties: { connection_name: 'billing' },
    });
    expect(peer.url).toBe('ws://broker.test:5681/');
    expect(peer.options?.maxPayload).toBe(DEFAULT_FRAME_MAX);
    peer.handlers?.open();
    await settle();
    const hello = peer.takeOne('hello');
    expect(hello.channel).toBe(0);
    expect(hello.hello).toMatchObject({
      protocolVersion: 1,
      username: 'alice',
      password: 's3cret',
      vhost: 'orders',
      heartbeatMs: 15000,
      frameMax: DEFAULT_FRAME_MAX,
    });
    const props = fieldTableToJs(hello.hello.clientProperties);
    expect(props).toMatchObject({ connection_name: 'billing', product: 'styx-client', version: SDK_VERSION });
    expect(props.capabilities).toMatchObject({ publisher_confirms: true, 'basic.nack': true });
    peer.send(helloOk({ heartbeatMs: 0, frameMax: 65536, channelMax: 8, connectionName: 'c-1' }));
    const conn = await pending;
    expect(conn.frameMax).toBe(65536);
    expect(conn.channelMax).toBe(8);
    expect(conn.connectionName).toBe('c-1');
    expect(conn.serverProperties).toEqual({ product: 'styx' });
    expect(conn.connection).toBe(conn);
  });

  it('rejects with the server’s code when the handshake is refused', async () => {
    const peer = new FakePeer();
    const pending = connectWith(peer.platform, 'styx://bad:creds@h/');
    peer.handlers?.open();
    await settle();
    peer.take();
    peer.send(
      frame(0, 'connectionClose', {
        replyCode: 403,
        replyText: 'ACCESS_REFUSED - Login was refused',
        failingChannel: 0,
        failingMethod: 'hello',
      }),
    );
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerCloseError);
    expect((err as ServerCloseError).code).toBe(403);
    expect((err as Error).message).toBe(
      'Handshake terminated by server: 403 (ACCESS-REFUSED) with message "ACCESS_REFUSED - Login was refused"',
    );
    expect(peer.closed).not.toBeNull();
  });

  it('rejects when the socket fails or closes during the handshake', async () => {
    const failing = new FakePeer();
    const p1 = connectWith(failing.platform, 'ws://h/');
    failing.handlers?.error(new Error('connect ECONNREFUSED 127.0.0.1:5680'));
    await expect(p1).rejects.toThrow('ECONNREFUSED');

    const closing = new FakePeer();
    const p2 = connectWith(closing.platform, 'ws://h/');
    closing.handlers?.open();
    closing.handlers?.close(1006, '');
    await expect(p2).rejects.toThrow('Socket closed abruptly during opening handshake');
  });

  it('times out after socketOptions.timeout ms', async () => {
    vi.useFakeTimers();
    const peer = new FakePeer();
    const pending = connectWith(peer.platform, 'ws://h/', { timeout: 500 });
    const caught = pending.catch((e: unknown) => e);
    vi.advanceTimersByTime(500);
    expect(await caught).toMatchObject({ message: 'connect ETIMEDOUT' });
  });

  it('rejects a connect() with a malformed URL', async () => {
    await expect(connectWith(new FakePeer().platform, 'nope://h')).rejects.toThrow(/protocol/);
  });
});

describe('connection events and close', () => {
  it('closes with a handshake, then refuses operations', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const events: string[] = [];
    conn.on('close', (err) => events.push(`close:${err === undefined ? 'clean' : err.message}`));
    const closing = conn.close();
    const close = peer.takeOne('connectionClose');
    expect(close.connectionClose).toMatchObject({ replyCode: 200, replyText: 'Cheers, thanks' });
    await expect(conn.close()).rejects.toThrow(IllegalOperationError);
    peer.send(frame(0, 'connectionCloseOk', {}));
    await closing;
    expect(events).toEqual(['close:clean']);
    expect(peer.closed).not.toBeNull();
    await expect(conn.createChannel()).rejects.toThrow('Connection closed (by client)');
  });

  it('emits error and close when the server closes the connection with an error', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const events: string[] = [];
    conn.on('error', (err) => events.push(`error:${(err as ServerCloseError).code}`));
    conn.on('close', (err) => events.push(`close:${err?.message}`));
    peer.send(
      frame(0, 'connectionClose', {
        replyCode: 541,
        replyText: 'INTERNAL_ERROR',
        failingChannel: 0,
        failingMethod: '',
      }),
    );
    expect(peer.takeOne('connectionCloseOk').channel).toBe(0);
    expect(events).toEqual([
      'error:541',
      'close:Connection closed: 541 (INTERNAL-ERROR) with message "INTERNAL_ERROR"',
    ]);
  });

  it('reports a forced close (320) only as close, as amqplib does', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const events: string[] = [];
    conn.on('error', () => events.push('error'));
    conn.on('close', (err) => events.push(`close:${(err as ServerCloseError).code}`));
    peer.send(
      frame(0, 'connectionClose', {
        replyCode: 320,
        replyText: 'shutdown',
        failingChannel: 0,
        failingMethod: '',
      }),
    );
    expect(events).toEqual(['close:320']);
  });

  it('emits blocked and unblocked', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const events: string[] = [];
    conn.on('blocked', (reason) => events.push(`blocked:${reason}`));
    conn.on('unblocked', () => events.push('unblocked'));
    peer.send(
      frame(0, 'connectionBlocked', { reason: 'low on memory' }),
      frame(0, 'connectionUnblocked', {}),
    );
    expect(events).toEqual(['blocked:low on memory', 'unblocked']);
  });

  it('treats an unexpected socket close as an error', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const events: string[] = [];
    conn.on('error', (err) => events.push(`error:${err.message}`));
    conn.on('close', (err) => events.push(`close:${err?.message}`));
    peer.handlers?.close(1006, '');
    expect(events).toEqual(['error:Unexpected close', 'close:Unexpected close']);
  });

  it('closes the connection with 502 semantics on undecodable bytes from the server', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const errors: unknown[] = [];
    conn.on('error', (err) => errors.push(err));
    peer.sendBytes(new Uint8Array([0xff, 0xff, 0xff]));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ name: 'WireError', code: 502 });
  });

  it('closes the connection with 504 on a frame for an unknown channel', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer);
    const errors: unknown[] = [];
    conn.on('error', (err) => errors.push(err));
    peer.send(frame(9, 'basicAck', { deliveryTag: 1, multiple: false }));
    expect(errors[0]).toMatchObject({ code: 504 });
    expect(peer.takeOne('connectionClose').connectionClose.replyCode).toBe(504);
  });

  it('throws an unheard connection error, as an EventEmitter does', async () => {
    const peer = new FakePeer();
    await connectFake(peer);
    expect(() => peer.handlers?.close(1006, '')).toThrow('Unexpected close');
  });
});

describe('heartbeats', () => {
  it('sends heartbeats when idle and declares the connection dead after two silent intervals', async () => {
    vi.useFakeTimers();
    const peer = new FakePeer();
    const pending = connectWith(peer.platform, 'ws://h/', { heartbeat: 10 });
    peer.handlers?.open();
    await vi.advanceTimersByTimeAsync(0);
    expect(peer.takeOne('hello').hello.heartbeatMs).toBe(10_000);
    peer.send(helloOk({ heartbeatMs: 10_000 }));
    const conn = await pending;
    expect(conn.heartbeat).toBe(10);
    const events: string[] = [];
    conn.on('error', (err) => events.push(`error:${err.constructor.name}`));
    conn.on('close', () => events.push('close'));
    // t=5s: Hello went out in the last half interval, so no heartbeat yet; t=10s: idle, so one.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(peer.take()).toEqual([]);
    await vi.advanceTimersByTimeAsync(5_000);
    expect(peer.take().map((f) => f.method)).toEqual(['heartbeat']);
    peer.send(frame(0, 'heartbeat', {}));
    // t=20s: heard from the server; t=30s: one silent interval, still alive.
    await vi.advanceTimersByTimeAsync(20_000);
    expect(events).toEqual([]);
    // t=40s: two silent intervals in a row.
    await vi.advanceTimersByTimeAsync(10_000);
    expect(events).toEqual([`error:${HeartbeatTimeoutError.name}`, 'close']);
  });
});

describe('batching', () => {
  it('sends what one tick produced as one message, split by the negotiated frameMax', async () => {
    const peer = new FakePeer();
    const conn = await connectFake(peer, 'ws://h/', {}, helloOk({ frameMax: 2048 }));
    const opening = conn.createChannel();
    await settle();
    peer.takeOne('channelOpen');
    peer.send(frame(1, 'channelOpenOk', {}));
    const ch = await opening;
    const before = peer.batches.length;
    for (let i = 0; i < 3; i++) ch.sendToQueue('q', Buffer.alloc(100));
    await settle();
    expect(peer.batches.length - before).toBe(1);
    for (let i = 0; i < 40; i++) ch.sendToQueue('q', Buffer.alloc(200, i));
    await settle();
    const batches = peer.batches.slice(before + 1);
    expect(batches.length).toBeGreaterThan(1);
    for (const b of batches) expect(b.length).toBeLessThanOrEqual(2048);
    const bodies = batches
      .flatMap((b) => decodeBatch(b))
      .map((f) => (f.method === 'basicPublish' ? f.basicPublish.body[0] : -1));
    expect(bodies).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(() => ch.sendToQueue('q', Buffer.alloc(4096))).toThrow(/exceeds the negotiated frameMax of 2048/);
  });
});
