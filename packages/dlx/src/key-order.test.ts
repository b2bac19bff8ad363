import { describe, expect, it } from 'vitest';
import { compareKeys, sortEntriesByKey } from './key-order.ts';

describe('compareKeys', () => {
  it('orders as UTF-8 bytes (Erlang binaries), not UTF-16 code units', () => {
    // U+10000 is a surrogate pair in UTF-16 (sorts before U+FFFF there) but F0.. in UTF-8 (after EF..).
    expect('\u{10000}' < '\uFFFF').toBe(true);
    expect(compareKeys('\u{10000}', '\uFFFF')).toBeGreaterThan(0);
    const keys = ['x-num', 'x-death', 'b', 'x-app', 'é', '\uE000', '\u{1F600}', 'x', '', 'CC', 'BCC'];
    const byBytes = keys.slice().sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(keys.slice().sort(compareKeys)).toEqual(byBytes);
  });

  it('sorts entries stably', () => {
    const entries = [
      { key: 'b', value: { i8: 1 } },
      { key: 'a', value: { i8: 2 } },
      { key: 'b', value: { i8: 3 } },
    ];
    expect(sortEntriesByKey(entries).map((e) => e.value.i8)).toEqual([2, 1, 3]);
  });
});
