import { describe, expect, it } from 'vitest';
import { seededRandom } from '../test-support/seeded-random.ts';
import { DeliveryTagWindow } from './delivery-tag-window.ts';

/** The window's entries at the model's tags, in tag order. */
function entries(window: DeliveryTagWindow<string>, model: Map<number, string>): [number, string][] {
  const seen: [number, string][] = [];
  for (const tag of [...model.keys()].sort((a, b) => a - b)) seen.push([tag, window.get(tag) as string]);
  return seen;
}

describe('DeliveryTagWindow', () => {
  it('keeps entries by increasing tag, acked in order, out of order and with gaps between tags', () => {
    const w = new DeliveryTagWindow<string>();
    expect(w.first()).toBeUndefined();
    for (const tag of [1, 2, 3, 5, 8, 9]) w.set(tag, `m${tag}`);
    expect(w.size).toBe(6);
    expect(w.get(4)).toBeUndefined();
    expect(w.get(10)).toBeUndefined();
    expect(w.get(0)).toBeUndefined();
    expect(w.delete(5)).toBe(true);
    expect(w.delete(5)).toBe(false);
    expect(w.get(5)).toBeUndefined();
    expect(w.first()).toBe(1);
    expect(w.delete(1)).toBe(true);
    expect(w.delete(2)).toBe(true);
    expect(w.first()).toBe(3);
    expect(w.delete(3)).toBe(true);
    // The hole left by 5 is passed over.
    expect(w.first()).toBe(8);
    expect(w.size).toBe(2);
    expect(w.delete(7)).toBe(false);
    w.clear();
    expect(w.size).toBe(0);
    expect(w.first()).toBeUndefined();
    w.set(1, 'again');
    expect(w.get(1)).toBe('again');
  });

  it('refuses a tag that is not above the last one held', () => {
    const w = new DeliveryTagWindow<string>();
    w.set(5, 'a');
    expect(() => w.set(5, 'b')).toThrow(RangeError);
    expect(() => w.set(4, 'b')).toThrow(RangeError);
    expect(w.get(5)).toBe('a');
    expect(w.size).toBe(1);
  });

  it('answers as a Map does over random holds and takes, the oldest held back for long', () => {
    const random = seededRandom(28);
    const w = new DeliveryTagWindow<string>();
    const model = new Map<number, string>();
    let next = 1;
    for (let step = 0; step < 20_000; step++) {
      const r = random();
      if (r < 0.5 || model.size === 0) {
        // Tags skip now and then (a no-ack consumer's deliveries on the same channel hold none).
        next += r < 0.05 ? 3 : 1;
        w.set(next, `m${next}`);
        model.set(next, `m${next}`);
      } else if (r < 0.9) {
        // Mostly the second oldest (the oldest, tag 2, stays unacked until near the end, so holes
        // pile up behind it and are squeezed out), else any.
        const keys = [...model.keys()];
        const tag =
          r < 0.8 && keys.length > 1
            ? (keys[1] as number)
            : (keys[Math.floor(random() * keys.length)] as number);
        if (tag === 2 && step < 19_000) continue;
        expect(w.delete(tag)).toBe(true);
        model.delete(tag);
      } else {
        const tag = Math.floor(random() * (next + 2));
        expect(w.get(tag)).toBe(model.get(tag));
      }
      expect(w.size).toBe(model.size);
      if (step % 997 === 0) {
        expect(w.first()).toBe(model.size === 0 ? undefined : Math.min(...model.keys()));
        expect(entries(w, model)).toEqual([...model].sort((a, b) => a[0] - b[0]));
      }
    }
    for (const tag of [...model.keys()]) expect(w.delete(tag)).toBe(true);
    expect(w.size).toBe(0);
    expect(w.first()).toBeUndefined();
  });
});
