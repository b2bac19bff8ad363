import { describe, expect, it } from 'vitest';
import { sameBytes, sameBytesAt } from './binary.ts';

describe('sameBytesAt', () => {
  const frame = new Uint8Array([9, 1, 2, 3, 9]);

  it('finds the kept bytes where they lie in a larger buffer', () => {
    expect(sameBytesAt(frame, 1, 4, new Uint8Array([1, 2, 3]))).toBe(true);
    expect(sameBytesAt(frame, 0, 0, new Uint8Array(0))).toBe(true);
  });

  it('refuses another length or any differing byte, first or last', () => {
    expect(sameBytesAt(frame, 1, 4, new Uint8Array([1, 2]))).toBe(false);
    expect(sameBytesAt(frame, 1, 3, new Uint8Array([1, 2, 3]))).toBe(false);
    expect(sameBytesAt(frame, 1, 4, new Uint8Array([0, 2, 3]))).toBe(false);
    expect(sameBytesAt(frame, 1, 4, new Uint8Array([1, 2, 4]))).toBe(false);
  });

  it('agrees with sameBytes on a view of the field', () => {
    for (const kept of [new Uint8Array([1, 2, 3]), new Uint8Array([2, 3, 9]), new Uint8Array(0)]) {
      for (const [start, end] of [
        [1, 4],
        [2, 5],
        [3, 3],
      ] as const)
        expect(sameBytesAt(frame, start, end, kept)).toBe(sameBytes(frame.subarray(start, end), kept));
    }
  });
});
