// A value remembered per object, stamped onto the object itself as a private field.
//
// A private field has no key and no symbol: nothing that copies an object (spread, Object.assign,
// structuredClone, JSON) carries it over, nothing that enumerates or compares one (for-in,
// Object.keys, reflection, deep equality) sees it, and an object that inherits from it
// (Object.create) does not have it. It costs a few tens of nanoseconds, where a WeakMap entry costs
// half a microsecond under V8 when keys are as short-lived as messages (and adds ephemeron work to
// every GC), and a non-enumerable symbol property (defineProperty) about 150 ns. A non-extensible
// object cannot take a new field: its value goes to a WeakMap instead.

/**
 * A constructor whose `new` result is its argument. A class extending it gets `this` = that argument
 * from `super(target)`, so its private fields are added to an object created elsewhere.
 */
const Adopt = function adopt(target: object): object {
  return target;
} as unknown as new (
  target: object,
) => object;

/** One remembered value per object; see the module comment. */
export interface ObjectSlot<K extends object, V> {
  read(target: K): V | undefined;
  /** Remembers `value` for `target`, replacing what it had. */
  write(target: K, value: V): void;
}

/** A new slot: each call makes a class of its own, so slots never see each other's values. */
export function objectSlot<K extends object, V>(): ObjectSlot<K, V> {
  class Slot extends Adopt {
    #value: V;

    constructor(target: object, value: V) {
      super(target);
      this.#value = value;
    }

    static has(target: object): boolean {
      return #value in target;
    }

    static read(target: object): V | undefined {
      return #value in target ? (target as Slot).#value : undefined;
    }

    static write(target: object, value: V): void {
      if (#value in target) (target as Slot).#value = value;
      else new Slot(target, value);
    }
  }
  const ofNonExtensible = new WeakMap<K, V>();
  return {
    read(target: K): V | undefined {
      const value = Slot.read(target);
      if (value !== undefined || Object.isExtensible(target)) return value;
      return ofNonExtensible.get(target);
    },
    write(target: K, value: V): void {
      // A slot stamped before the object was frozen stays writable, and is what reads find first.
      if (Slot.has(target) || Object.isExtensible(target)) Slot.write(target, value);
      else ofNonExtensible.set(target, value);
    },
  };
}
