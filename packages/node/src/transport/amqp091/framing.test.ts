import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AmqpCodecError } from './codec-error.ts';
import type { AmqpCommand } from './command-assembler.ts';
import { CommandAssembler } from './command-assembler.ts';
import { encodeContentFrames, encodeMethodFrame, HEARTBEAT_FRAME } from './frame-encoder.ts';
import type { RawFrame } from './frame-parser.ts';
import { FrameParser } from './frame-parser.ts';
import {
  encodeAckFrame,
  encodeDeliverFrames,
  encodePropertiesBytes,
  readBasicAck,
  readBasicPublish,
} from './hot-path.ts';
import { PROTOCOL_HEADER, ProtocolHeaderError, ProtocolHeaderReader } from './protocol-header.ts';
import { int, randomArgs, randomProperties, randomString, seededRandom } from './random-values.ts';
import type { AmqpMethodInit } from './spec.gen.ts';
import { METHOD_DEFS } from './spec.gen.ts';
import { renderAmqpSpecModule, SPEC_MODULE_PATH, SPEC_SOURCE_PATH } from './spec-render.ts';

const packageRoot = new URL('../../../', import.meta.url);

/** A recorded-style stream: a few methods, contents of several sizes on interleaved channels, heartbeats. */
function sampleStream(seed: number): Buffer {
  const rng = seededRandom(seed);
  const parts: Buffer[] = [];
  for (let i = 0; i < 12; i++) {
    const def = METHOD_DEFS[int(rng, 0, METHOD_DEFS.length - 1)];
    if (def === undefined) continue;
    const method = { name: def.name, args: randomArgs(rng, def) } as AmqpMethodInit;
    if (def.content)
      parts.push(
        encodeContentFrames(i, method, randomProperties(rng), Buffer.alloc(int(rng, 0, 9000), i), 4096),
      );
    else parts.push(encodeMethodFrame(i, method));
    if (i % 4 === 0) parts.push(HEARTBEAT_FRAME);
  }
  return Buffer.concat(parts);
}

/** Chunks → commands, the connection's way (frames handed as parts, read in place). */
function decodeChunks(chunks: Buffer[], frameMax = 4096): AmqpCommand[] {
  const parser = new FrameParser({ frameMax });
  const assembler = new CommandAssembler({ maxBodySize: 1 << 20 });
  const out: AmqpCommand[] = [];
  for (const c of chunks) {
    parser.pushTo(c, (type, channel, buf, start, end) => {
      const cmd = assembler.pushParts(type, channel, buf, start, end);
      if (cmd !== undefined) out.push(cmd);
    });
  }
  return out;
}

/** The same through the frame-object API (push / RawFrame). */
function decodeChunksAsFrames(chunks: Buffer[], frameMax = 4096): AmqpCommand[] {
  const parser = new FrameParser({ frameMax });
  const assembler = new CommandAssembler({ maxBodySize: 1 << 20 });
  const out: AmqpCommand[] = [];
  for (const c of chunks) {
    parser.push(c, (f) => {
      const cmd = assembler.push(f);
      if (cmd !== undefined) out.push(cmd);
    });
  }
  return out;
}

function errorOf(fn: () => unknown): AmqpCodecError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AmqpCodecError) return e;
    throw e;
  }
  throw new Error('no error');
}

describe('spec.gen.ts', () => {
  it('is up to date with the spec JSON (run `pnpm --filter @styx/node gen:amqp`)', () => {
    const spec: unknown = JSON.parse(readFileSync(new URL(SPEC_SOURCE_PATH, packageRoot), 'utf8'));
    expect(readFileSync(new URL(SPEC_MODULE_PATH, packageRoot), 'utf8')).toBe(renderAmqpSpecModule(spec));
  });
});

describe('FrameParser', () => {
  it('gives the same commands for every split of a stream into two chunks, and byte by byte', () => {
    const stream = sampleStream(1).subarray(0, 3000);
    const whole = decodeChunks([stream]);
    expect(whole.length).toBeGreaterThan(0);
    for (let cut = 0; cut <= stream.length; cut++) {
      expect(decodeChunks([stream.subarray(0, cut), stream.subarray(cut)])).toEqual(whole);
    }
    const bytes = [...stream].map((b) => Buffer.from([b]));
    expect(decodeChunks(bytes)).toEqual(whole);
    const big = sampleStream(2);
    expect(decodeChunks([...big].map((b) => Buffer.from([b])))).toEqual(decodeChunks([big]));
  });

  it('refuses a frame over frame-max with 501 from its header, before buffering it', () => {
    const parser = new FrameParser({ frameMax: 4096 });
    const header = Buffer.from([3, 0, 1, 0xff, 0xff, 0xff, 0xf0]); // declares ~4 GiB
    expect(errorOf(() => parser.push(header, () => {})).code).toBe(501);
    // Sticky: the stream has lost its framing.
    expect(() => parser.push(HEARTBEAT_FRAME, () => {})).toThrow(AmqpCodecError);
    const exact = Buffer.concat([
      Buffer.from([3, 0, 1, 0, 0, 0x0f, 0xf8]),
      Buffer.alloc(4088),
      Buffer.from([0xce]),
    ]);
    const frames: RawFrame[] = [];
    new FrameParser({ frameMax: 4096 }).push(exact, (f) => frames.push(f));
    expect(frames).toHaveLength(1);
    exact.writeUInt32BE(4089, 3);
    expect(errorOf(() => new FrameParser({ frameMax: 4096 }).push(exact, () => {})).code).toBe(501);
  });

  it('refuses a wrong frame-end, an unknown frame type and a bad heartbeat with 501', () => {
    const wrongEnd = Buffer.from(HEARTBEAT_FRAME);
    wrongEnd[7] = 0xcd;
    expect(errorOf(() => new FrameParser().push(wrongEnd, () => {})).code).toBe(501);
    expect(
      errorOf(() => new FrameParser().push(Buffer.from([4, 0, 0, 0, 0, 0, 0, 0xce]), () => {})).code,
    ).toBe(501);
    expect(
      errorOf(() => new FrameParser().push(Buffer.from([8, 0, 1, 0, 0, 0, 0, 0xce]), () => {})).code,
    ).toBe(501);
    expect(
      errorOf(() => new FrameParser().push(Buffer.from([8, 0, 0, 0, 0, 0, 1, 0, 0xce]), () => {})).code,
    ).toBe(501);
  });

  it('matches the protocol header in any chunks and refuses another at its first wrong byte', () => {
    const r = new ProtocolHeaderReader();
    for (const b of PROTOCOL_HEADER.subarray(0, 7)) expect(r.push(Buffer.from([b]))).toBe(1);
    expect(r.done).toBe(false);
    expect(r.push(Buffer.concat([PROTOCOL_HEADER.subarray(7), HEARTBEAT_FRAME]))).toBe(1);
    expect(r.done).toBe(true);
    expect(() => new ProtocolHeaderReader().push(Buffer.from('GET / HTTP/1.1'))).toThrow(ProtocolHeaderError);
    expect(() => new ProtocolHeaderReader().push(Buffer.from('AMQP\x00\x00\x09\x02', 'latin1'))).toThrow(
      ProtocolHeaderError,
    );
  });
});

describe('CommandAssembler', () => {
  const publish = encodeMethodFrame(1, { name: 'basic.publish', args: { routingKey: 'q' } });
  const content = encodeContentFrames(
    1,
    { name: 'basic.publish', args: { routingKey: 'q' } },
    {},
    Buffer.from('hello'),
    4096,
  );
  const headerAndBody = content.subarray(publish.length);
  const body = Buffer.from([3, 0, 1, 0, 0, 0, 5, 104, 101, 108, 108, 111, 0xce]);

  it('a body in thousands of small frames is gathered whole, byte for byte', () => {
    // 200 kB in 100-byte frames: gathered past the 64th, the buffer grows twice.
    const text = Buffer.from(Array.from({ length: 200_000 }, (_, i) => 97 + (i % 26)));
    const method = { name: 'basic.publish', args: { routingKey: 'q' } } as const;
    const whole = encodeContentFrames(1, method, {}, text, 4096);
    const start = encodeMethodFrame(1, method).length;
    const header = whole.subarray(0, start + 8 + whole.readUInt32BE(start + 3));
    // Frames far smaller than any encoder makes (frame_max is at least 4096).
    const bytes: Buffer[] = [];
    for (let at = 0; at < text.length; at += 100) {
      bytes.push(Buffer.from([3, 0, 1, 0, 0, 0, 100]), text.subarray(at, at + 100), Buffer.from([0xce]));
    }
    const cmds = decodeChunks([Buffer.concat([header, ...bytes])]);
    expect(cmds).toHaveLength(1);
    expect(cmds[0]?.kind === 'content' && cmds[0].body.equals(text)).toBe(true);
  });

  it('a body over the maximum is read and dropped: the command completes oversize, empty, framing intact', () => {
    const method = { name: 'basic.publish', args: { routingKey: 'q' } } as const;
    const over = encodeContentFrames(1, method, { priority: 2 }, Buffer.alloc((1 << 20) + 1, 1), 4096);
    const cmds = decodeChunks([over, publish, headerAndBody]);
    expect(cmds).toHaveLength(2);
    const [dropped, next] = cmds;
    expect(
      dropped?.kind === 'content' && [dropped.oversize, dropped.body.length, dropped.properties],
    ).toEqual([(1 << 20) + 1, 0, { priority: 2 }]);
    expect(next?.kind === 'content' && [next.oversize, next.body.toString()]).toEqual([undefined, 'hello']);
  });

  it('assembles content across interleaved channels', () => {
    const other = encodeContentFrames(
      2,
      { name: 'basic.publish', args: { routingKey: 'r' } },
      { priority: 1 },
      Buffer.from('x'),
      4096,
    );
    const cmds = decodeChunks([publish, other, headerAndBody]);
    expect(cmds.map((c) => (c.kind === 'content' ? [c.channel, c.body.toString()] : c.kind))).toEqual([
      [2, 'x'],
      [1, 'hello'],
    ]);
  });

  it("uses RabbitMQ's codes: 505 for frames out of order, 501 for a body past its size or a size over the max", () => {
    const headerOnly = headerAndBody.subarray(0, headerAndBody.length - body.length);
    const failing = (chunks: Buffer[]) => errorOf(() => decodeChunks(chunks));
    expect(failing([body])).toMatchObject({ code: 505, classId: 0 });
    expect(failing([headerOnly])).toMatchObject({ code: 505 });
    expect(failing([publish, publish])).toMatchObject({ code: 505, classId: 60, methodId: 40 });
    expect(failing([publish, body])).toMatchObject({ code: 505, classId: 60, methodId: 40 });
    const longBody = Buffer.from([3, 0, 1, 0, 0, 0, 6, 104, 101, 108, 108, 111, 33, 0xce]);
    expect(failing([publish, headerOnly, longBody])).toMatchObject({ code: 501, classId: 60, methodId: 40 });
    const huge = Buffer.from(headerOnly);
    huge.writeUInt32BE(0x7fff_ffff, 11); // body size ~2^63
    expect(failing([publish, huge])).toMatchObject({ code: 501, classId: 60, methodId: 40 });
    const weighted = Buffer.from(headerOnly);
    weighted.writeUInt16BE(1, 9);
    expect(failing([publish, weighted])).toMatchObject({ code: 505 });
    const unknown = Buffer.from([1, 0, 1, 0, 0, 0, 4, 0, 60, 0, 99, 0xce]);
    expect(failing([unknown])).toMatchObject({ code: 540, classId: 60, methodId: 99 });
    const trailing = Buffer.from([1, 0, 1, 0, 0, 0, 5, 0, 20, 0, 41, 0, 0xce]); // channel.close-ok + 1 byte
    expect(failing([trailing])).toMatchObject({ code: 501, classId: 20, methodId: 41 });
  });
});

describe('hot path (hand-tuned) against the generated codec', () => {
  it('encodeDeliverFrames writes the same bytes as encodeContentFrames', () => {
    const rng = seededRandom(60);
    for (let i = 0; i < 300; i++) {
      const d = {
        consumerTag: randomString(rng, 255),
        deliveryTag: int(rng, 0, 3) === 0 ? Number.MAX_SAFE_INTEGER : int(rng, 0, 2 ** 40),
        redelivered: rng() < 0.5,
        exchange: randomString(rng, 255),
        routingKey: randomString(rng, 255),
      };
      const properties = randomProperties(rng);
      const body = Buffer.alloc(int(rng, 0, 20_000), i);
      const frameMax = int(rng, 4096, 10_000);
      const fast = encodeDeliverFrames(
        int(rng, 0, 65535),
        d,
        encodePropertiesBytes(properties),
        body,
        frameMax,
      );
      const channel = fast.readUInt16BE(1);
      const generated = encodeContentFrames(
        channel,
        { name: 'basic.deliver', args: d },
        properties,
        body,
        frameMax,
      );
      expect(fast.equals(generated)).toBe(true);
    }
  });

  it('encodeDeliverFrames takes shortstrs of up to 255 UTF-8 bytes, ASCII or not, and refuses longer ones', () => {
    const props = encodePropertiesBytes({});
    const deliver = (routingKey: string): Buffer =>
      encodeDeliverFrames(
        1,
        { consumerTag: 't', deliveryTag: 1, redelivered: false, exchange: '', routingKey },
        props,
        Buffer.alloc(0),
        4096,
      );
    for (const routingKey of ['k'.repeat(255), `${'é'.repeat(127)}k`, 'a🐇b', '\ud800x']) {
      const generated = encodeContentFrames(
        1,
        {
          name: 'basic.deliver',
          args: { consumerTag: 't', deliveryTag: 1, redelivered: false, exchange: '', routingKey },
        },
        {},
        Buffer.alloc(0),
        4096,
      );
      expect(deliver(routingKey).equals(generated)).toBe(true);
    }
    for (const routingKey of ['k'.repeat(256), 'é'.repeat(128), '漢'.repeat(86)])
      expect(() => deliver(routingKey)).toThrow(/more than 255/);
  });

  it('encodeAckFrame, readBasicAck and readBasicPublish agree with the generated codec, errors included', () => {
    const rng = seededRandom(80);
    for (let i = 0; i < 300; i++) {
      const ack = { deliveryTag: int(rng, 0, 2 ** 50), multiple: rng() < 0.5 };
      const generated = encodeMethodFrame(5, { name: 'basic.ack', args: ack });
      expect(encodeAckFrame(5, ack.deliveryTag, ack.multiple)).toEqual(generated);
      expect(decodeChunks([generated])).toEqual([
        { kind: 'method', channel: 5, method: { name: 'basic.ack', args: ack } },
      ]);
      expect(readBasicAck(generated.subarray(7, -1))).toEqual(ack);
      const pub = randomArgs(
        rng,
        METHOD_DEFS.find((d) => d.name === 'basic.publish') as (typeof METHOD_DEFS)[number],
      );
      const frame = encodeMethodFrame(1, { name: 'basic.publish', args: pub } as AmqpMethodInit);
      const payload = frame.subarray(7, -1);
      expect(readBasicPublish(payload)).toEqual(pub);
      // Every truncation and one trailing byte: a 501 from both paths.
      for (let cut = 4; cut < payload.length; cut++)
        expect(errorOf(() => readBasicPublish(payload.subarray(0, cut))).code).toBe(501);
      expect(errorOf(() => readBasicPublish(Buffer.concat([payload, Buffer.from([0])]))).code).toBe(501);
      // Read in place, inside a larger buffer (as the connection reads a frame in its chunk).
      const framed = Buffer.concat([Buffer.from([1, 2, 3]), payload, Buffer.from([0xce, 9])]);
      expect(readBasicPublish(framed, 3, 3 + payload.length)).toEqual(pub);
      expect(readBasicAck(generated, 7, generated.length - 1)).toEqual(ack);
    }
  });

  it('readBasicPublish gives each routing key as sent when keys repeat or change (same length, other bytes)', () => {
    const keys = ['orders', 'orders', 'orderz', 'orders', '', 'é-clé', 'é-clé', 'x'.repeat(255), 'orders'];
    for (const routingKey of keys) {
      const args = { ticket: 0, exchange: 'ex', routingKey, mandatory: false, immediate: false };
      const frame = encodeMethodFrame(1, { name: 'basic.publish', args });
      expect(readBasicPublish(frame.subarray(7, -1))).toEqual(args);
    }
  });

  it('the frame-object API and the parts API give the same commands and the same errors', () => {
    for (const seed of [11, 12, 13]) {
      const stream = sampleStream(seed);
      for (const cut of [1, 7, 100, 4096]) {
        const chunks: Buffer[] = [];
        for (let at = 0; at < stream.length; at += cut) chunks.push(stream.subarray(at, at + cut));
        expect(decodeChunks(chunks)).toEqual(decodeChunksAsFrames(chunks));
      }
    }
    const broken = Buffer.from([1, 0, 1, 0, 0, 0, 2, 0, 10, 0xce]);
    expect(errorOf(() => decodeChunks([broken])).message).toBe(
      errorOf(() => decodeChunksAsFrames([broken])).message,
    );
  });
});

describe('fuzz: the parser and assembler only ever produce commands or throw AmqpCodecError', () => {
  it('survives 20,000 seeded mutations of valid streams (bit flips, truncation, splices, huge sizes)', () => {
    const rng = seededRandom(2027);
    const streams = [sampleStream(11), sampleStream(12), sampleStream(13)].map((s) => s.subarray(0, 6000));
    let typed = 0;
    for (let i = 0; i < 20_000; i++) {
      const base = streams[i % streams.length] as Buffer;
      const bytes = Buffer.from(base);
      const kind = int(rng, 0, 4);
      if (kind === 0)
        for (let k = int(rng, 1, 4); k > 0; k--) bytes[int(rng, 0, bytes.length - 1)] = int(rng, 0, 255);
      else if (kind === 1) bytes.writeUInt32BE(int(rng, 0, 0xffff_ffff), int(rng, 0, bytes.length - 4));
      else if (kind === 2) {
        const at = int(rng, 0, bytes.length - 1);
        bytes[at] = (bytes[at] as number) ^ (1 << int(rng, 0, 7));
      } else if (kind === 3)
        bytes.fill(int(rng, 0, 255), int(rng, 0, bytes.length - 1), int(rng, 0, bytes.length));
      else bytes.copy(bytes, int(rng, 0, bytes.length - 1), int(rng, 0, bytes.length - 1));
      const cut = int(rng, 0, bytes.length);
      const chunks = [bytes.subarray(0, int(rng, 0, cut)), bytes.subarray(0, cut)];
      chunks[1] = bytes.subarray((chunks[0] as Buffer).length, cut); // a prefix, in two chunks
      try {
        decodeChunks(chunks);
      } catch (e) {
        if (!(e instanceof AmqpCodecError)) throw new Error(`mutation ${i} threw ${String(e)}`, { cause: e });
        expect([501, 502, 505, 540]).toContain(e.code);
        typed++;
      }
    }
    expect(typed).toBeGreaterThan(1000);
  });
});
