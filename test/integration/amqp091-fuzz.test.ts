// Mutated replays of a real AMQP 0-9-1 session at a real node (issue 27 item 7). A session of
// amqplib, RabbitMQ's own Node client (connect, declare a DLX and its queues, publish with confirms,
// consume, ack, reject into the DLX, purge, close), is recorded once, client→server, at a loopback
// proxy. Then thousands of seeded mutations of those bytes — bit flips, truncations, inserted and
// deleted bytes, frame sizes altered, frame-end and frame-type octets wrong — are replayed at the
// AMQP port, many at a time, for a bounded time, while a healthy amqplib publisher (confirms) and
// consumer work beside them. The node must stay up, answer each mutated connection with a valid
// AMQP close (or the protocol header, or nothing while it waits for the rest of a frame), never an
// internal error, and the healthy clients must lose nothing and see no error.
import type { AddressInfo, Socket } from 'node:net';
import { createServer, connect as tcpConnect } from 'node:net';
import { amqp091, seededRandom } from '@styx/node';
import type { ChannelModel, ConsumeMessage } from 'amqplib';
import amqp from 'amqplib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BrokerProcess } from '../support/broker-process.ts';
import { startBroker } from '../support/broker-process.ts';
import { eventually } from '../support/eventually.ts';

/** Wall-clock budget of the replay, ms. */
const FUZZ_MS = 20_000;
/** Mutated connections open at once. */
const CONCURRENCY = 40;
/** A mutated connection the node neither closed nor answered for this long is waiting for bytes. */
const QUIET_MS = 250;
/** After our connection.close-ok, the node must close the socket within this, ms. */
const CLOSE_BOUND_MS = 5_000;
const SEED = Number(process.env.STYX_FUZZ_SEED ?? 0x5717);

/** Reply codes a connection.close may carry for bad input (541 INTERNAL_ERROR would be a bug). */
const CONNECTION_CODES = new Set([320, 402, 403, 501, 502, 503, 504, 505, 506, 530, 540]);
/** Reply codes a channel.close may carry for bad input. */
const CHANNEL_CODES = new Set([311, 312, 313, 403, 404, 405, 406, 530, 540]);

let broker: BrokerProcess;
let port: number;
const opened: ChannelModel[] = [];

beforeAll(async () => {
  broker = await startBroker({ amqp: true });
  port = Number(new URL(broker.amqpUrl as string).port);
});

afterAll(async () => {
  for (const c of opened) await c.close().catch(() => undefined);
  await broker?.stop();
  await broker?.cleanup();
});

async function amqplibConnect(url: string): Promise<ChannelModel> {
  const connection = await amqp.connect(`${url.replace('://', '://guest:guest@')}?heartbeat=0`);
  opened.push(connection);
  return connection;
}

/** amqplib's session through a loopback proxy; returns every byte it sent, in order. */
async function recordSession(): Promise<Buffer> {
  const sent: Buffer[] = [];
  const proxy = createServer((client) => {
    const upstream = tcpConnect(port, '127.0.0.1');
    client.on('data', (chunk: Buffer) => {
      sent.push(Buffer.from(chunk));
      upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const proxyPort = (proxy.address() as AddressInfo).port;
  const connection = await amqp.connect(`amqp://guest:guest@127.0.0.1:${proxyPort}?heartbeat=0`);
  const ch = await connection.createConfirmChannel();
  await ch.assertExchange('fuzz-dlx', 'fanout', { durable: true });
  await ch.assertQueue('fuzz-dead', { durable: true });
  await ch.bindQueue('fuzz-dead', 'fuzz-dlx', '');
  await ch.assertQueue('fuzz-work', { durable: true, deadLetterExchange: 'fuzz-dlx' });
  await ch.prefetch(2);
  // Headers of several field types, and a body over frame_max (several body frames).
  ch.sendToQueue('fuzz-work', Buffer.from('first'), {
    messageId: 'm1',
    headers: { n: 7, big: 2 ** 40, s: 'text', f: 1.5, yes: true, list: [1, 'two'], nested: { a: 1 } },
  });
  ch.sendToQueue('fuzz-work', Buffer.alloc(6000, 0x61), { messageId: 'm2', persistent: true });
  await ch.waitForConfirms();
  const got: ConsumeMessage[] = [];
  const all = new Promise<void>((resolve) => {
    void ch.consume('fuzz-work', (m) => {
      if (m === null) return;
      got.push(m);
      if (got.length === 2) resolve();
    });
  });
  await all;
  ch.ack(got[0] as ConsumeMessage);
  ch.reject(got[1] as ConsumeMessage, false);
  await eventually('the rejected message in fuzz-dead', async () => {
    return (await ch.checkQueue('fuzz-dead')).messageCount === 1;
  });
  await ch.purgeQueue('fuzz-dead');
  await ch.close();
  await connection.close();
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
  return Buffer.concat(sent);
}

interface FrameAt {
  /** Offset of the frame's type octet in the session. */
  readonly at: number;
  readonly size: number;
}

/** The frames of a recorded session (after its 8-byte protocol header). */
function framesOf(session: Buffer): FrameAt[] {
  const frames: FrameAt[] = [];
  let at = amqp091.PROTOCOL_HEADER.length;
  while (at + 7 <= session.length) {
    const size = session.readUInt32BE(at + 3);
    frames.push({ at, size });
    at += 8 + size;
  }
  expect(at).toBe(session.length);
  return frames;
}

interface Mutation {
  readonly kind: string;
  readonly bytes: Buffer;
  /** The connection.close code the node must answer with, when the mutation decides it. */
  readonly expectCode?: number;
}

/** One seeded mutation of the session. */
function mutate(session: Buffer, frames: FrameAt[], rnd: () => number): Mutation {
  const int = (n: number): number => Math.floor(rnd() * n);
  const frame = frames[int(frames.length)] as FrameAt;
  const bytes = Buffer.from(session);
  switch (int(8)) {
    case 0: {
      const flips = 1 + int(3);
      for (let i = 0; i < flips; i++) {
        // Within a frame picked at random, so method frames are hit as often as the long body.
        const f = frames[int(frames.length)] as FrameAt;
        const at = f.at + int(8 + f.size);
        bytes[at] = (bytes[at] as number) ^ (1 << int(8));
      }
      return { kind: `flip ${flips} bit(s)`, bytes };
    }
    case 1: {
      const cut = int(bytes.length);
      return { kind: `truncate at ${cut}`, bytes: bytes.subarray(0, cut) };
    }
    case 2: {
      const at = int(bytes.length);
      const extra = Buffer.from(Array.from({ length: 1 + int(8) }, () => int(256)));
      return {
        kind: `insert ${extra.length} at ${at}`,
        bytes: Buffer.concat([bytes.subarray(0, at), extra, bytes.subarray(at)]),
      };
    }
    case 3: {
      const at = int(bytes.length);
      const n = 1 + int(8);
      return {
        kind: `delete ${n} at ${at}`,
        bytes: Buffer.concat([bytes.subarray(0, at), bytes.subarray(at + n)]),
      };
    }
    case 4: {
      const end = frame.at + 7 + frame.size;
      bytes[end] = (0xce + 1 + int(255)) & 0xff;
      return { kind: `frame-end of frame at ${frame.at}`, bytes, expectCode: 501 };
    }
    case 5: {
      const invalid = [0, 4, 5, 6, 7, 8, 9, 0x41, 0xce, 0xff];
      bytes[frame.at] = invalid[int(invalid.length)] as number;
      return { kind: `type ${bytes[frame.at]} of frame at ${frame.at}`, bytes, expectCode: 501 };
    }
    case 6: {
      // A size far over any frame_max (up to 4 GiB): refused before anything is allocated.
      const size = 0x10_0000 + int(0xffef_ffff);
      bytes.writeUInt32BE(size, frame.at + 3);
      return { kind: `size ${size} of frame at ${frame.at}`, bytes, expectCode: 501 };
    }
    default: {
      const delta = 1 + int(16);
      const size = Math.max(0, frame.size + (rnd() < 0.5 ? -delta : delta));
      bytes.writeUInt32BE(size, frame.at + 3);
      return { kind: `size ${frame.size}→${size} of frame at ${frame.at}`, bytes };
    }
  }
}

type Outcome =
  | { kind: 'header' }
  | { kind: 'close'; code: number; text: string; channelCodes: number[] }
  | { kind: 'close-ok'; channelCodes: number[] }
  | { kind: 'waiting'; channelCodes: number[] }
  | { kind: 'dropped'; channelCodes: number[] };

/**
 * Replays `bytes` on a fresh connection and says how the node answered. `quietMs`: how long the
 * node may stay silent before the connection counts as waiting for more bytes (longer when a
 * close is due, so a loaded node is not mistaken for one that never answers).
 */
async function replay(bytes: Buffer, quietMs = QUIET_MS): Promise<Outcome> {
  const socket: Socket = tcpConnect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const received: Buffer[] = [];
  let closed = false;
  let lastData = Date.now();
  const closedP = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.on('data', (chunk: Buffer) => {
    received.push(chunk);
    lastData = Date.now();
  });
  await new Promise<void>((resolve) => socket.once('connect', resolve).once('close', resolve));
  socket.write(bytes);
  lastData = Date.now();
  // Until the node closes, or its answer has stopped for QUIET_MS.
  while (!closed && Date.now() - lastData < quietMs) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    if (connectionClose(received) !== undefined) break;
  }
  const out = Buffer.concat(received);
  if (out.subarray(0, 4).toString('latin1') === 'AMQP') {
    await closedP;
    expect(out).toEqual(amqp091.PROTOCOL_HEADER);
    return { kind: 'header' };
  }
  const commands = commandsOf(out);
  const channelCodes = commands
    .filter((c) => c.method.name === 'channel.close')
    .map((c) => (c.method.args as { replyCode: number }).replyCode);
  const close = commands.find((c) => c.channel === 0 && c.method.name === 'connection.close');
  if (close !== undefined) {
    const args = close.method.args as { replyCode: number; replyText: string };
    // Our close-ok; the node closes the socket (at once when the framing was lost).
    socket.write(amqp091.encodeMethodFrame(0, { name: 'connection.close-ok', args: {} }));
    const bounded = await Promise.race([
      closedP.then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CLOSE_BOUND_MS)),
    ]);
    socket.destroy();
    expect(bounded, 'the node closes the socket after connection.close-ok').toBe(true);
    return { kind: 'close', code: args.replyCode, text: args.replyText, channelCodes };
  }
  socket.destroy();
  if (commands.some((c) => c.channel === 0 && c.method.name === 'connection.close-ok')) {
    return { kind: 'close-ok', channelCodes };
  }
  return { kind: closed ? 'dropped' : 'waiting', channelCodes };
}

type Command = Exclude<amqp091.AmqpCommand, { kind: 'heartbeat' }>;

/** The server's commands in `bytes` (a trailing partial frame is left out). */
function commandsOf(bytes: Buffer): Command[] {
  const parser = new amqp091.FrameParser({ frameMax: 1 << 24 });
  const assembler = new amqp091.CommandAssembler();
  const commands: Command[] = [];
  parser.push(bytes, (frame) => {
    const command = assembler.push(frame);
    if (command !== undefined && command.kind !== 'heartbeat') commands.push(command);
  });
  return commands;
}

function connectionClose(received: Buffer[]): Command | undefined {
  if (received.length === 0) return undefined;
  const out = Buffer.concat(received);
  if (out[0] === 0x41) return undefined;
  try {
    return commandsOf(out).find((c) => c.channel === 0 && c.method.name === 'connection.close');
  } catch {
    return undefined;
  }
}

/** A healthy publisher (confirms) and consumer on their own connections, for the whole replay. */
async function healthyClients(): Promise<{
  stop: () => Promise<{ sent: string[]; got: string[]; errors: unknown[] }>;
}> {
  const errors: unknown[] = [];
  const pub = await amqplibConnect(broker.amqpUrl as string);
  const sub = await amqplibConnect(broker.amqpUrl as string);
  for (const c of [pub, sub]) {
    c.on('error', (err: unknown) => errors.push(err));
    c.on('close', () => errors.push(new Error('healthy connection closed')));
    c.on('blocked', (reason: unknown) => errors.push(new Error(`blocked: ${String(reason)}`)));
  }
  const pch = await pub.createConfirmChannel();
  const sch = await sub.createChannel();
  for (const ch of [pch, sch]) ch.on('error', (err: unknown) => errors.push(err));
  await pch.assertQueue('fuzz-healthy', { durable: true });
  await pch.purgeQueue('fuzz-healthy');
  const got: string[] = [];
  await sch.prefetch(50);
  await sch.consume('fuzz-healthy', (m) => {
    if (m === null) {
      errors.push(new Error('healthy consumer cancelled'));
      return;
    }
    got.push(m.properties.messageId as string);
    sch.ack(m);
  });
  const sent: string[] = [];
  let running = true;
  const loop = (async () => {
    let n = 0;
    while (running) {
      for (let i = 0; i < 10; i++) {
        const id = `h${n++}`;
        pch.sendToQueue('fuzz-healthy', Buffer.from(id), { messageId: id, persistent: true });
        sent.push(id);
      }
      await pch.waitForConfirms();
    }
  })().catch((err: unknown) => errors.push(err));
  return {
    stop: async () => {
      running = false;
      await loop;
      await eventually(
        'the healthy consumer got every confirmed message',
        async () => got.length >= sent.length,
        20_000,
      );
      pub.removeAllListeners('close');
      sub.removeAllListeners('close');
      return { sent, got, errors };
    },
  };
}

describe('AMQP 0-9-1: mutated replays of a recorded amqplib session', () => {
  it('thousands of mutations: the node stays up, answers each with a valid close, and a healthy client loses nothing', async () => {
    const session = await recordSession();
    expect(session.subarray(0, 8)).toEqual(amqp091.PROTOCOL_HEADER);
    const frames = framesOf(session);
    expect(frames.length).toBeGreaterThan(20);

    // The session unchanged replays to its end: the node answers its connection.close.
    const baseline = await replay(session);
    expect(baseline, JSON.stringify(baseline)).toMatchObject({ kind: 'close-ok' });

    const healthy = await healthyClients();
    const rnd = seededRandom(SEED);
    const counts = new Map<string, number>();
    const failures: string[] = [];
    let cases = 0;
    const deadline = Date.now() + FUZZ_MS;
    const worker = async (): Promise<void> => {
      while (Date.now() < deadline) {
        const mutation = mutate(session, frames, rnd);
        cases++;
        let outcome: Outcome;
        try {
          outcome = await replay(
            mutation.bytes,
            mutation.expectCode === undefined ? QUIET_MS : CLOSE_BOUND_MS,
          );
        } catch (err) {
          failures.push(`${mutation.kind}: ${(err as Error).message}`);
          continue;
        }
        const key = outcome.kind === 'close' ? `close ${outcome.code}` : outcome.kind;
        counts.set(key, (counts.get(key) ?? 0) + 1);
        const bad = (outcome.kind !== 'header' ? outcome.channelCodes : []).filter(
          (c) => !CHANNEL_CODES.has(c),
        );
        if (bad.length > 0) failures.push(`${mutation.kind}: channel.close ${bad.join(',')}`);
        if (outcome.kind === 'close' && !CONNECTION_CODES.has(outcome.code)) {
          failures.push(`${mutation.kind}: connection.close ${outcome.code} ${outcome.text}`);
        }
        if (outcome.kind === 'dropped') failures.push(`${mutation.kind}: socket dropped without a close`);
        if (
          mutation.expectCode !== undefined &&
          (outcome.kind !== 'close' || outcome.code !== mutation.expectCode)
        ) {
          failures.push(`${mutation.kind}: expected ${mutation.expectCode}, got ${JSON.stringify(outcome)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const result = await healthy.stop();
    console.log(`AMQP fuzz: seed ${SEED}, ${cases} cases`, Object.fromEntries([...counts].sort()));

    expect(failures.slice(0, 20)).toEqual([]);
    expect(cases).toBeGreaterThan(1000);
    // Every outcome kind showed up: the mutations reached past the handshake.
    expect(counts.get('close 501')).toBeGreaterThan(0);
    expect(counts.get('waiting')).toBeGreaterThan(0);
    expect(result.errors).toEqual([]);
    expect(result.sent.length).toBeGreaterThan(0);
    expect(new Set(result.got)).toEqual(new Set(result.sent));
    // The node is up and still serves a new client.
    const after = await amqplibConnect(broker.amqpUrl as string);
    const ch = await after.createChannel();
    expect((await ch.checkQueue('fuzz-healthy')).messageCount).toBe(0);
  }, 120_000);
});
