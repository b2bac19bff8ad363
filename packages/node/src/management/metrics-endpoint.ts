/**
 * `GET /metrics` on the management listener: the node's figures for Prometheus
 * (metrics/node-metrics.ts), in the text format 0.0.4.
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
import { EXPOSITION_CONTENT_TYPE, renderNodeMetrics } from '../metrics/node-metrics.ts';
import { nodeNames } from './queue-replicas-api.ts';

/** Where Prometheus scrapes (its default `metrics_path`). */
export const METRICS_PATH = '/metrics';

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
  readonly render?: (() => Promise<Buffer[]>) | undefined;
}

interface Rendered {
  readonly chunks: Buffer[];
  readonly at: number;
}

export class MetricsEndpoint {
  private readonly logger: Logger;
  private readonly cacheMs: number;
  private readonly now: () => number;
  private readonly render: () => Promise<Buffer[]>;
  private cached: Rendered | undefined;
  private inflight: Promise<Buffer[]> | undefined;

  constructor(options: MetricsEndpointOptions) {
    const { broker, cluster } = options;
    this.logger = options.logger;
    this.cacheMs = options.cacheMs ?? DEFAULT_METRICS_CACHE_MS;
    this.now = options.now ?? Date.now;
    this.render =
      options.render ??
      (() => renderNodeMetrics(broker.metricsSource(), cluster, nodeNames(broker.metadataView)));
  }

  /** Answer a request for `METRICS_PATH`; resolves with the status sent. */
  async serve(method: string, response: ServerResponse): Promise<number> {
    if (method !== 'GET' && method !== 'HEAD') {
      return sendJson(response, 405, 'method_not_allowed', `method ${method} is not allowed here`, {
        Allow: 'GET, HEAD',
      });
    }
    let chunks: Buffer[];
    try {
      chunks = await this.figures();
    } catch (err) {
      this.logger.error({ err }, 'rendering /metrics failed');
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

  /** The cached render if fresh, else the one in flight, else a new one. */
  private figures(): Promise<Buffer[]> {
    const cached = this.cached;
    if (cached !== undefined && this.now() - cached.at < this.cacheMs) return Promise.resolve(cached.chunks);
    if (this.inflight === undefined) {
      const started = this.now();
      this.inflight = this.render()
        .then((chunks) => {
          this.cached = { chunks, at: started };
          return chunks;
        })
        .finally(() => {
          this.inflight = undefined;
        });
    }
    return this.inflight;
  }
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
