/**
 * `GET /metrics` on the management listener: the node's figures for Prometheus
 * (metrics/node-metrics.ts), in the text format 0.0.4. As RabbitMQ's plugin: `/metrics` is
 * aggregated, `/metrics/per-object` per queue, `/metrics/detailed?family=…&vhost=…` the families
 * asked for (metrics/detailed-families.ts).
 *
 * Unauthenticated, as RabbitMQ's Prometheus endpoint is by default: scrapers rarely carry
 * credentials, and the figures hold no message data — but they do name queues and vhosts, so the
 * listener's reach is the access control. The management listener binds to 127.0.0.1 unless the
 * operator passes `--management-host` (README: "Metrics"); expose it wider only on a network
 * that may see queue names.
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

export class MetricsEndpoint {
  private readonly broker: Broker;
  private readonly cluster: ClusterView;
  private readonly logger: Logger;

  constructor(broker: Broker, cluster: ClusterView, logger: Logger) {
    this.broker = broker;
    this.cluster = cluster;
    this.logger = logger;
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
      chunks = await renderNodeMetrics(
        this.broker.metricsSource(),
        this.cluster,
        nodeNames(this.broker.metadataView),
        metricsView(path, query),
      );
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
