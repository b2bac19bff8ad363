/**
 * A per-exchange index of its bindings, shaped by the exchange type so a publish finds its matches
 * without scanning (except fanout and headers, where every binding is a candidate by definition).
 * Indexes are updated incrementally on bind and unbind and never rebuilt.
 */
import type { FieldTable } from '@styx/client/wire';
import type { BindingEntry } from '../metadata/state.ts';
import type { RouteContext } from './route-context.ts';

export interface RoutingIndex {
  add(entry: BindingEntry): void;
  /** Removes a binding previously added (a no-op for one that is not there). */
  remove(entry: BindingEntry): void;
  /** Reports every binding matching any of `routingKeys` (or `headers`) to `ctx.collect`. */
  match(ctx: RouteContext, routingKeys: readonly string[], headers: FieldTable | undefined): void;
  /** Number of bindings held. */
  readonly size: number;
}
