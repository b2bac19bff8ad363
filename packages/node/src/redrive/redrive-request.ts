/**
 * A redrive request as the HTTP API and `styx ctl redrive` send it, checked field by field: every
 * wrong shape is a `RedriveRequestError` naming the field (the API's 400), and unknown fields are
 * refused so a misspelt option never silently does something else.
 *
 *   {
 *     "target": "source" | {"exchange": "E", "routing_key": "K"},   (required)
 *     "filter": {"reason"?, "source_queue"?, "older_than_ms"?, "newer_than_ms"?, "headers"?},
 *     "dry_run": false, "rate": 50, "max_messages": 1000
 *   }
 */

import { MAX_REDRIVE_RATE, MAX_TEXT_LENGTH } from '../metadata/redrive-ledger.ts';
import type { RedriveSpec, RedriveTarget } from '../metadata/redrive-types.ts';
import { filterJson, MessageFilterError, parseFilterJson } from '../queue/message-filter.ts';

export class RedriveRequestError extends Error {
  readonly code = 'REDRIVE_REQUEST_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'RedriveRequestError';
  }
}

export interface RedriveRequest {
  readonly spec: RedriveSpec;
  readonly dryRun: boolean;
}

const KEYS: ReadonlySet<string> = new Set(['target', 'filter', 'dry_run', 'rate', 'max_messages']);
const TARGET_KEYS: ReadonlySet<string> = new Set(['exchange', 'routing_key']);

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseTarget(value: unknown): RedriveTarget {
  if (value === 'source') return { kind: 'source' };
  if (!isObject(value))
    throw new RedriveRequestError(`'target' must be "source" or {"exchange": E, "routing_key": K}`);
  for (const key of Object.keys(value))
    if (!TARGET_KEYS.has(key)) throw new RedriveRequestError(`unknown target field '${key}'`);
  const { exchange, routing_key: routingKey } = value;
  if (typeof exchange !== 'string' || exchange.length > MAX_TEXT_LENGTH)
    throw new RedriveRequestError(`'target.exchange' must be a string ('' is the default exchange)`);
  if (typeof routingKey !== 'string' || routingKey.length > MAX_TEXT_LENGTH)
    throw new RedriveRequestError(`'target.routing_key' must be a string`);
  return { kind: 'exchange', exchange, routingKey };
}

function parseRate(value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !(value > 0) || value > MAX_REDRIVE_RATE)
    throw new RedriveRequestError(
      `'rate' must be a number of messages per second in (0, ${MAX_REDRIVE_RATE}]`,
    );
  return value;
}

function parseMax(value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)
    throw new RedriveRequestError(`'max_messages' must be a whole number >= 1`);
  return value;
}

/** The request in `body` (parsed JSON), or a `RedriveRequestError`. */
export function parseRedriveRequest(body: unknown): RedriveRequest {
  if (!isObject(body)) throw new RedriveRequestError('the request body must be a JSON object');
  for (const key of Object.keys(body))
    if (!KEYS.has(key)) throw new RedriveRequestError(`unknown field '${key}'`);
  if (body.target === undefined) throw new RedriveRequestError(`'target' is required`);
  const target = parseTarget(body.target);
  let filter: Record<string, unknown>;
  try {
    filter = filterJson(parseFilterJson(body.filter));
  } catch (error) {
    if (error instanceof MessageFilterError) throw new RedriveRequestError(`bad 'filter': ${error.message}`);
    throw error;
  }
  const dryRun = body.dry_run ?? false;
  if (typeof dryRun !== 'boolean') throw new RedriveRequestError(`'dry_run' must be true or false`);
  return {
    spec: { filter, target, rate: parseRate(body.rate), maxMessages: parseMax(body.max_messages) },
    dryRun,
  };
}
