/**
 * Dead-letter cycles. The guide: "Messages in such cycles (that is, messages that reach the same
 * queue twice) are dropped if there was no rejection in the entire cycle." A cycle forms, e.g., when
 * a queue dead-letters to the default exchange without a dead-letter routing key: the copy is routed
 * back to the queue it died in.
 *
 * The rule, as RabbitMQ applies it (`rabbit_dead_letter`: detect_cycles / is_cycle), decided per
 * target queue on the copy's `x-death` — which already records the current dead-lettering as its
 * first entry:
 * 1. walk `x-death` from the newest entry until the first entry whose `queue` is the target;
 * 2. no such entry: the message never died in the target, no cycle: deliver;
 * 3. otherwise the entries walked, that one included, are the cycle. It is dropped only when it is
 *    "fully automatic": every one of them is a table whose `reason` is not `rejected`. A rejection
 *    (a consumer decided) or an element that is not a table (a client wrote it) keeps the copy.
 * Because the current dead-lettering is the first entry, a copy dead-lettered as `rejected` is never
 * dropped (RabbitMQ short-cuts that case the same way).
 *
 * Worked examples (copy's x-death, newest first → target):
 * - a expired, routed back to a:          [{a,expired}]              → a: cycle, dropped
 * - a rejected, routed back to a:         [{a,rejected}]             → a: kept
 * - a expired → b expired → a:            [{b,expired},{a,expired}]  → a: dropped
 * - a expired → b rejected → a:           [{b,rejected},{a,expired}] → a: kept
 *   then a expired again → b:             [{a,expired,2},{b,rejected}] → b: kept (the cycle a..b
 *                                          holds b's rejection)
 * Only the target that closes a cycle is dropped; other targets of the same copy still get it.
 *
 * Queue and reason values are read as long or short strings (a client re-publishing a message may
 * have re-typed them); anything else never matches.
 */
import type { BasicProperties } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload, tableGet } from '@styx/client/wire';
import { stringOf, tableOf, X_DEATH_HEADER } from './x-death.ts';

/**
 * True when the copy must not be delivered to `targetQueue` (a fully automatic cycle, see the module
 * comment). `properties` are the dead-lettered copy's (its `x-death` includes this dead-lettering).
 */
export function isCycle(properties: BasicProperties, targetQueue: string): boolean {
  const xDeath = tableGet(properties.headers, X_DEATH_HEADER);
  if (xDeath === undefined || fieldValueKind(xDeath) !== 'array') return false;
  let automatic = true;
  for (const value of fieldValuePayload(xDeath, 'array').values ?? []) {
    const table = tableOf(value);
    if (table === undefined) {
      automatic = false;
      continue;
    }
    if (stringOf(tableGet(table, 'reason')) === 'rejected') automatic = false;
    if (stringOf(tableGet(table, 'queue')) === targetQueue) return automatic;
  }
  return false;
}

/** The routed target queues split into those that get the copy and those a cycle drops. */
export interface CycleSplit {
  readonly deliver: readonly string[];
  readonly dropped: readonly string[];
}

const NONE: readonly string[] = Object.freeze([]);

/**
 * Splits `targets` (the queues the copy routed to) with {@link isCycle}, keeping their order. The
 * caller counts and logs every dropped target; under at-least-once a dropped target counts as
 * settled (see `HandOffScheduler.start`).
 */
export function splitCycles(properties: BasicProperties, targets: readonly string[]): CycleSplit {
  let deliver: string[] | undefined;
  let dropped: string[] | undefined;
  for (let i = 0; i < targets.length; i++) {
    const target = targets[i] as string;
    if (isCycle(properties, target)) {
      // First drop: everything before it was delivered.
      deliver ??= targets.slice(0, i);
      dropped ??= [];
      dropped.push(target);
    } else if (deliver !== undefined) {
      deliver.push(target);
    }
  }
  // No drop: share the input list instead of copying it (the common case on the hot path).
  return dropped === undefined ? { deliver: targets, dropped: NONE } : { deliver: deliver ?? [], dropped };
}
