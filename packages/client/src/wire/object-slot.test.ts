import { describe, expect, it } from 'vitest';
import { objectSlot } from './object-slot.ts';

describe('objectSlot', () => {
  it('remembers a value per object, invisible to copies, enumeration and equality', () => {
    const slot = objectSlot<object, number>();
    const target = { a: 1 };
    expect(slot.read(target)).toBeUndefined();
    slot.write(target, 7);
    expect(slot.read(target)).toBe(7);
    slot.write(target, 8);
    expect(slot.read(target)).toBe(8);
    expect(Object.keys(target)).toStrictEqual(['a']);
    expect(target).toStrictEqual({ a: 1 });
    expect(JSON.stringify(target)).toBe('{"a":1}');
    expect(slot.read({ ...target })).toBeUndefined();
    expect(slot.read(Object.create(target) as object)).toBeUndefined();
    expect(slot.read(structuredClone(target))).toBeUndefined();
  });

  it('keeps slots apart, and falls back to a side table for objects that cannot grow', () => {
    const first = objectSlot<object, string>();
    const second = objectSlot<object, string>();
    const target = {};
    first.write(target, 'one');
    expect(second.read(target)).toBeUndefined();
    second.write(target, 'two');
    expect(first.read(target)).toBe('one');
    const frozen = Object.freeze({ b: 2 });
    first.write(frozen, 'frozen');
    expect(first.read(frozen)).toBe('frozen');
    // Stamped before freezing: the field stays and stays writable.
    const later = {};
    first.write(later, 'before');
    Object.freeze(later);
    first.write(later, 'after');
    expect(first.read(later)).toBe('after');
  });
});
