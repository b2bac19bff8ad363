/**
 * Routing a published message: the queues an exchange delivers it to, following exchange-to-exchange
 * bindings. Runs for every publish, so it reads the metadata graph directly (one map lookup for
 * the vhost, one for the exchange, then index lookups) and allocates little: the result set, one
 * scratch object, and only when an e2e binding matches, a visited set and a work list.
 */

import type { FieldTable } from '@styx/client/wire';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import { RouteContext } from './route-context.ts';

const EMPTY: ReadonlySet<string> = new Set();

/**
 * The names of the queues in `vhost` that a message published to `exchange` reaches.
 *
 * `routingKeys` are the publish routing key plus the CC and BCC keys (the caller extracts them);
 * the result is the union over all keys, each queue once. Every exchange reached (the first and
 * each one through e2e bindings) routes on all keys and the headers, at most once per call, so
 * cycles end. The default exchange '' delivers to the queue named by each key, if it exists.
 *
 * An unknown vhost or exchange routes nowhere; the caller checks existence (404) and `internal`
 * (a client may not publish to an internal exchange) before routing. The returned set must not
 * be modified (an empty result may be shared).
 */
export function route(
  machine: MetadataMachine,
  vhost: string,
  exchange: string,
  routingKeys: readonly string[],
  headers: FieldTable | undefined,
): ReadonlySet<string> {
  const vh = machine.vhostNode(vhost);
  if (vh === undefined) return EMPTY;
  if (exchange === '') {
    // The default exchange: implicit bindings from every queue's name; nothing else can bind to it.
    let out: Set<string> | undefined;
    for (let i = 0; i < routingKeys.length; i++) {
      const key = routingKeys[i] as string;
      if (!vh.queues.has(key)) continue;
      if (out === undefined) out = new Set();
      out.add(key);
    }
    return out ?? EMPTY;
  }
  const start = vh.exchanges.get(exchange);
  if (start === undefined || start.index.size === 0) return EMPTY;
  const ctx = new RouteContext(start);
  for (let x: typeof start | undefined = start; x !== undefined; x = ctx.next()) {
    x.index.match(ctx, routingKeys, headers);
  }
  return ctx.queues;
}
