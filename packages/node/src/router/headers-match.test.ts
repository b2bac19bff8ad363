import type { FieldTable, FieldValue } from '@styx/client/wire';
import { describe, expect, it } from 'vitest';
import type { HeadersPattern } from './headers-match.ts';
import { headersMatch, headerValueEquals, parseHeadersPattern } from './headers-match.ts';
import { table } from './test-support.ts';

function pattern(args: FieldTable): HeadersPattern {
  const p = parseHeadersPattern(args);
  if (typeof p === 'string') throw new Error(p);
  return p;
}

describe('parseHeadersPattern', () => {
  it('defaults to all, accepts the four modes, refuses anything else', () => {
    expect(pattern(table({ a: { i32: 1 } })).requireAll).toBe(true);
    expect(pattern(table({ 'x-match': { longStr: 'any' } })).requireAll).toBe(false);
    expect(pattern(table({ 'x-match': { longStr: 'all-with-x' } })).requireAll).toBe(true);
    expect(pattern(table({ 'x-match': { shortStr: 'any-with-x' } })).requireAll).toBe(false);
    expect(parseHeadersPattern(table({ 'x-match': { longStr: 'ALL' } }))).toBe(
      'Invalid x-match field value <<"ALL">>; expected all, any, all-with-x, or any-with-x',
    );
    expect(parseHeadersPattern(table({ 'x-match': { bool: true } }))).toBe(
      'Invalid x-match field type bool (value true); expected longstr',
    );
  });

  it('leaves x- keys out unless the mode is *-with-x, and x-match always', () => {
    expect(
      pattern(table({ 'x-match': { longStr: 'all' }, 'x-k': { i32: 1 }, k: { i32: 2 } })).pairs.map(
        (p) => p.key,
      ),
    ).toEqual(['k']);
    expect(
      pattern(table({ 'x-match': { longStr: 'all-with-x' }, 'x-k': { i32: 1 }, k: { i32: 2 } })).pairs.map(
        (p) => p.key,
      ),
    ).toEqual(['x-k', 'k']);
  });
});

describe('headersMatch', () => {
  const h = (entries: Record<string, FieldValue>): FieldTable => table(entries);

  it('all: every key present and equal; an empty pattern matches everything', () => {
    const p = pattern(table({ a: { longStr: '1' }, b: { i32: 2 } }));
    expect(headersMatch(p, h({ a: { longStr: '1' }, b: { i32: 2 }, c: { bool: true } }))).toBe(true);
    expect(headersMatch(p, h({ a: { longStr: '1' } }))).toBe(false);
    expect(headersMatch(p, h({ a: { longStr: '1' }, b: { i32: 3 } }))).toBe(false);
    expect(headersMatch(pattern(table({})), undefined)).toBe(true);
  });

  it('any: one key present and equal; an empty pattern matches nothing', () => {
    const p = pattern(table({ 'x-match': { longStr: 'any' }, a: { longStr: '1' }, b: { i32: 2 } }));
    expect(headersMatch(p, h({ b: { i32: 2 } }))).toBe(true);
    expect(headersMatch(p, h({ a: { longStr: 'other' }, b: { i32: 9 } }))).toBe(false);
    expect(headersMatch(p, undefined)).toBe(false);
    expect(headersMatch(pattern(table({ 'x-match': { longStr: 'any' } })), h({ a: { i32: 1 } }))).toBe(false);
  });

  it('ignores x- keys in all/any but compares them in all-with-x/any-with-x', () => {
    const args = { 'x-tenant': { longStr: 't1' }, k: { longStr: 'v' } };
    const headers = h({ k: { longStr: 'v' }, 'x-tenant': { longStr: 't2' } });
    expect(headersMatch(pattern(table({ 'x-match': { longStr: 'all' }, ...args })), headers)).toBe(true);
    expect(headersMatch(pattern(table({ 'x-match': { longStr: 'all-with-x' }, ...args })), headers)).toBe(
      false,
    );
    expect(
      headersMatch(
        pattern(table({ 'x-match': { longStr: 'any-with-x' }, ...args })),
        h({ 'x-tenant': { longStr: 't1' } }),
      ),
    ).toBe(true);
    expect(
      headersMatch(
        pattern(table({ 'x-match': { longStr: 'any' }, ...args })),
        h({ 'x-tenant': { longStr: 't1' } }),
      ),
    ).toBe(false);
  });

  it('a void binding value matches on presence alone', () => {
    const p = pattern(table({ flag: { void: {} } }));
    expect(headersMatch(p, h({ flag: { longStr: 'anything' } }))).toBe(true);
    expect(headersMatch(p, h({ flag: { void: {} } }))).toBe(true);
    expect(headersMatch(p, h({ other: { i32: 1 } }))).toBe(false);
  });

  it('uses the first occurrence of a duplicated header', () => {
    const p = pattern(table({ a: { i32: 1 } }));
    const dup: FieldTable = {
      entries: [
        { key: 'a', value: { i32: 2 } },
        { key: 'a', value: { i32: 1 } },
      ],
    };
    expect(headersMatch(p, dup)).toBe(false);
  });
});

describe('headerValueEquals', () => {
  const eq = (a: FieldValue, b: FieldValue): boolean => headerValueEquals(a, b);

  it('compares numbers by value across integer widths, floats and timestamps', () => {
    expect(eq({ i8: 5 }, { i64: 5 })).toBe(true);
    expect(eq({ u32: 5 }, { f64: 5 })).toBe(true);
    expect(eq({ i32: 1700000000 }, { timestamp: 1700000000 })).toBe(true);
    expect(eq({ i32: 5 }, { i32: 6 })).toBe(false);
    expect(eq({ f32: 0.5 }, { f64: 0.5 })).toBe(true);
  });

  it('compares strings by content, including byte arrays, but never strings with numbers or booleans', () => {
    expect(eq({ longStr: 'x' }, { shortStr: 'x' })).toBe(true);
    expect(eq({ longStr: 'é' }, { byteArray: new Uint8Array([0xc3, 0xa9]) })).toBe(true);
    expect(eq({ byteArray: new Uint8Array([0x78]) }, { longStr: 'y' })).toBe(false);
    expect(eq({ longStr: '5' }, { i32: 5 })).toBe(false);
    expect(eq({ longStr: 'true' }, { bool: true })).toBe(false);
    expect(eq({ bool: true }, { bool: true })).toBe(true);
    expect(eq({ bool: true }, { i8: 1 })).toBe(false);
  });

  it('compares decimals, arrays and tables type-exactly', () => {
    expect(eq({ decimal: { scale: 2, value: 314 } }, { decimal: { scale: 2, value: 314 } })).toBe(true);
    expect(eq({ decimal: { scale: 1, value: 5 } }, { f64: 0.5 })).toBe(false);
    expect(eq({ array: { values: [{ i32: 1 }] } }, { array: { values: [{ i32: 1 }] } })).toBe(true);
    expect(eq({ array: { values: [{ i32: 1 }] } }, { array: { values: [{ i64: 1 }] } })).toBe(false);
    expect(eq({ table: table({ a: { i32: 1 } }) }, { table: table({ a: { i32: 1 } }) })).toBe(true);
  });
});
