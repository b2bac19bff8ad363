/**
 * The JSON shapes of the dead-letter inspector (`GET /api/queues/{vhost}/{name}/messages`): a
 * browsed page and its messages, with the body as a bounded preview and the dead-letter headers
 * decoded. Pure functions; the shapes are documented in the README ("Dead-letter inspector") and
 * the web UI reads them: add fields, never rename or remove one.
 *
 * Everything here comes from publishers (headers, bodies, names): it is data in a JSON string,
 * never markup; whoever renders it must escape it.
 */
import type { BasicProperties } from '@styx/client/wire';
import { tableGet } from '@styx/client/wire';
import type { XDeathEntry } from '@styx/dlx';
import { readXDeath, X_DEATH_HEADER } from '@styx/dlx';
import type { QueueBrowseResult } from '../broker/queue-browse.ts';
import type { QueueRecord } from '../metadata/types.ts';
import type { BrowsedMessage } from '../queue/message-browse.ts';
import type { DeathSummary, MessageFilter } from '../queue/message-filter.ts';
import { filterJson, firstDeath, lastDeathHeaders, latestDeath } from '../queue/message-filter.ts';
import type { Json } from './views.ts';
import { argumentsJson } from './views.ts';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** How a body preview is written: UTF-8 text (JSON is text too), or hex for anything else. */
export type PreviewEncoding = 'json' | 'text' | 'hex';

/** Control characters other than tab, line feed and carriage return: a body holding them is binary. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: detecting them is the point
const BINARY_CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Whether a content type names JSON (`application/json`, `application/problem+json`, ...). */
function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType == null) return false;
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  return type === 'application/json' || type.endsWith('+json') || type === 'text/json';
}

/**
 * `bytes` as UTF-8 text, or undefined when they are not. A preview cut inside a multi-byte
 * character (`cut`) still reads as text: up to 3 trailing bytes of the cut character are dropped.
 */
function utf8Text(bytes: Uint8Array, cut: boolean): string | undefined {
  for (let drop = 0; drop <= (cut ? 3 : 0) && drop <= bytes.byteLength; drop++) {
    try {
      return strictUtf8.decode(bytes.subarray(0, bytes.byteLength - drop));
    } catch {
      // Try again without one more trailing byte.
    }
  }
  return undefined;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** A body preview: its encoding, the text, and whether it was cut. */
export interface BodyPreview {
  readonly encoding: PreviewEncoding;
  readonly preview: string;
  readonly truncated: boolean;
}

/**
 * How to show `preview` (the first bytes of a body of `size` bytes): `json` when the content type
 * says JSON or the whole body parses as JSON, `text` when it is UTF-8 without binary control
 * characters, else `hex` (two lowercase digits per byte).
 */
export function bodyPreview(
  preview: Uint8Array,
  size: number,
  contentType: string | null | undefined,
): BodyPreview {
  const truncated = preview.byteLength < size;
  const text = utf8Text(preview, truncated);
  if (text === undefined || BINARY_CONTROL.test(text)) {
    return { encoding: 'hex', preview: hex(preview), truncated };
  }
  if (isJsonContentType(contentType)) return { encoding: 'json', preview: text, truncated };
  if (!truncated && /^\s*[[{]/.test(text)) {
    try {
      JSON.parse(text);
      return { encoding: 'json', preview: text, truncated };
    } catch {
      // Looked like JSON, is not: plain text.
    }
  }
  return { encoding: 'text', preview: text, truncated };
}

/** The basic properties that are set, with RabbitMQ's management names; headers apart. */
export function propertiesJson(p: BasicProperties): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  const put = (key: string, value: string | number | null | undefined): void => {
    if (value !== undefined && value !== null) out[key] = value;
  };
  put('content_type', p.contentType);
  put('content_encoding', p.contentEncoding);
  put('delivery_mode', p.deliveryMode);
  put('priority', p.priority);
  put('correlation_id', p.correlationId);
  put('reply_to', p.replyTo);
  put('expiration', p.expiration);
  put('message_id', p.messageId);
  put('timestamp', p.timestamp);
  put('type', p.type);
  put('user_id', p.userId);
  put('app_id', p.appId);
  put('cluster_id', p.clusterId);
  return out;
}

function deathEntryJson(entry: XDeathEntry): Json {
  return {
    reason: entry.reason ?? null,
    queue: entry.queue ?? null,
    exchange: entry.exchange ?? null,
    routing_keys: entry.routingKeys === undefined ? null : [...entry.routingKeys],
    count: entry.count ?? null,
    time: entry.timeSeconds ?? null,
    time_iso: entry.timeSeconds === undefined ? null : new Date(entry.timeSeconds * 1000).toISOString(),
    original_expiration: entry.originalExpiration ?? null,
  };
}

function summaryJson(summary: DeathSummary | undefined): Json {
  if (summary === undefined) return null;
  return { reason: summary.reason ?? null, queue: summary.queue ?? null, exchange: summary.exchange ?? null };
}

/**
 * The dead-letter history of a message: `x_death` decoded (newest first), its first death
 * (`x-first-death-*`), the `x-last-death-*` headers when a RabbitMQ 3.13+ wrote them, and `latest`:
 * the death the filters and redrive use (message-filter.ts `latestDeath`). All null / empty for a
 * message never dead-lettered.
 */
export function deadLetteringJson(properties: BasicProperties): Json {
  return {
    x_death: readXDeath(tableGet(properties.headers, X_DEATH_HEADER)).map(deathEntryJson),
    first_death: summaryJson(firstDeath(properties)),
    last_death: summaryJson(lastDeathHeaders(properties)),
    latest: summaryJson(latestDeath(properties)),
  };
}

/** One browsed message; `now` (the leader's clock) gives its age. */
export function browsedMessageJson(m: BrowsedMessage, now: number): Json {
  const stored = m.message;
  return {
    id: m.id,
    enqueued_at: m.enqueuedAt,
    age_ms: Math.max(0, now - m.enqueuedAt),
    delivery_count: m.deliveryCount,
    redelivered: m.redelivered,
    expires_at: m.expiresAt ?? null,
    size: m.size,
    // The body (and with it everything it carries) is missing on the leader: being repaired.
    body_available: stored !== undefined,
    exchange: stored?.exchange ?? null,
    routing_key: stored?.routingKey ?? null,
    properties: stored === undefined ? null : propertiesJson(stored.properties),
    headers: stored === undefined ? null : argumentsJson(stored.properties.headers ?? { entries: [] }),
    body:
      stored === undefined
        ? null
        : { size: m.size, ...bodyPreview(stored.body, m.size, stored.properties.contentType) },
    dead_lettering: stored === undefined ? null : deadLetteringJson(stored.properties),
  };
}

/** A page of the inspector. `leaderName` is the node that read it, as operators name it. */
export function browsePageJson(
  record: QueueRecord,
  page: QueueBrowseResult,
  filter: MessageFilter,
  leaderName: string,
): Json {
  return {
    vhost: record.vhost,
    queue: record.name,
    leader: leaderName,
    read_at: page.readAt,
    applied_index: page.appliedIndex,
    ready: page.ready,
    scanned: page.scanned,
    next: page.next ?? null,
    offset_left: page.offsetLeft,
    filter: filterJson(filter) as Json,
    messages: page.messages.map((m) => browsedMessageJson(m, page.readAt)),
  };
}
