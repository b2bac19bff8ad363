/**
 * The management API's dead-letter endpoints:
 *
 *   GET /api/queues/{vhost}/{name}/messages   the inspector: a page of the queue's ready messages,
 *       read on its leader without taking them (broker/queue-browse.ts). Query: `offset`, `limit`
 *       (1-500, default 50), `after` (the previous page's `next`), `body_bytes` (preview, 0-65536,
 *       default 4096) and the filter (queue/message-filter.ts): `reason`, `source_queue`,
 *       `older_than_ms`, `newer_than_ms`, `header=name:value` (repeatable). Any other parameter
 *       is a 400, so a misspelt filter never shows every message. Shape: message-views.ts.
 *   GET /api/queues/{vhost}/{name}/dead-lettering   explain: for each reason, what happens to a
 *       message leaving the queue right now (dlx-explain.ts, which has the shape), from the
 *       metadata this node holds (every node holds the cluster's).
 *
 * Who may read messages (access-table.ts): the same rule as the other queue reads (administrators
 * and monitoring users everywhere, others in the vhosts they have a permission entry for; other
 * vhosts are a 404), and, since this shows message contents, every user — administrators too, as
 * in RabbitMQ, and as basic.get — needs the `read` permission on the queue (403 otherwise). The
 * explanation shows configuration and topology only: the queue reads' rule alone.
 */
import type { QueueBrowser } from '../broker/queue-browse.ts';
import { QueueBrowseUnavailableError, QueueNotRunningError } from '../broker/queue-browse.ts';
import { explainDeadLettering, metadataTopology } from '../dlx-explain.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { QueueRecord, UserRecord } from '../metadata/types.ts';
import type { BrowseRequest } from '../queue/message-browse.ts';
import {
  BrowseRequestError,
  checkBrowseRequest,
  DEFAULT_BROWSE_LIMIT,
  DEFAULT_PREVIEW_BYTES,
  MAX_PREVIEW_BYTES,
} from '../queue/message-browse.ts';
import type { MessageFilter } from '../queue/message-filter.ts';
import { FILTER_QUERY_KEYS, MessageFilterError, parseFilterQuery } from '../queue/message-filter.ts';
import { badRequest, notFound, serviceUnavailable } from './api-error.ts';
import type { ApiRequest, ApiResponse, Route } from './api-types.ts';
import { browsePageJson } from './message-views.ts';
import type { Json } from './views.ts';

export interface DeadLetterRouteDeps {
  readonly browser: Pick<QueueBrowser, 'browse'>;
  readonly metadata: MetadataMachine;
  /** The queue `user` asks for: 404 if missing or its vhost is hidden (management-api.ts). */
  readonly requireQueue: (user: UserRecord, vhost: string, name: string) => QueueRecord;
}

const PAGE_KEYS = ['offset', 'limit', 'after', 'body_bytes'] as const;
const MESSAGE_QUERY_KEYS: ReadonlySet<string> = new Set<string>([...PAGE_KEYS, ...FILTER_QUERY_KEYS]);

/** A whole number from the query, or `fallback` when absent; 400 when not one. */
function wholeNumber(query: URLSearchParams, key: string, fallback: number | undefined): number | undefined {
  const values = query.getAll(key);
  if (values.length > 1) throw badRequest(`'${key}' may be given once`);
  const text = values[0];
  if (text === undefined) return fallback;
  if (!/^\d{1,15}$/.test(text)) throw badRequest(`'${key}' must be a whole number >= 0; got '${text}'`);
  return Number(text);
}

/** The browse request and filter a query asks for; 400 with the reason when it cannot be served. */
export function browseRequestOf(query: URLSearchParams): BrowseRequest {
  for (const key of query.keys()) {
    if (!MESSAGE_QUERY_KEYS.has(key)) {
      throw badRequest(`unknown parameter '${key}' (known: ${[...MESSAGE_QUERY_KEYS].join(', ')})`);
    }
  }
  let filter: MessageFilter;
  try {
    filter = parseFilterQuery(query);
  } catch (error) {
    if (error instanceof MessageFilterError) throw badRequest(error.message);
    throw error;
  }
  const request: BrowseRequest = {
    after: wholeNumber(query, 'after', undefined),
    offset: wholeNumber(query, 'offset', 0) as number,
    limit: wholeNumber(query, 'limit', DEFAULT_BROWSE_LIMIT) as number,
    bodyBytes: wholeNumber(query, 'body_bytes', DEFAULT_PREVIEW_BYTES) as number,
    filter,
  };
  try {
    checkBrowseRequest(request, MAX_PREVIEW_BYTES);
  } catch (error) {
    if (error instanceof BrowseRequestError) throw badRequest(error.message);
    throw error;
  }
  return request;
}

/** A member's node name, as operators know it (its id when the metadata does not list it). */
function nodeName(metadata: MetadataMachine, id: string): string {
  return metadata.clusterNodes().find((n) => n.id === id)?.name ?? id;
}

export function deadLetterRoutes(deps: DeadLetterRouteDeps): Route[] {
  const { browser, metadata } = deps;

  const messages = async (request: ApiRequest): Promise<ApiResponse> => {
    // The router checked the read permission on the queue (access-table.ts), administrators too.
    const record = deps.requireQueue(request.user, request.params[0] as string, request.params[1] as string);
    const browse = browseRequestOf(request.query);
    try {
      const page = await browser.browse(record, browse);
      return {
        status: 200,
        body: browsePageJson(record, page, browse.filter, nodeName(metadata, page.leader)),
      };
    } catch (error) {
      if (error instanceof BrowseRequestError) throw badRequest(error.message);
      if (error instanceof QueueBrowseUnavailableError) throw serviceUnavailable(error.message);
      // Deleted between the lookup and the read.
      if (error instanceof QueueNotRunningError) throw notFound(error.message);
      throw error;
    }
  };

  const explain = (request: ApiRequest): ApiResponse => {
    const record = deps.requireQueue(request.user, request.params[0] as string, request.params[1] as string);
    const explanation = explainDeadLettering(metadataTopology(metadata), record.vhost, record.name);
    return { status: 200, body: explanation as unknown as Json };
  };

  return [
    { path: ['queues', ':vhost', ':name', 'messages'], methods: { GET: messages } },
    { path: ['queues', ':vhost', ':name', 'dead-lettering'], methods: { GET: explain } },
  ];
}
