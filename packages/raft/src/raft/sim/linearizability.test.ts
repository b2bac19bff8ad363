import { describe, expect, it } from 'vitest';
import type { RegisterOp } from './linearizability.ts';
import { checkRegister } from './linearizability.ts';

let nextId = 0;
function write(value: number, callTime: number, returnTime: number): RegisterOp {
  return { kind: 'write', value, callTime, returnTime, id: ++nextId };
}
function read(value: number, callTime: number, returnTime: number): RegisterOp {
  return { kind: 'read', value, callTime, returnTime, id: ++nextId };
}

describe('register linearizability', () => {
  it('accepts a sequential history and reads of the initial value', () => {
    expect(
      checkRegister([read(0, 1, 2), write(1, 3, 4), read(1, 5, 6), write(2, 7, 8), read(2, 9, 10)]).ok,
    ).toBe(true);
  });

  it('accepts overlapping operations in either order', () => {
    // The read overlaps the write: it may see the old value or the new one.
    expect(checkRegister([write(1, 1, 10), read(0, 2, 3)]).ok).toBe(true);
    expect(checkRegister([write(1, 1, 10), read(1, 2, 3)]).ok).toBe(true);
    expect(checkRegister([write(1, 1, 5), write(2, 2, 6), read(1, 7, 8)]).ok).toBe(true);
  });

  it('rejects a stale read after a completed write', () => {
    expect(checkRegister([write(1, 1, 2), read(0, 3, 4)]).ok).toBe(false);
  });

  it('rejects reads that go back in time', () => {
    expect(checkRegister([write(1, 1, 2), write(2, 3, 20), read(2, 4, 5), read(1, 6, 7)]).ok).toBe(false);
  });

  it('rejects a read of a value never written', () => {
    expect(checkRegister([write(1, 1, 2), read(7, 3, 4)]).ok).toBe(false);
  });

  it('lets a write of unknown outcome take effect at any time after its call, or never', () => {
    const unknown = Number.POSITIVE_INFINITY;
    expect(checkRegister([write(1, 1, unknown), read(0, 2, 3), read(1, 4, 5)]).ok).toBe(true);
    expect(checkRegister([write(1, 1, unknown), read(0, 2, 3), read(0, 4, 5)]).ok).toBe(true);
    expect(checkRegister([write(1, 1, unknown), read(1, 2, 3), read(0, 4, 5)]).ok).toBe(false);
  });

  it('stays fast on long histories with many concurrent unknown writes', () => {
    const ops: RegisterOp[] = [];
    let t = 0;
    for (let i = 1; i <= 300; i++) {
      if (i % 10 === 0) ops.push(write(i, ++t, Number.POSITIVE_INFINITY));
      else {
        const w = write(i, ++t, ++t);
        ops.push(w, read(i, ++t, ++t));
      }
    }
    const result = checkRegister(ops);
    expect(result.ok).toBe(true);
    expect(result.gaveUp).toBe(false);
  });
});
