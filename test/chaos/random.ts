// A small seeded generator, so a schedule (and every choice the workload makes) replays from its seed.
// sfc32 (Chris Doty-Humphrey's "small fast counting" generator), its state filled from the seed by
// a splitmix-style scramble so that nearby seeds (1, 2, 3...) give unrelated streams.

export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  /** Uniform integer in [0, n). */
  int(n: number): number;
  /** Uniform integer in [min, max]. */
  between(min: number, max: number): number;
  /** True with probability p. */
  chance(p: number): boolean;
  /** One element, uniformly (the array must not be empty). */
  pick<T>(items: readonly T[]): T;
  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[];
  /** An independent generator derived from this one (e.g. one per publisher). */
  fork(): Random;
}

function scramble(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x21f0aaad);
  x = Math.imul(x ^ (x >>> 15), 0x735a2d97);
  return (x ^ (x >>> 15)) >>> 0;
}

export function seededRandom(seed: number): Random {
  let a = scramble(seed);
  let b = scramble(a ^ 0x5bd1e995);
  let c = scramble(b ^ 0x1b873593);
  let d = 1;
  const next32 = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return t >>> 0;
  };
  // The first outputs of sfc32 still echo the seed: run it a few rounds before use.
  for (let i = 0; i < 12; i++) next32();
  const random: Random = {
    next: () => next32() / 4294967296,
    int: (n) => Math.floor(random.next() * n),
    between: (min, max) => min + random.int(max - min + 1),
    chance: (p) => random.next() < p,
    pick: <T>(items: readonly T[]): T => {
      if (items.length === 0) throw new RangeError('pick() from an empty list');
      return items[random.int(items.length)] as T;
    },
    shuffle: <T>(items: readonly T[]): T[] => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = random.int(i + 1);
        [out[i], out[j]] = [out[j] as T, out[i] as T];
      }
      return out;
    },
    fork: () => seededRandom(next32()),
  };
  return random;
}
