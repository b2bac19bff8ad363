// The two socket implementations over a real loopback WebSocket, against a scripted peer (ws's
// WebSocketServer answering a fixed script: this is not a broker).
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { connect as connectBrowser } from '../browser.ts';
import { connect as connectNode } from '../index.ts';
import type { Frame } from '../wire/index.ts';
import { decodeBatch, encodeBatch, frame } from '../wire/index.ts';

let server: WebSocketServer;
let port = 0;
const received: Frame[] = [];

/** Answers each request of the script; records everything. */
function answer(f: Frame): Frame[] {
  switch (f.method) {
    case 'hello':
      return [
        frame(0, 'helloOk', {
          heartbeatMs: 0,
          frameMax: 1 << 20,
          channelMax: 0,
          connectionName: `for ${f.hello.username}`,
          serverProperties: { entries: [] },
        }),
      ];
    case 'channelOpen':
      return [frame(f.channel, 'channelOpenOk', {})];
    case 'basicGet':
      return [
        frame(f.channel, 'basicGetOk', {
          deliveryTag: 1,
          redelivered: false,
          exchange: '',
          routingKey: f.basicGet.queue,
          messageCount: 0,
          properties: { contentType: 'text/plain' },
          body: new TextEncoder().encode(`from ${f.basicGet.queue}`),
        }),
      ];
    case 'channelClose':
      return [frame(f.channel, 'channelCloseOk', {})];
    case 'connectionClose':
      return [frame(0, 'connectionCloseOk', {})];
    default:
      return [];
  }
}

beforeAll(async () => {
  server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  port = (server.address() as AddressInfo).port;
  server.on('connection', (ws) => {
    ws.on('message', (data: Buffer) => {
      const replies = decodeBatch(data).flatMap((f) => {
        received.push(f);
        return answer(f);
      });
      if (replies.length > 0) ws.send(encodeBatch(replies));
    });
  });
});

afterAll(async () => {
  for (const client of server.clients) client.terminate();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

describe.each([
  ['node (ws)', connectNode, true],
  ['browser (global WebSocket)', connectBrowser, false],
] as const)('%s socket', (_name, connect, buffers) => {
  it('handshakes, round-trips frames and closes', async () => {
    const conn = await connect(`styx://tester:pw@127.0.0.1:${port}/`);
    expect(conn.connectionName).toBe('for tester');
    const ch = await conn.createChannel();
    ch.sendToQueue('q', new TextEncoder().encode('hello'));
    const msg = await ch.get('inbox');
    if (msg === false) throw new Error('expected a message');
    expect(new TextDecoder().decode(msg.content)).toBe('from inbox');
    expect(Buffer.isBuffer(msg.content)).toBe(buffers);
    expect(msg.properties.contentType).toBe('text/plain');
    const published = received.filter((f) => f.method === 'basicPublish').at(-1);
    expect(
      published?.method === 'basicPublish' && new TextDecoder().decode(published.basicPublish.body),
    ).toBe('hello');
    await ch.close();
    const closed = new Promise((resolve) => conn.once('close', resolve));
    await conn.close();
    expect(await closed).toBeUndefined();
  });

  it('rejects when nothing listens on the port', async () => {
    const idle = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => idle.once('listening', () => resolve()));
    const freePort = (idle.address() as AddressInfo).port;
    await new Promise<void>((resolve) => idle.close(() => resolve()));
    await expect(connect(`ws://127.0.0.1:${freePort}/`)).rejects.toThrow();
  });
});
