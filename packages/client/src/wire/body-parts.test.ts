import { describe, expect, it } from 'vitest';
import { rng } from '../test-support/random-wire.ts';
import { wireErrorCode as codeOf } from '../test-support/wire-error-code.ts';
import {
  announcesBodyParts,
  BodyAssembler,
  bodyPartCapacity,
  encodeBodyParts,
  withBodyPartsCapability,
} from './body-parts.ts';
import {
  batchEntrySize,
  decodeBatch,
  encodeBatch,
  encodeFrame,
  frame,
  joinEncodedFrames,
  sendInBatches,
} from './codec.ts';
import { encodeDeliverFrame } from './fast-codec.ts';
import { ReplyCode } from './reply-codes.ts';
import type { Frame } from './types.ts';

function randomBytes(seed: number, length: number): Uint8Array {
  const r = rng(seed);
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = Math.floor(r() * 256);
  return out;
}

describe('body parts', () => {
  it('split a body into batches of at most frameMax that protobufjs decodes back, written in place', () => {
    for (const [channel, frameMax, length] of [
      [1, 4096, 4096 * 3 + 17],
      [65535, 4096, 100_000],
      [300, 1 << 20, (1 << 20) * 2],
      [7, 8192, bodyPartCapacity(8192)],
    ] as const) {
      const body = randomBytes(length, length);
      const parts = encodeBodyParts(channel, body, frameMax);
      expect(parts).toHaveLength(Math.ceil(length / bodyPartCapacity(frameMax)));
      const batches: Uint8Array[] = [];
      for (const part of parts) sendInBatches([part], frameMax, (b) => batches.push(b));
      const assembler = new BodyAssembler();
      assembler.start(length);
      let joined: Uint8Array | undefined;
      for (const batch of batches) {
        expect(batch.length).toBeLessThanOrEqual(frameMax);
        // The batch is the part's own buffer (no copy; a last part of a few bytes may be joined as
        // usual), and the bytes protobufjs writes.
        const part = parts[batches.indexOf(batch)] as Uint8Array;
        if (part.length >= 1024) expect(batch.buffer).toBe(part.buffer);
        const frames = decodeBatch(batch) as Frame[];
        expect(frames).toHaveLength(1);
        const f = frames[0] as Frame;
        if (f.method !== 'bodyPart') throw new Error(f.method);
        expect(f.channel).toBe(channel);
        expect(Buffer.from(batch).equals(Buffer.from(encodeBatch([f])))).toBe(true);
        joined = assembler.add(f.bodyPart.data);
      }
      expect(joined !== undefined && Buffer.from(joined).equals(Buffer.from(body))).toBe(true);
      expect(assembler.assembling).toBe(false);
    }
  });

  it('send a large deliver frame alone and in place, the small frames around it in batches of their own', () => {
    const small = encodeFrame(frame(1, 'basicAck', { deliveryTag: 1, multiple: false }));
    const large = encodeDeliverFrame(1, 'c', 1, false, '', 'q', undefined, randomBytes(9, 100_000));
    const batches: Uint8Array[] = [];
    sendInBatches([small, small, large, small], 1 << 20, (b) => batches.push(b));
    expect(batches.map((b) => decodeBatch(b).map((f) => f.method))).toEqual([
      ['basicAck', 'basicAck'],
      ['basicDeliver'],
      ['basicAck'],
    ]);
    expect(batches[1]?.buffer).toBe(large.buffer);
    expect(
      Buffer.from(batches[1] as Uint8Array).equals(Buffer.from(joinEncodedFrames([new Uint8Array(large)]))),
    ).toBe(true);
  });

  it('join with other frames into an ordinary batch when several fit', () => {
    const parts = encodeBodyParts(1, randomBytes(1, 10), 4096);
    const joined = joinEncodedFrames([parts[0] as Uint8Array, parts[0] as Uint8Array]);
    expect(joined.length).toBe(2 * batchEntrySize((parts[0] as Uint8Array).length));
    expect(decodeBatch(joined)).toHaveLength(2);
  });

  it('refuse a part with no body declared (505), parts past the size (501), a body begun twice (505)', () => {
    const assembler = new BodyAssembler();
    expect(codeOf(() => assembler.add(new Uint8Array(1)))).toBe(ReplyCode.UNEXPECTED_FRAME);
    assembler.start(10);
    expect(assembler.add(new Uint8Array(6))).toBeUndefined();
    expect(codeOf(() => assembler.start(3))).toBe(ReplyCode.UNEXPECTED_FRAME);
    expect(codeOf(() => assembler.add(new Uint8Array(5)))).toBe(ReplyCode.FRAME_ERROR);
    expect(assembler.assembling).toBe(false);
    expect(codeOf(() => assembler.start(0))).toBe(ReplyCode.FRAME_ERROR);
    expect(codeOf(() => assembler.start(Number.MAX_SAFE_INTEGER + 2))).toBe(ReplyCode.FRAME_ERROR);
  });

  it('announce the capability in a properties table, beside capabilities already there', () => {
    const plain = { entries: [{ key: 'product', value: { longStr: 'x' } }] };
    expect(announcesBodyParts(plain)).toBe(false);
    expect(announcesBodyParts(withBodyPartsCapability(plain))).toBe(true);
    const other = {
      entries: [
        { key: 'capabilities', value: { table: { entries: [{ key: 'retry', value: { bool: true } }] } } },
      ],
    };
    const both = withBodyPartsCapability(other);
    expect(announcesBodyParts(both)).toBe(true);
    expect(both.entries[0]?.value.table?.entries.map((e) => e.key)).toEqual(['retry', 'body_parts']);
  });
});
