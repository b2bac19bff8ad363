/** Fanout exchanges: every binding matches, whatever the routing key. */
import type { BindingEntry } from '../metadata/state.ts';
import type { RouteContext } from './route-context.ts';
import type { RoutingIndex } from './routing-index.ts';

export class FanoutIndex implements RoutingIndex {
  private readonly entries = new Set<BindingEntry>();

  get size(): number {
    return this.entries.size;
  }

  add(entry: BindingEntry): void {
    this.entries.add(entry);
  }

  remove(entry: BindingEntry): void {
    this.entries.delete(entry);
  }

  match(ctx: RouteContext): void {
    for (const entry of this.entries) ctx.collect(entry);
  }
}
