/**
 * `GET /metrics` on the management listener: the node's figures for Prometheus
 * (metrics/node-metrics.ts), in the text format 0.0.4. As RabbitMQ's plugin: `/metrics` is
 * aggregated, `/metrics/per-object` per queue, `/metrics/detailed?family=…&vhost=…` the families
 * asked for (metrics/detailed-families.ts).
 *
 * Unauthenticated by default, as RabbitMQ's Prometheus endpoint is: scrapers rarely carry
 * credentials, and the figures hold no message data — but they do name queues and vhosts, so the
 * listener's reach is the access control. The management listener binds to 127.0.0.1 unless the
 * operator passes `--management-host` (README: "Metrics"); exposed wider, `--metrics-auth` makes
 * the server ask for basic auth of a `monitoring` or `administrator` user (management-server.ts).
 *
 * A render walks every queue (80-135 ms of CPU at 10,000 queues), so it is cached for `cacheMs`
 * (5 s by default, `--metrics-cache-seconds`) and concurrent scrapes share the one render in
 * flight: a scrape storm costs one render per period, however many scrapers. A failed render is
 * not cached.
 *
 * GET and HEAD only (405 with `Allow` otherwise). A render that throws is a logged 500 with the
 * API's JSON error shape; it cannot take the node down.
 */
import type { ServerResponse } from 'node:http';
import type { Broker } from '../broker/broker.ts';
import type { ClusterView } from '../cluster/cluster-view.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetricsView } from '../metrics/node-metrics.ts';
import { AGGREGATED, EXPOSITION_CONTENT_TYPE, renderNodeMetrics } from '../metrics/node-metrics.ts';
import { nodeNames } from './queue-replicas-api.ts';

/** Where Prometheus scrapes (its default `metrics_path`). */
export const METRICS_PATH = '/metrics';
export const PER_OBJECT_METRICS_PATH = '/metrics/per-object';
export const DETAILED_METRICS_PATH = '/metrics/detailed';

/** Whether `path` is one of the metrics endpoints. */
export function isMetricsPath(path: string): boolean {
  return path === METRICS_PATH || path === PER_OBJECT_METRICS_PATH || path === DETAILED_METRICS_PATH;
}

/** The view a metrics path and its query ask for. */
export function metricsView(path: string, query: URLSearchParams): MetricsView {
  if (path === PER_OBJECT_METRICS_PATH) return { kind: 'per-object' };
  if (path !== DETAILED_METRICS_PATH) return AGGREGATED;
  const vhosts = query.getAll('vhost');
  return {
    kind: 'detailed',
    families: new Set(query.getAll('family')),
    vhosts: vhosts.length === 0 ? undefined : new Set(vhosts),
  };
}

/** How long a render is served again, ms, unless the operator says otherwise. */
export const DEFAULT_METRICS_CACHE_MS = 5_000;

export interface MetricsEndpointOptions {
  readonly broker: Broker;
  readonly cluster: ClusterView;
  readonly logger: Logger;
  /** How long a render is served again, ms; 0 renders per scrape (concurrent ones still share). */
  readonly cacheMs?: number | undefined;
  /** Milliseconds since the epoch; Date.now unless a test substitutes one. */
  readonly now?: (() => number) | undefined;
  /** The render; renderNodeMetrics over the broker unless a test counts its calls. */
  readonly render?: ((view: MetricsView) => Promise<Buffer[]>) | undefined;
}

interface Rendered {
  readonly chunks: Buffer[];
  readonly at: number;
}

export class MetricsEndpoint {
  private readonly logger: Logger;
  private readonly cacheMs: number;
  private readonly now: () => number;
  private readonly render: (view: MetricsView) => Promise<Buffer[]>;
  private readonly views = new Map<string, ViewEntry>();

  constructor(options: MetricsEndpointOptions) {
    const { broker, cluster } = options;
    this.logger = options.logger;
    this.cacheMs = options.cacheMs ?? DEFAULT_METRICS_CACHE_MS;
    this.now = options.now ?? Date.now;
    this.render =
      options.render ??
      ((view) => renderNodeMetrics(broker.metricsSource(), cluster, nodeNames(broker.metadataView), view));
  }

  /** Answer a request for a metrics path (`isMetricsPath`); resolves with the status sent. */
  async serve(
    method: string,
    response: ServerResponse,
    path: string = METRICS_PATH,
    query: URLSearchParams = new URLSearchParams(),
  ): Promise<number> {
    if (method !== 'GET' && method !== 'HEAD') {
      return sendJson(response, 405, 'method_not_allowed', `method ${method} is not allowed here`, {
        Allow: 'GET, HEAD',
      });
    }
    let chunks: Buffer[];
    try {
      chunks = await this.figures(path, query);
    } catch (err) {
      this.logger.error({ err, path }, 'rendering metrics failed');
      return sendJson(response, 500, 'internal_error', 'internal error');
    }
    let length = 0;
    for (const chunk of chunks) length += chunk.byteLength;
    response.writeHead(200, {
      'Content-Type': EXPOSITION_CONTENT_TYPE,
      'Content-Length': length,
      'Cache-Control': 'no-cache',
    });
    if (method !== 'HEAD') for (const chunk of chunks) response.write(chunk);
    response.end();
    return 200;
  }

  /**
   * The cached render of this view if fresh, else the one in flight, else a new one. Each view
   * (path and its family/vhost parameters) has its own entry; at most MAX_CACHED_VIEWS are kept,
   * the oldest dropped first, so odd query strings cannot grow the cache without bound.
   */
  private figures(path: string, query: URLSearchParams): Promise<Buffer[]> {
    const view = metricsView(path, query);
    const key = viewKey(path, view);
    const entry = this.views.get(key);
    if (entry?.cached !== undefined && this.now() - entry.cached.at < this.cacheMs) {
      return Promise.resolve(entry.cached.chunks);
    }
    if (entry?.inflight !== undefined) return entry.inflight;
    const started = this.now();
    const slot: ViewEntry = entry ?? {};
    slot.inflight = this.render(view)
      .then((chunks) => {
        slot.cached = { chunks, at: started };
        return chunks;
      })
      .finally(() => {
        slot.inflight = undefined;
      });
    if (entry === undefined) {
      this.views.set(key, slot);
      if (this.views.size > MAX_CACHED_VIEWS) {
        const oldest = this.views.keys().next().value as string;
        this.views.delete(oldest);
      }
    }
    return slot.inflight;
  }
}

/** Views (path + parameters) whose render is kept at once. */
const MAX_CACHED_VIEWS = 32;

interface ViewEntry {
  cached?: Rendered | undefined;
  inflight?: Promise<Buffer[]> | undefined;
}

/** A view's cache key: the path and, for the detailed one, its sorted families and vhosts. */
function viewKey(path: string, view: MetricsView): string {
  if (view.kind !== 'detailed') return path;
  const families = [...view.families].sort().join(',');
  const vhosts = view.vhosts === undefined ? '*' : [...view.vhosts].sort().join(',');
  return `${path}?${families}|${vhosts}`;
}

function sendJson(
  response: ServerResponse,
  status: number,
  error: string,
  reason: string,
  headers: Record<string, string> = {},
): number {
  const text = JSON.stringify({ error, reason });
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  });
  response.end(text);
  return status;
}
