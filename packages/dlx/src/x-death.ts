/**
 * The `x-death` header: the history of a message's dead-letterings, newest first, one table per
 * {queue, reason}. This module computes the next value of that header for one more dead-lettering,
 * with the field types, field order and counts RabbitMQ 3.10 produces (checked against the captured
 * fixture in `test/fixtures/rabbitmq-3.10-x-death.json`).
 *
 * Field types: `count` is a signed 64-bit integer ('l'), `time` an AMQP timestamp in seconds ('T'),
 * `queue`, `reason`, `exchange` and `original-expiration` long strings ('S'), `routing-keys` an
 * array of long strings.
 *
 * Field order inside an entry is observable on the wire, and RabbitMQ writes two different orders:
 * - the first entry of a message that had no `x-death` keeps construction order:
 *   count, reason, queue, time, exchange, routing-keys[, original-expiration];
 * - an entry written when `x-death` already exists (a new {queue, reason}, or an existing one whose
 *   count is incremented) is sorted by key:
 *   count, exchange[, original-expiration], queue, reason, routing-keys, time.
 * Entries not touched by this dead-lettering keep their bytes and order.
 *
 * Worked example (the fixture): rejected from q1, then expired from q2:
 *   after 1st: [{count 1, reason rejected, queue q1, time, exchange '', routing-keys [q1]}]
 *   after 2nd: [{count 1, exchange dlx1, queue q2, reason expired, routing-keys [q1], time},
 *               {count 1, reason rejected, queue q1, time, exchange '', routing-keys [q1]}]
 */
import type { FieldEntry, FieldTable, FieldValue } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload, tableGet } from '@styx/client/wire';
import type { DeadLetterReason } from './dead-letter-reason.ts';
import { sortEntriesByKey } from './key-order.ts';

/** The header holding the dead-letter history. */
export const X_DEATH_HEADER = 'x-death';
/** Reason of the first dead-lettering; set once, never modified. */
export const X_FIRST_DEATH_REASON_HEADER = 'x-first-death-reason';
/** Queue of the first dead-lettering; set once, never modified. */
export const X_FIRST_DEATH_QUEUE_HEADER = 'x-first-death-queue';
/** Exchange the message had been published to before its first dead-lettering; set once. */
export const X_FIRST_DEATH_EXCHANGE_HEADER = 'x-first-death-exchange';

/** One dead-lettering, as recorded in a new `x-death` entry. */
export interface DeathEvent {
  /** The queue the message was in. */
  readonly queue: string;
  readonly reason: DeadLetterReason;
  /** When, in whole seconds since the epoch (AMQP timestamp). */
  readonly timeSeconds: number;
  /** The exchange the message had been published to (a DLX if it was dead-lettered before). */
  readonly exchange: string;
  /** The keys it was published with: its routing key then its CC keys; never BCC keys. */
  readonly routingKeys: readonly string[];
  /** The message's `expiration` property, when it had one. */
  readonly originalExpiration: string | undefined;
}

/** One `x-death` entry as read back (fields of unexpected types read as undefined). */
export interface XDeathEntry {
  readonly queue: string | undefined;
  readonly reason: string | undefined;
  readonly count: number | undefined;
  readonly timeSeconds: number | undefined;
  readonly exchange: string | undefined;
  readonly routingKeys: readonly string[] | undefined;
  readonly originalExpiration: string | undefined;
}

/**
 * The `x-death` value after one more dead-lettering, given its value before (`undefined` when the
 * message has none). Never mutates its input; untouched entries are shared, not copied.
 *
 * - No `x-death`, or one that is not an array (a client re-published it converted, e.g. to a string;
 *   RabbitMQ resets it too, rabbitmq-server#767): a one-entry array, construction order.
 * - No entry for {queue, reason}: a new sorted entry with count 1, prepended.
 * - An entry for {queue, reason}: its count + 1, moved to the front and sorted; its `time`,
 *   `exchange`, `routing-keys` and `original-expiration` stay those of its first event. Should a
 *   client have left several entries for the same pair, they merge into the first one, counts summed
 *   (so the array stays one entry per pair, the invariant the guide states).
 * Elements that are not tables are kept where they are (they never match a pair).
 */
export function nextXDeath(previous: FieldValue | undefined, event: DeathEvent): FieldValue {
  if (previous === undefined || fieldValueKind(previous) !== 'array') {
    return { array: { values: [{ table: { entries: freshEntries(event) } }] } };
  }
  const values = fieldValuePayload(previous, 'array').values ?? [];
  let match: FieldTable | undefined;
  let priorCount = 0;
  const others: FieldValue[] = [];
  for (const value of values) {
    const table = tableOf(value);
    if (table !== undefined && isEntryFor(table, event.queue, event.reason)) {
      match ??= table;
      priorCount += entryCount(table);
    } else {
      others.push(value);
    }
  }
  const head = match === undefined ? freshEntries(event) : withCount(match, priorCount + 1);
  sortEntriesByKey(head);
  others.unshift({ table: { entries: head } });
  return { array: { values: others } };
}

/** The entries of an `x-death` value that are tables, newest first (non-array values: none). */
export function readXDeath(value: FieldValue | undefined): XDeathEntry[] {
  if (value === undefined || fieldValueKind(value) !== 'array') return [];
  const out: XDeathEntry[] = [];
  for (const v of fieldValuePayload(value, 'array').values ?? []) {
    const table = tableOf(v);
    if (table === undefined) continue;
    const time = tableGet(table, 'time');
    const keys = tableGet(table, 'routing-keys');
    out.push({
      queue: stringOf(tableGet(table, 'queue')),
      reason: stringOf(tableGet(table, 'reason')),
      count: integerOf(tableGet(table, 'count')),
      timeSeconds:
        time !== undefined && fieldValueKind(time) === 'timestamp'
          ? fieldValuePayload(time, 'timestamp')
          : undefined,
      exchange: stringOf(tableGet(table, 'exchange')),
      routingKeys:
        keys !== undefined && fieldValueKind(keys) === 'array'
          ? (fieldValuePayload(keys, 'array').values ?? []).flatMap((k) => {
              const s = stringOf(k);
              return s === undefined ? [] : [s];
            })
          : undefined,
      originalExpiration: stringOf(tableGet(table, 'original-expiration')),
    });
  }
  return out;
}

/** The table a value carries, or undefined. */
export function tableOf(value: FieldValue): FieldTable | undefined {
  return fieldValueKind(value) === 'table' ? fieldValuePayload(value, 'table') : undefined;
}

/** A long or short string's payload, or undefined for any other type. */
export function stringOf(value: FieldValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kind = fieldValueKind(value);
  return kind === 'longStr' || kind === 'shortStr' ? fieldValuePayload(value, kind) : undefined;
}

const INTEGER_KINDS: ReadonlySet<string> = new Set(['i8', 'u8', 'i16', 'u16', 'i32', 'u32', 'i64', 'u64']);

function integerOf(value: FieldValue | undefined): number | undefined {
  if (value === undefined) return undefined;
  const kind = fieldValueKind(value);
  if (kind === undefined || !INTEGER_KINDS.has(kind)) return undefined;
  return (value as unknown as Record<string, number>)[kind];
}

function isEntryFor(table: FieldTable, queue: string, reason: string): boolean {
  return stringOf(tableGet(table, 'queue')) === queue && stringOf(tableGet(table, 'reason')) === reason;
}

/**
 * How many dead-letterings an existing entry stands for. An entry without a usable count (a client
 * rewrote it) still records at least one event, so it counts as 1.
 */
function entryCount(table: FieldTable): number {
  const count = integerOf(tableGet(table, 'count'));
  return count !== undefined && count >= 1 ? count : 1;
}

/** A fresh entry in RabbitMQ's construction order (see the module comment). */
function freshEntries(event: DeathEvent): FieldEntry[] {
  const keys: FieldValue[] = new Array(event.routingKeys.length);
  for (let i = 0; i < keys.length; i++) keys[i] = { longStr: event.routingKeys[i] as string };
  const entries: FieldEntry[] = [
    { key: 'count', value: { i64: 1 } },
    { key: 'reason', value: { longStr: event.reason } },
    { key: 'queue', value: { longStr: event.queue } },
    { key: 'time', value: { timestamp: event.timeSeconds } },
    { key: 'exchange', value: { longStr: event.exchange } },
    { key: 'routing-keys', value: { array: { values: keys } } },
  ];
  if (event.originalExpiration !== undefined) {
    entries.push({ key: 'original-expiration', value: { longStr: event.originalExpiration } });
  }
  return entries;
}

/** A copy of an entry's fields with its (first) count replaced, or added when it had none. */
function withCount(table: FieldTable, count: number): FieldEntry[] {
  const entries = table.entries.slice();
  const countEntry: FieldEntry = { key: 'count', value: { i64: count } };
  const at = entries.findIndex((e) => e.key === 'count');
  if (at < 0) entries.unshift(countEntry);
  else entries[at] = countEntry;
  return entries;
}
