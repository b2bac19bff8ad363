import { describe, expect, it } from 'vitest';
import {
  COMMAND_HEADER_BYTES,
  commandBytes,
  commandTs,
  encodeCommandEntry,
  fillCommandHeader,
  isCommandEntry,
} from './group-codec.ts';

describe('command entry data', () => {
  it('is the same whether the header is filled into headroom or the command is copied behind it', () => {
    for (const size of [0, 1, 1000]) {
      const command = new Uint8Array(size).map((_, i) => (i * 7) & 0xff);
      for (const ts of [0, 1, 1_700_000_000_123, 2 ** 52 + 0.5]) {
        const copied = encodeCommandEntry(ts, command);
        // A pooled buffer with garbage in front: the header must overwrite all of it.
        const roomy = Buffer.allocUnsafe(COMMAND_HEADER_BYTES + size).fill(0xee, 0, COMMAND_HEADER_BYTES);
        roomy.set(command, COMMAND_HEADER_BYTES);
        const filled = fillCommandHeader(roomy, ts);
        expect(Buffer.from(filled).equals(Buffer.from(copied))).toBe(true);
        expect(isCommandEntry(filled)).toBe(true);
        expect(commandTs(filled)).toBe(ts);
        expect(Buffer.from(commandBytes(filled)).equals(Buffer.from(command))).toBe(true);
      }
    }
  });

  it('reads the ts as the big-endian f64 a DataView reads, for any eight bytes at any offset', () => {
    const backing = new Uint8Array(256).map((_, i) => (i * 151 + 7) & 0xff);
    for (let offset = 0; offset + COMMAND_HEADER_BYTES <= backing.length; offset += 13) {
      const view = backing.subarray(offset, offset + COMMAND_HEADER_BYTES);
      const expected = new DataView(backing.buffer, offset + 1, 8).getFloat64(0);
      expect(Object.is(commandTs(view), expected)).toBe(true);
    }
    for (const ts of [-1.5, Number.MIN_VALUE, Number.MAX_VALUE, -0]) {
      expect(Object.is(commandTs(encodeCommandEntry(ts, new Uint8Array(0))), ts)).toBe(true);
    }
  });

  it("fills the header of a view that does not start at its buffer's first byte", () => {
    const backing = new Uint8Array(64).fill(0xaa);
    const view = backing.subarray(17, 17 + COMMAND_HEADER_BYTES + 3);
    fillCommandHeader(view, 42);
    expect(commandTs(view)).toBe(42);
    expect(backing[16]).toBe(0xaa);
    expect(backing[17 + COMMAND_HEADER_BYTES]).toBe(0xaa);
  });
});
