/**
 * Topic exchanges: a trie over the dot-separated words of binding keys. In a binding key `*`
 * matches exactly one word and `#` zero or more words. Words are split as RabbitMQ splits them:
 * the empty key has no words, and every other key has one more word than it has dots, so 'a..b'
 * is ['a', '', 'b'] and `*` matches the empty word in the middle.
 *
 * Consecutive `#` words are collapsed in the trie path ('#.#' and '#' match the same keys), which
 * bounds the branching a single binding can cause. The trie holds bindings at the node their path
 * ends on; removing the last binding below a node prunes it, so the trie's size follows the live
 * bindings, never their history. Nothing is cached between publishes.
 *
 * Worked example, bindings 'a.*' (B1), 'a.#' (B2), '#' (B3), key 'a.b':
 *
 *   root ─a─ n1 ─*─ n2{B1}        walk(root,0): 'a' → walk(n1,1): 'b' none; '*' → walk(n2,2) = end: B1
 *     │       └─#─ n3{B2}                                      '#' → walk(n3,1), walk(n3,2) = end: B2
 *     └─#─ n4{B3}                 '#' at root → walk(n4,0..2); walk(n4,2) = end: B3
 */
import type { BindingEntry } from '../metadata/state.ts';
import type { RouteContext } from './route-context.ts';
import type { RoutingIndex } from './routing-index.ts';

const NO_WORDS: readonly string[] = Object.freeze([]);

/** RabbitMQ's word split: '' has no words; otherwise split on every '.'. */
export function topicWords(key: string): readonly string[] {
  return key === '' ? NO_WORDS : key.split('.');
}

/** A binding key's trie path: its words with runs of '#' collapsed to one. */
function patternPath(bindingKey: string): readonly string[] {
  const words = topicWords(bindingKey);
  if (words.length < 2) return words;
  const path: string[] = [];
  for (const w of words) {
    if (w === '#' && path[path.length - 1] === '#') continue;
    path.push(w);
  }
  return path;
}

class TopicNode {
  readonly parent: TopicNode | undefined;
  /** The edge from the parent (unused for the root). */
  readonly word: string;
  children: Map<string, TopicNode> | undefined;
  bindings: Set<BindingEntry> | undefined;

  constructor(parent: TopicNode | undefined, word: string) {
    this.parent = parent;
    this.word = word;
  }

  isEmpty(): boolean {
    return (
      (this.children === undefined || this.children.size === 0) &&
      (this.bindings === undefined || this.bindings.size === 0)
    );
  }
}

export class TopicIndex implements RoutingIndex {
  private readonly root = new TopicNode(undefined, '');
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(entry: BindingEntry): void {
    let node = this.root;
    for (const word of patternPath(entry.record.routingKey)) {
      if (node.children === undefined) node.children = new Map();
      let child = node.children.get(word);
      if (child === undefined) {
        child = new TopicNode(node, word);
        node.children.set(word, child);
      }
      node = child;
    }
    if (node.bindings === undefined) node.bindings = new Set();
    if (!node.bindings.has(entry)) {
      node.bindings.add(entry);
      this.count++;
    }
  }

  remove(entry: BindingEntry): void {
    let node: TopicNode | undefined = this.root;
    for (const word of patternPath(entry.record.routingKey)) {
      node = node.children?.get(word);
      if (node === undefined) return;
    }
    if (node.bindings === undefined || !node.bindings.delete(entry)) return;
    this.count--;
    // Prune: drop now-empty nodes up to the first one still in use.
    while (node.parent !== undefined && node.isEmpty()) {
      node.parent.children?.delete(node.word);
      node = node.parent;
    }
  }

  /** Nodes in the trie, root included (for tests: an index with no bindings has exactly 1). */
  nodeCount(): number {
    let n = 0;
    const stack: TopicNode[] = [this.root];
    for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
      n++;
      if (node.children !== undefined) for (const child of node.children.values()) stack.push(child);
    }
    return n;
  }

  match(ctx: RouteContext, routingKeys: readonly string[]): void {
    if (this.count === 0) return;
    for (let i = 0; i < routingKeys.length; i++) {
      walk(this.root, topicWords(routingKeys[i] as string), 0, ctx);
    }
  }
}

/** Reports every binding whose path matches words[i..] from `node`. */
function walk(node: TopicNode, words: readonly string[], i: number, ctx: RouteContext): void {
  const children = node.children;
  if (i === words.length) {
    if (node.bindings !== undefined) for (const entry of node.bindings) ctx.collect(entry);
    // A trailing '#' matches zero words.
    const hash = children?.get('#');
    if (hash !== undefined) walk(hash, words, i, ctx);
    return;
  }
  if (children === undefined) return;
  const word = words[i] as string;
  // A literal '*' or '#' in a routing key takes the same edge as the wildcard below; skip the
  // duplicate walk.
  if (word !== '*' && word !== '#') {
    const exact = children.get(word);
    if (exact !== undefined) walk(exact, words, i + 1, ctx);
  }
  const star = children.get('*');
  if (star !== undefined) walk(star, words, i + 1, ctx);
  const hash = children.get('#');
  if (hash !== undefined) {
    // '#' swallows words[i..j) for every j, including none.
    for (let j = i; j <= words.length; j++) walk(hash, words, j, ctx);
  }
}
