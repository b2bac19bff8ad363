/**
 * Where a dead-lettered copy goes: the node routes it through the queue's dead-letter exchange
 * (the same router as a publish), then the dead-letter cycle rule (`@styx/dlx` splitCycles) drops
 * the targets the copy would come back to without a rejection on the way.
 */
import type { FieldTable } from '@styx/client/wire';
import type { DeadLetteredCopy, HandOffId } from '@styx/dlx';
import { splitCycles } from '@styx/dlx';
import type { QueueReply, StoredMessage } from './types.ts';

/**
 * A queue that takes dead-lettered copies through the asynchronous enqueue/confirm interface of
 * any publish: a local `QueueActor`, or in a cluster a proxy to the queue's leader. The promise
 * resolves once the target committed (`ok`), recognised a hand-off it already has (`duplicate`) or
 * refused the copy (`rejected`); it rejects when the target could not be reached.
 */
export interface DeadLetterTarget {
  /** The queue's name, unique in its vhost (the cycle rule and confirms go by name). */
  readonly name: string;
  enqueue(message: StoredMessage, ttl: number | undefined, handOff?: HandOffId): Promise<QueueReply>;
}

/**
 * The target queues a copy routes to (maybe none); `no-exchange` when the DLX does not exist;
 * `unavailable` when it routes to a queue that is not running yet (the node is starting or
 * recovering its queues, or the queue is being declared): sending to the others only would lose
 * the copy for that one, so the whole attempt waits.
 */
export type DeadLetterRoute = readonly DeadLetterTarget[] | 'no-exchange' | 'unavailable';

/**
 * Routes a copy: `exchange` is the DLX, `routingKeys` the copy's complete list of keys (the router
 * must not derive more from its CC header), `headers` for headers exchanges.
 */
export type RouteDeadLetter = (
  vhost: string,
  exchange: string,
  routingKeys: readonly string[],
  headers: FieldTable | undefined,
) => DeadLetterRoute;

/** How routing went: see `DeadLetterRoute`; `routed` even when no queue matched. */
export type RouteStatus = 'routed' | 'no-exchange' | 'unavailable';

/** A copy routed and split by the cycle rule. */
export interface RoutedCopy {
  readonly status: RouteStatus;
  /** The targets that get the copy, in routing order. */
  readonly deliver: readonly DeadLetterTarget[];
  /** The names of the targets a cycle drops the copy for. */
  readonly cycleDropped: readonly string[];
}

const NO_TARGETS: readonly DeadLetterTarget[] = Object.freeze([]);
const NO_NAMES: readonly string[] = Object.freeze([]);
const MISSING_EXCHANGE: RoutedCopy = Object.freeze({
  status: 'no-exchange',
  deliver: NO_TARGETS,
  cycleDropped: NO_NAMES,
});
const UNAVAILABLE: RoutedCopy = Object.freeze({
  status: 'unavailable',
  deliver: NO_TARGETS,
  cycleDropped: NO_NAMES,
});

/** Route `copy` in `vhost` and apply the cycle rule. Allocates nothing beyond the router's list when no cycle drops. */
export function routeCopy(copy: DeadLetteredCopy, vhost: string, route: RouteDeadLetter): RoutedCopy {
  const targets = route(vhost, copy.exchange, copy.routingKeys, copy.properties.headers ?? undefined);
  if (targets === 'no-exchange') return MISSING_EXCHANGE;
  if (targets === 'unavailable') return UNAVAILABLE;
  if (targets.length === 0) return { status: 'routed', deliver: NO_TARGETS, cycleDropped: NO_NAMES };
  const names = targets.map(nameOf);
  const split = splitCycles(copy.properties, names);
  if (split.dropped.length === 0) return { status: 'routed', deliver: targets, cycleDropped: NO_NAMES };
  const dropped = new Set(split.dropped);
  return {
    status: 'routed',
    deliver: targets.filter((t) => !dropped.has(t.name)),
    cycleDropped: split.dropped,
  };
}

function nameOf(target: DeadLetterTarget): string {
  return target.name;
}
