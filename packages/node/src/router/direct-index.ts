/** Direct exchanges: a binding matches a routing key equal to its binding key. One map lookup per key. */
import type { BindingEntry } from '../metadata/state.ts';
import type { RouteContext } from './route-context.ts';
import type { RoutingIndex } from './routing-index.ts';

export class DirectIndex implements RoutingIndex {
  private readonly byKey = new Map<string, Set<BindingEntry>>();
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(entry: BindingEntry): void {
    const key = entry.record.routingKey;
    let set = this.byKey.get(key);
    if (set === undefined) {
      set = new Set();
      this.byKey.set(key, set);
    }
    if (!set.has(entry)) {
      set.add(entry);
      this.count++;
    }
  }

  remove(entry: BindingEntry): void {
    const key = entry.record.routingKey;
    const set = this.byKey.get(key);
    if (set === undefined || !set.delete(entry)) return;
    this.count--;
    if (set.size === 0) this.byKey.delete(key);
  }

  /** Number of distinct binding keys (for tests: emptied keys are dropped). */
  get keyCount(): number {
    return this.byKey.size;
  }

  match(ctx: RouteContext, routingKeys: readonly string[]): void {
    for (let i = 0; i < routingKeys.length; i++) {
      const set = this.byKey.get(routingKeys[i] as string);
      if (set === undefined) continue;
      for (const entry of set) ctx.collect(entry);
    }
  }
}
