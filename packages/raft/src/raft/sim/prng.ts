import type { RaftRandom } from '../types.ts';

/** One step of splitmix32: a good 32-bit mix, used to seed xoshiro and to fork streams. */
function splitmix32(state: number): { next: number; value: number } {
  const next = (state + 0x9e3779b9) | 0;
  let z = next;
  z = Math.imul(z ^ (z >>> 16), 0x21f0aaad);
  z = Math.imul(z ^ (z >>> 15), 0x735a2d97);
  z ^= z >>> 15;
  return { next, value: z >>> 0 };
}

/**
 * xoshiro128** (Blackman & Vigna), seeded with splitmix32. The simulator's only source of
 * randomness: one seed determines the whole run. `fork()` derives an independent stream, so that
 * adding a draw in one subsystem does not shift every other subsystem's draws.
 */
export class Prng implements RaftRandom {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    let state = seed | 0;
    const words: number[] = [];
    for (let i = 0; i < 4; i++) {
      const step = splitmix32(state);
      state = step.next;
      words.push(step.value);
    }
    this.#a = words[0] as number;
    this.#b = words[1] as number;
    this.#c = words[2] as number;
    this.#d = words[3] as number;
    if ((this.#a | this.#b | this.#c | this.#d) === 0) this.#a = 1; // the all-zero state is a fixed point
  }

  /** A uniformly distributed unsigned 32-bit integer. */
  nextU32(): number {
    const result = Math.imul(rotl(Math.imul(this.#b, 5), 7), 9) >>> 0;
    const t = this.#b << 9;
    this.#c ^= this.#a;
    this.#d ^= this.#b;
    this.#b ^= this.#c;
    this.#a ^= this.#d;
    this.#c ^= t;
    this.#d = rotl(this.#d, 11);
    return result;
  }

  /** A float in [0, 1). */
  nextFloat(): number {
    return this.nextU32() / 4294967296;
  }

  /** An integer in [0, bound), bound <= 2^32. */
  nextInt(bound: number): number {
    return Math.floor(this.nextFloat() * bound);
  }

  /** An integer in [lo, hi] (inclusive). */
  between(lo: number, hi: number): number {
    return lo + this.nextInt(hi - lo + 1);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.nextFloat() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty list');
    return items[this.nextInt(items.length)] as T;
  }

  /** An exponentially distributed value with the given mean. */
  exponential(mean: number): number {
    return -Math.log(1 - this.nextFloat()) * mean;
  }

  /** An independent stream derived from this one. */
  fork(): Prng {
    return new Prng(this.nextU32() ^ 0x5bd1e995);
  }

  /** Shuffle in place (Fisher–Yates). */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.nextInt(i + 1);
      const tmp = items[i] as T;
      items[i] = items[j] as T;
      items[j] = tmp;
    }
    return items;
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
