/**
 * Which messages of a queue an operator means: the selection shared by the dead-letter inspector
 * (browse) and redrive, so both pick exactly the same messages for the same filter.
 *
 * A filter is a conjunction of optional criteria (an empty filter selects every message):
 * - `reason`: the reason of the message's latest dead-lettering (`latestDeath`);
 * - `sourceQueue`: the queue of its latest dead-lettering: where it died last, where a redrive
 *   "back to its source" sends it;
 * - `olderThanMs` / `newerThanMs`: its age in this queue (now minus its enqueue time here, which for
 *   a dead-lettered copy is when it was dead-lettered into this queue): older means age >= the
 *   bound, newer means age < the bound;
 * - `headers`: each named header is present with that value, compared as text (`headerText`).
 *
 * The latest dead-lettering is the first `x-death` entry (RabbitMQ moves the {queue, reason} entry
 * it updates to the front); a message whose `x-death` is missing or unreadable falls back to its
 * `x-last-death-*` headers (RabbitMQ 3.13+ writes them) and then its `x-first-death-*` headers.
 * A message never dead-lettered has no latest death: a `reason` or `sourceQueue` criterion never
 * selects it.
 *
 * Filters come from an HTTP query string (`parseFilterQuery`) or a JSON object (`parseFilterJson`,
 * for request bodies and the cluster RPC); both refuse bad input with `MessageFilterError`.
 */
import type { BasicProperties, FieldValue } from '@styx/client/wire';
import { fieldValueKind, fieldValuePayload, tableGet } from '@styx/client/wire';
import type { DeadLetterReason } from '@styx/dlx';
import {
  DEAD_LETTER_REASONS,
  isDeadLetterReason,
  readXDeath,
  X_DEATH_HEADER,
  X_FIRST_DEATH_EXCHANGE_HEADER,
  X_FIRST_DEATH_QUEUE_HEADER,
  X_FIRST_DEATH_REASON_HEADER,
} from '@styx/dlx';
import { valueText } from '../metadata/field-values.ts';

/** RabbitMQ 3.13+'s headers for the latest dead-lettering (Styx reads them; it writes `x-death`). */
export const X_LAST_DEATH_REASON_HEADER = 'x-last-death-reason';
export const X_LAST_DEATH_QUEUE_HEADER = 'x-last-death-queue';
export const X_LAST_DEATH_EXCHANGE_HEADER = 'x-last-death-exchange';

/** At most this many header criteria in one filter (each costs a lookup per message scanned). */
export const MAX_HEADER_CRITERIA = 16;
/** Longest header name or value a criterion may carry, characters. */
export const MAX_CRITERION_LENGTH = 1024;

/** One `header=name:value` criterion. */
export interface HeaderCriterion {
  readonly name: string;
  readonly value: string;
}

export interface MessageFilter {
  readonly reason?: DeadLetterReason | undefined;
  readonly sourceQueue?: string | undefined;
  readonly olderThanMs?: number | undefined;
  readonly newerThanMs?: number | undefined;
  readonly headers?: readonly HeaderCriterion[] | undefined;
}

/** A filter that selects every message. */
export const MATCH_ALL: MessageFilter = Object.freeze({});

/** A filter (or a part of one) that cannot be used: the API answers 400 with this text. */
export class MessageFilterError extends Error {
  readonly code = 'MESSAGE_FILTER_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'MessageFilterError';
  }
}

/** One dead-lettering as the headers tell it (fields unknown when a client rewrote them). */
export interface DeathSummary {
  readonly reason: string | undefined;
  readonly queue: string | undefined;
  readonly exchange: string | undefined;
}

/** The message's latest dead-lettering (see the module comment), or undefined if it has none. */
export function latestDeath(properties: BasicProperties): DeathSummary | undefined {
  const headers = properties.headers;
  const first = readXDeath(tableGet(headers, X_DEATH_HEADER))[0];
  if (first !== undefined) return { reason: first.reason, queue: first.queue, exchange: first.exchange };
  return (
    summaryOf(
      properties,
      X_LAST_DEATH_REASON_HEADER,
      X_LAST_DEATH_QUEUE_HEADER,
      X_LAST_DEATH_EXCHANGE_HEADER,
    ) ?? firstDeath(properties)
  );
}

/** The message's first dead-lettering, from its `x-first-death-*` headers, or undefined. */
export function firstDeath(properties: BasicProperties): DeathSummary | undefined {
  return summaryOf(
    properties,
    X_FIRST_DEATH_REASON_HEADER,
    X_FIRST_DEATH_QUEUE_HEADER,
    X_FIRST_DEATH_EXCHANGE_HEADER,
  );
}

/** The `x-last-death-*` headers as RabbitMQ 3.13+ writes them, or undefined when absent. */
export function lastDeathHeaders(properties: BasicProperties): DeathSummary | undefined {
  return summaryOf(
    properties,
    X_LAST_DEATH_REASON_HEADER,
    X_LAST_DEATH_QUEUE_HEADER,
    X_LAST_DEATH_EXCHANGE_HEADER,
  );
}

function summaryOf(
  properties: BasicProperties,
  reasonKey: string,
  queueKey: string,
  exchangeKey: string,
): DeathSummary | undefined {
  const headers = properties.headers;
  const reason = textOf(tableGet(headers, reasonKey));
  const queue = textOf(tableGet(headers, queueKey));
  const exchange = textOf(tableGet(headers, exchangeKey));
  if (reason === undefined && queue === undefined && exchange === undefined) return undefined;
  return { reason, queue, exchange };
}

function textOf(value: FieldValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kind = fieldValueKind(value);
  return kind === 'longStr' || kind === 'shortStr' ? fieldValuePayload(value, kind) : undefined;
}

/**
 * A header value as the text a criterion compares it with: strings as they are, numbers in
 * JavaScript's decimal form, booleans as 'true'/'false', timestamps as their seconds; other types
 * (tables, arrays, byte arrays, void) have no text and never match.
 */
export function headerText(value: FieldValue | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kind = fieldValueKind(value);
  if (kind === undefined || WITHOUT_TEXT.has(kind)) return undefined;
  return valueText(value);
}

/** Header types a criterion's text never matches. */
const WITHOUT_TEXT: ReadonlySet<string> = new Set(['array', 'table', 'byteArray', 'void', 'decimal']);

/** What a filter looks at in a message. */
export interface FilterSubject {
  /** When it was enqueued in this queue, ms since the epoch. */
  readonly enqueuedAt: number;
  readonly properties: BasicProperties;
}

/** Whether `filter` selects the message at time `now` (ms since the epoch). */
export function matchesFilter(filter: MessageFilter, subject: FilterSubject, now: number): boolean {
  const age = now - subject.enqueuedAt;
  if (filter.olderThanMs !== undefined && age < filter.olderThanMs) return false;
  if (filter.newerThanMs !== undefined && age >= filter.newerThanMs) return false;
  if (filter.reason !== undefined || filter.sourceQueue !== undefined) {
    const death = latestDeath(subject.properties);
    if (death === undefined) return false;
    if (filter.reason !== undefined && death.reason !== filter.reason) return false;
    if (filter.sourceQueue !== undefined && death.queue !== filter.sourceQueue) return false;
  }
  if (filter.headers !== undefined) {
    const table = subject.properties.headers;
    for (const { name, value } of filter.headers) {
      if (headerText(tableGet(table, name)) !== value) return false;
    }
  }
  return true;
}

/** Whether the filter needs a message's properties (read from the body store) to decide. */
export function needsProperties(filter: MessageFilter): boolean {
  return (
    filter.reason !== undefined ||
    filter.sourceQueue !== undefined ||
    (filter.headers !== undefined && filter.headers.length > 0)
  );
}

// ------------------------------------------------------------------------------ parsing

function parseReason(value: unknown): DeadLetterReason {
  if (!isDeadLetterReason(value)) {
    throw new MessageFilterError(
      `'reason' must be one of ${DEAD_LETTER_REASONS.join(', ')}; got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

function parseText(key: string, value: unknown): string {
  if (typeof value !== 'string') throw new MessageFilterError(`'${key}' must be a string`);
  if (value.length > MAX_CRITERION_LENGTH)
    throw new MessageFilterError(`'${key}' is longer than ${MAX_CRITERION_LENGTH} characters`);
  return value;
}

function parseAge(key: string, value: unknown): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
    throw new MessageFilterError(`'${key}' must be a whole number of milliseconds >= 0`);
  }
  return n;
}

/** `name:value`, split at the first ':' (a header name holding ':' cannot be filtered on). */
function parseHeaderCriterion(text: unknown): HeaderCriterion {
  const source = parseText('header', text);
  const at = source.indexOf(':');
  if (at <= 0)
    throw new MessageFilterError(`'header' must be 'name:value' with a non-empty name; got '${source}'`);
  return { name: source.slice(0, at), value: source.slice(at + 1) };
}

function checkHeaderCount(count: number): void {
  if (count > MAX_HEADER_CRITERIA)
    throw new MessageFilterError(`at most ${MAX_HEADER_CRITERIA} header criteria; got ${count}`);
}

function assemble(parts: {
  reason?: DeadLetterReason | undefined;
  sourceQueue?: string | undefined;
  olderThanMs?: number | undefined;
  newerThanMs?: number | undefined;
  headers: HeaderCriterion[];
}): MessageFilter {
  const filter: {
    reason?: DeadLetterReason;
    sourceQueue?: string;
    olderThanMs?: number;
    newerThanMs?: number;
    headers?: readonly HeaderCriterion[];
  } = {};
  if (parts.reason !== undefined) filter.reason = parts.reason;
  if (parts.sourceQueue !== undefined) filter.sourceQueue = parts.sourceQueue;
  if (parts.olderThanMs !== undefined) filter.olderThanMs = parts.olderThanMs;
  if (parts.newerThanMs !== undefined) filter.newerThanMs = parts.newerThanMs;
  if (parts.headers.length > 0) filter.headers = parts.headers;
  return filter;
}

/** The query parameters a filter is read from (other parameters are the caller's business). */
export const FILTER_QUERY_KEYS = [
  'reason',
  'source_queue',
  'older_than_ms',
  'newer_than_ms',
  'header',
] as const;

/**
 * A filter from query parameters: `reason`, `source_queue`, `older_than_ms`, `newer_than_ms` (each
 * at most once) and `header=name:value` (repeatable, all must match).
 */
export function parseFilterQuery(query: URLSearchParams): MessageFilter {
  const single = (key: string): string | undefined => {
    const values = query.getAll(key);
    if (values.length > 1) throw new MessageFilterError(`'${key}' may be given once`);
    return values[0];
  };
  const reason = single('reason');
  const sourceQueue = single('source_queue');
  const older = single('older_than_ms');
  const newer = single('newer_than_ms');
  const headers = query.getAll('header');
  checkHeaderCount(headers.length);
  return assemble({
    reason: reason === undefined ? undefined : parseReason(reason),
    sourceQueue: sourceQueue === undefined ? undefined : parseText('source_queue', sourceQueue),
    olderThanMs: older === undefined ? undefined : parseAge('older_than_ms', older),
    newerThanMs: newer === undefined ? undefined : parseAge('newer_than_ms', newer),
    headers: headers.map(parseHeaderCriterion),
  });
}

const JSON_KEYS: ReadonlySet<string> = new Set([
  'reason',
  'source_queue',
  'older_than_ms',
  'newer_than_ms',
  'headers',
]);

/**
 * A filter from a JSON object (undefined or null: select everything):
 * `{"reason"?, "source_queue"?, "older_than_ms"?, "newer_than_ms"?, "headers"?: [{"name", "value"}]}`.
 * Unknown keys are refused, so a misspelt criterion cannot silently select every message.
 */
export function parseFilterJson(value: unknown): MessageFilter {
  if (value === undefined || value === null) return MATCH_ALL;
  if (typeof value !== 'object' || Array.isArray(value))
    throw new MessageFilterError('a filter must be a JSON object');
  const obj = value as Record<string, unknown>;
  for (const key of Object.keys(obj)) {
    if (!JSON_KEYS.has(key)) throw new MessageFilterError(`unknown filter field '${key}'`);
  }
  const headersValue = obj.headers ?? [];
  if (!Array.isArray(headersValue)) throw new MessageFilterError("'headers' must be an array");
  checkHeaderCount(headersValue.length);
  const headers = headersValue.map((h: unknown): HeaderCriterion => {
    if (typeof h !== 'object' || h === null || Array.isArray(h))
      throw new MessageFilterError("each of 'headers' must be an object {name, value}");
    const { name, value: text, ...rest } = h as Record<string, unknown>;
    if (Object.keys(rest).length > 0)
      throw new MessageFilterError(`unknown header criterion field '${Object.keys(rest)[0]}'`);
    const parsedName = parseText('headers[].name', name);
    if (parsedName === '') throw new MessageFilterError("'headers[].name' must not be empty");
    return { name: parsedName, value: parseText('headers[].value', text) };
  });
  return assemble({
    reason: obj.reason === undefined ? undefined : parseReason(obj.reason),
    sourceQueue: obj.source_queue === undefined ? undefined : parseText('source_queue', obj.source_queue),
    olderThanMs: obj.older_than_ms === undefined ? undefined : parseAge('older_than_ms', obj.older_than_ms),
    newerThanMs: obj.newer_than_ms === undefined ? undefined : parseAge('newer_than_ms', obj.newer_than_ms),
    headers,
  });
}

/** The JSON form `parseFilterJson` reads back (for the cluster RPC and for echoing a filter). */
export function filterJson(filter: MessageFilter): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (filter.reason !== undefined) out.reason = filter.reason;
  if (filter.sourceQueue !== undefined) out.source_queue = filter.sourceQueue;
  if (filter.olderThanMs !== undefined) out.older_than_ms = filter.olderThanMs;
  if (filter.newerThanMs !== undefined) out.newer_than_ms = filter.newerThanMs;
  if (filter.headers !== undefined)
    out.headers = filter.headers.map((h) => ({ name: h.name, value: h.value }));
  return out;
}
