/**
 * The scratch state of one `route` call: the queue names reached so far and the exchanges still to
 * route through. Exchange-to-exchange bindings may form cycles; each exchange is routed through at
 * most once per publish, so a cycle ends.
 */
import type { BindingEntry, ExchangeNode } from '../metadata/state.ts';

export class RouteContext {
  readonly queues = new Set<string>();
  /** Exchanges reached through e2e bindings and not yet routed through. Allocated on first use. */
  private pending: ExchangeNode[] | undefined;
  /** Exchanges already routed through or queued to be. Allocated on first e2e binding. */
  private visited: Set<ExchangeNode> | undefined;
  private readonly start: ExchangeNode;

  constructor(start: ExchangeNode) {
    this.start = start;
  }

  /** A binding matched: its queue is a target, or its exchange is routed through next. */
  collect(entry: BindingEntry): void {
    const destination = entry.destination;
    if (destination.kind === 'queue') {
      this.queues.add(destination.record.name);
      return;
    }
    if (this.visited === undefined) {
      this.visited = new Set([this.start]);
      this.pending = [];
    }
    if (this.visited.has(destination)) return;
    this.visited.add(destination);
    (this.pending as ExchangeNode[]).push(destination);
  }

  /** The next exchange to route through, or undefined when done. */
  next(): ExchangeNode | undefined {
    return this.pending?.pop();
  }
}
