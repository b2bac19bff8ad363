import { describe, expect, it } from 'vitest';
import { FrameTooLargeError } from './errors.ts';
import { peerMultiaddr } from './peer-address.ts';
import { encodeFrame, FrameDecoder } from './raft-frames.ts';

const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);

describe('raft frames', () => {
  it('prefixes the payload with its length as a u32 big-endian', () => {
    expect(Array.from(encodeFrame(bytes(7, 8, 9)))).toEqual([0, 0, 0, 3, 7, 8, 9]);
  });

  it('cuts a stream into its payloads however it is chunked', () => {
    const payloads = [
      bytes(1),
      bytes(),
      bytes(2, 3, 4, 5, 6),
      Uint8Array.from({ length: 300 }, (_, i) => i & 0xff),
    ];
    const stream = new Uint8Array(payloads.reduce((n, p) => n + 4 + p.length, 0));
    let offset = 0;
    for (const p of payloads) {
      stream.set(encodeFrame(p), offset);
      offset += 4 + p.length;
    }
    for (const size of [1, 2, 3, 5, 7, 64, stream.length]) {
      const decoder = new FrameDecoder(1024);
      const out: number[][] = [];
      for (let i = 0; i < stream.length; i += size) {
        for (const payload of decoder.push(stream.subarray(i, i + size))) out.push(Array.from(payload));
      }
      expect(out, `chunks of ${size}`).toEqual(payloads.map((p) => Array.from(p)));
    }
  });

  it('hands out plain Uint8Arrays when the stream delivers Node Buffers (noise decrypts into them)', () => {
    const frames = Buffer.concat([encodeFrame(new Uint8Array([1, 2, 3])), encodeFrame(new Uint8Array([4]))]);
    const payloads = new FrameDecoder(1_000).push(frames);
    expect(payloads).toEqual([new Uint8Array([1, 2, 3]), new Uint8Array([4])]);
    for (const payload of payloads) expect(Buffer.isBuffer(payload)).toBe(false);
  });

  it('throws FrameTooLargeError on a prefix past the bound, before its payload arrives', () => {
    const decoder = new FrameDecoder(16);
    expect(decoder.push(encodeFrame(new Uint8Array(16))).length).toBe(1);
    expect(() => decoder.push(bytes(0, 0, 0, 17))).toThrow(FrameTooLargeError);
  });
});

describe('peer addresses', () => {
  it('turns host:port into TCP multiaddrs for IPv4, IPv6 and DNS names', () => {
    expect(peerMultiaddr('10.0.0.5:4370').toString()).toBe('/ip4/10.0.0.5/tcp/4370');
    expect(peerMultiaddr('[::1]:4370').toString()).toBe('/ip6/::1/tcp/4370');
    expect(peerMultiaddr('node-b.internal:1').toString()).toBe('/dns/node-b.internal/tcp/1');
    expect(peerMultiaddr('/ip4/127.0.0.1/tcp/5').toString()).toBe('/ip4/127.0.0.1/tcp/5');
    for (const bad of ['nohost', 'h:99999', ':5', 'a:b:c:1'])
      expect(() => peerMultiaddr(bad)).toThrow(/peer address/);
  });
});
