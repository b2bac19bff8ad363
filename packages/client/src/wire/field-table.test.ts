import { describe, expect, it } from 'vitest';
import { decodeBatch, encodeBatch, frame } from './codec.ts';
import {
  fieldTableEquals,
  fieldValueEquals,
  fieldValueKind,
  tableDelete,
  tableGet,
  tableSet,
} from './field-table.ts';
import type { FieldTable, FieldValue } from './types.ts';

const table: FieldTable = {
  entries: [
    { key: 'a', value: { i8: 1 } },
    { key: 'b', value: { longStr: 'x' } },
    { key: 'a', value: { i8: 2 } },
  ],
};

describe('tableGet/tableSet/tableDelete', () => {
  it('gets the first entry with the key', () => {
    expect(tableGet(table, 'a')).toEqual({ i8: 1 });
    expect(tableGet(table, 'missing')).toBeUndefined();
    expect(tableGet(null, 'a')).toBeUndefined();
  });

  it('sets in place, keeping order, without mutating the input', () => {
    const before = JSON.stringify(table);
    const replaced = tableSet(table, 'b', { bool: true });
    expect(replaced.entries.map((e) => [e.key, e.value])).toEqual([
      ['a', { i8: 1 }],
      ['b', { bool: true }],
      ['a', { i8: 2 }],
    ]);
    const appended = tableSet(table, 'c', { void: {} });
    expect(appended.entries.map((e) => e.key)).toEqual(['a', 'b', 'a', 'c']);
    expect(tableSet(undefined, 'k', { i8: 0 })).toEqual({ entries: [{ key: 'k', value: { i8: 0 } }] });
    expect(JSON.stringify(table)).toBe(before);
  });

  it('deletes every entry with the key, without mutating the input', () => {
    expect(tableDelete(table, 'a').entries.map((e) => e.key)).toEqual(['b']);
    expect(table.entries).toHaveLength(3);
    expect(tableDelete(null, 'a')).toEqual({ entries: [] });
  });
});

describe('fieldValueEquals', () => {
  it('is type-exact', () => {
    expect(fieldValueEquals({ i8: 5 }, { i8: 5 })).toBe(true);
    expect(fieldValueEquals({ i8: 5 }, { i16: 5 })).toBe(false);
    expect(fieldValueEquals({ shortStr: 'a' }, { longStr: 'a' })).toBe(false);
    expect(fieldValueEquals({ timestamp: 1 }, { u64: 1 })).toBe(false);
    expect(fieldValueEquals({ i8: 5 }, { i8: 6 })).toBe(false);
  });

  it('compares every kind by value', () => {
    const pairs: [FieldValue, FieldValue, boolean][] = [
      [{ f64: Number.NaN }, { f64: Number.NaN }, true],
      [{ decimal: { scale: 1, value: 2 } }, { decimal: { scale: 1, value: 2 } }, true],
      [{ decimal: { scale: 1, value: 2 } }, { decimal: { scale: 2, value: 2 } }, false],
      [{ byteArray: new Uint8Array([1, 2]) }, { byteArray: Buffer.from([1, 2]) }, true],
      [{ byteArray: new Uint8Array([1, 2]) }, { byteArray: new Uint8Array([1, 3]) }, false],
      [{ void: {} }, { void: {} }, true],
      [{ bool: false }, { bool: false }, true],
      [{ array: { values: [{ i8: 1 }, { i8: 2 }] } }, { array: { values: [{ i8: 1 }, { i8: 2 }] } }, true],
      [{ array: { values: [{ i8: 1 }, { i8: 2 }] } }, { array: { values: [{ i8: 2 }, { i8: 1 }] } }, false],
      [{ array: { values: [{ i8: 1 }] } }, { array: { values: [{ i8: 1 }, { i8: 1 }] } }, false],
    ];
    for (const [a, b, equal] of pairs) expect(fieldValueEquals(a, b)).toBe(equal);
  });

  it('compares tables as maps, type-exactly and deeply', () => {
    const x: FieldTable = {
      entries: [
        { key: 'x-message-ttl', value: { i32: 1000 } },
        { key: 'nested', value: { table: { entries: [{ key: 'k', value: { bool: true } }] } } },
      ],
    };
    const reordered: FieldTable = { entries: [...x.entries].reverse() };
    expect(fieldTableEquals(x, reordered)).toBe(true);
    expect(fieldValueEquals({ table: x }, { table: reordered })).toBe(true);
    expect(fieldTableEquals(x, tableSet(x, 'x-message-ttl', { i16: 1000 }))).toBe(false);
    expect(fieldTableEquals(x, tableDelete(x, 'nested'))).toBe(false);
    expect(fieldTableEquals(x, tableSet(x, 'extra', { void: {} }))).toBe(false);
    expect(fieldTableEquals(null, { entries: [] })).toBe(true);
  });

  it('works on decoded values against plain ones', () => {
    const headers: FieldTable = {
      entries: [
        { key: 'n', value: { i64: -7 } },
        { key: 'zero', value: { u8: 0 } },
      ],
    };
    const [decoded] = decodeBatch(
      encodeBatch([
        frame(1, 'queueDeclare', {
          queue: 'q',
          passive: false,
          durable: true,
          exclusive: false,
          autoDelete: false,
          arguments: headers,
        }),
      ]),
    );
    if (decoded?.method !== 'queueDeclare') throw new Error('method');
    const args = decoded.queueDeclare.arguments as FieldTable;
    expect(fieldTableEquals(args, headers)).toBe(true);
    expect(fieldValueKind(tableGet(args, 'zero') as FieldValue)).toBe('u8');
  });
});
