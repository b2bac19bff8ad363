import { describe, expect, it } from 'vitest';
import { COALESCE_MAX_FRAME, writeCoalesced } from './coalesced-write.ts';

function bytes(n: number, fill: number): Buffer {
  return Buffer.alloc(n, fill);
}

function record(frames: Uint8Array[]): Buffer[] {
  const written: Buffer[] = [];
  writeCoalesced({ write: (c) => written.push(Buffer.from(c)) }, frames);
  return written;
}

describe('writeCoalesced', () => {
  it('writes a run of small frames as one chunk, in order', () => {
    const frames = [bytes(3, 1), bytes(5, 2), bytes(1, 3)];
    const written = record(frames);
    expect(written).toHaveLength(1);
    expect(written[0]).toEqual(Buffer.concat(frames));
  });

  it('writes a lone frame as it is, and nothing for no frames', () => {
    const one = bytes(7, 9);
    const seen: Uint8Array[] = [];
    writeCoalesced({ write: (c) => seen.push(c) }, [one]);
    expect(seen[0]).toBe(one);
    expect(record([])).toEqual([]);
  });

  it('never copies a large frame: small runs around it are written before and after it', () => {
    const big = bytes(COALESCE_MAX_FRAME, 7);
    const frames = [bytes(2, 1), bytes(2, 2), big, bytes(4, 3), big, big, bytes(1, 4)];
    const seen: Uint8Array[] = [];
    writeCoalesced({ write: (c) => seen.push(c) }, frames);
    expect(seen.map((c) => c.byteLength)).toEqual([
      4,
      COALESCE_MAX_FRAME,
      4,
      COALESCE_MAX_FRAME,
      COALESCE_MAX_FRAME,
      1,
    ]);
    expect(seen[1]).toBe(big);
    expect(Buffer.concat(seen)).toEqual(Buffer.concat(frames));
  });
});
