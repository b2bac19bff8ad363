import { describe, expect, it } from 'vitest';
import { seededRandom as rng } from '../test-support/seeded-random.ts';
import { route } from './route.ts';
import { Fixture } from './test-support.ts';
import type { TopicIndex } from './topic-trie.ts';
import { topicWords } from './topic-trie.ts';

/** A topic exchange 't' with one queue per pattern, named after it. */
function topic(...patterns: string[]): Fixture {
  const f = new Fixture().exchange('t', 'topic');
  for (const p of patterns) f.queue(`q[${p}]`).bind('t', `q[${p}]`, p);
  return f;
}

function matches(f: Fixture, key: string): string[] {
  return [...route(f.m, '/', 't', [key], undefined)].map((q) => q.slice(2, -1)).sort();
}

function trie(f: Fixture): TopicIndex {
  return f.m.vhostNode('/')?.exchanges.get('t')?.index as TopicIndex;
}

/** The reference: RabbitMQ's semantics written as plainly as possible, on word lists. */
function referenceMatch(pattern: readonly string[], key: readonly string[]): boolean {
  if (pattern.length === 0) return key.length === 0;
  const [head, ...rest] = pattern;
  if (head === '#') {
    for (let skip = 0; skip <= key.length; skip++) if (referenceMatch(rest, key.slice(skip))) return true;
    return false;
  }
  return key.length > 0 && (head === '*' || head === key[0]) && referenceMatch(rest, key.slice(1));
}

function words(s: string): string[] {
  return s === '' ? [] : s.split('.');
}

describe('topicWords', () => {
  it("splits as RabbitMQ: '' has no words, every dot separates (empty words kept)", () => {
    expect(topicWords('')).toEqual([]);
    expect(topicWords('a')).toEqual(['a']);
    expect(topicWords('a..b')).toEqual(['a', '', 'b']);
    expect(topicWords('.')).toEqual(['', '']);
    expect(topicWords('a.')).toEqual(['a', '']);
  });
});

describe('topic matching', () => {
  it("'#' alone matches every key, the empty key included", () => {
    const f = topic('#');
    for (const key of ['', 'a', 'a.b.c', '.', 'a..b']) expect(matches(f, key)).toEqual(['#']);
  });

  it("'*' matches exactly one word, possibly empty, never the empty key", () => {
    const f = topic('*');
    expect(matches(f, 'a')).toEqual(['*']);
    expect(matches(f, 'a.b')).toEqual([]);
    expect(matches(f, '')).toEqual([]);
    expect(matches(f, '.')).toEqual([]);
    const g = topic('*.*');
    expect(matches(g, 'a.b')).toEqual(['*.*']);
    expect(matches(g, '.')).toEqual(['*.*']);
    expect(matches(g, 'a')).toEqual([]);
    expect(matches(g, 'a.b.c')).toEqual([]);
  });

  it("'#' at the start, middle and end", () => {
    const f = topic('#.z', 'a.#.z', 'a.#');
    expect(matches(f, 'z')).toEqual(['#.z']);
    expect(matches(f, 'a.z')).toEqual(['#.z', 'a.#', 'a.#.z']);
    expect(matches(f, 'a.b.c.z')).toEqual(['#.z', 'a.#', 'a.#.z']);
    expect(matches(f, 'a')).toEqual(['a.#']);
    expect(matches(f, 'b.z')).toEqual(['#.z']);
    expect(matches(f, 'z.a')).toEqual([]);
  });

  it("'a.#.b' needs a first and b last, with anything between", () => {
    const f = topic('a.#.b');
    expect(matches(f, 'a.b')).toEqual(['a.#.b']);
    expect(matches(f, 'a.x.y.b')).toEqual(['a.#.b']);
    expect(matches(f, 'a.b.b')).toEqual(['a.#.b']);
    expect(matches(f, 'a.b.c')).toEqual([]);
    expect(matches(f, 'b')).toEqual([]);
  });

  it("'#.#' behaves as '#', and both can be bound side by side", () => {
    const f = topic('#.#', '#', 'a.#.#.b');
    expect(matches(f, '')).toEqual(['#', '#.#']);
    expect(matches(f, 'x.y')).toEqual(['#', '#.#']);
    expect(matches(f, 'a.b')).toEqual(['#', '#.#', 'a.#.#.b']);
  });

  it('empty words match only empty words or wildcards', () => {
    const f = topic('a..b', 'a.*.b', 'a.b');
    expect(matches(f, 'a..b')).toEqual(['a.*.b', 'a..b']);
    expect(matches(f, 'a.x.b')).toEqual(['a.*.b']);
    expect(matches(f, 'a.b')).toEqual(['a.b']);
  });

  it('the empty binding key matches only the empty routing key', () => {
    const f = topic('');
    expect(matches(f, '')).toEqual(['']);
    expect(matches(f, '.')).toEqual([]);
    expect(matches(f, 'a')).toEqual([]);
  });

  it("literal '*' and '#' in a routing key match only wildcards, each binding once", () => {
    const f = topic('*', '#', 'a');
    expect(matches(f, '*')).toEqual(['#', '*']);
    expect(matches(f, '#')).toEqual(['#', '*']);
  });

  it('removes bindings and prunes the trie back to its root', () => {
    const patterns = ['a.b.c', 'a.b.#', 'a.*.c', '#', 'a.#.b.#', '', 'x..y'];
    const f = topic(...patterns);
    expect(trie(f).nodeCount()).toBeGreaterThan(5);
    f.unbind('t', 'q[a.b.c]', 'a.b.c');
    expect(matches(f, 'a.b.c')).toEqual(['#', 'a.#.b.#', 'a.*.c', 'a.b.#']);
    for (const p of patterns.slice(1)) f.unbind('t', `q[${p}]`, p);
    expect(trie(f).size).toBe(0);
    expect(trie(f).nodeCount()).toBe(1);
    expect(matches(f, 'a.b.c')).toEqual([]);
  });

  it('prunes only the nodes a removed binding alone used', () => {
    const f = topic('a.b.c', 'a.b');
    const before = trie(f).nodeCount();
    f.unbind('t', 'q[a.b.c]', 'a.b.c');
    expect(trie(f).nodeCount()).toBe(before - 1);
    expect(matches(f, 'a.b')).toEqual(['a.b']);
  });
});

describe('topic trie against a reference matcher', () => {
  function randomString(next: () => number, alphabet: readonly string[], maxWords: number): string {
    const n = Math.floor(next() * (maxWords + 1));
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(alphabet[Math.floor(next() * alphabet.length)] as string);
    return out.join('.');
  }

  for (const seed of [1, 2, 3, 42, 2024]) {
    it(`agrees on random patterns and keys (seed ${seed}), before and after removals`, () => {
      const next = rng(seed);
      const patterns = new Set<string>();
      while (patterns.size < 120) patterns.add(randomString(next, ['a', 'b', 'c', '*', '#', ''], 6));
      const keys: string[] = [];
      for (let i = 0; i < 300; i++) keys.push(randomString(next, ['a', 'b', 'c', ''], 7));
      const f = topic(...patterns);

      const check = (live: readonly string[]): void => {
        for (const key of keys) {
          const expected = live.filter((p) => referenceMatch(words(p), words(key))).sort();
          expect(matches(f, key), `key '${key}'`).toEqual(expected);
        }
      };
      const all = [...patterns];
      check(all);

      const kept: string[] = [];
      for (const p of all) {
        if (next() < 0.5) f.unbind('t', `q[${p}]`, p);
        else kept.push(p);
      }
      check(kept);
      // The pruned trie is exactly as big as one built from the surviving bindings.
      expect(trie(f).nodeCount()).toBe(trie(topic(...kept)).nodeCount());
    });
  }
});
