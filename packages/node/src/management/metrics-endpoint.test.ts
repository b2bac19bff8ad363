import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Broker } from '../broker/broker.ts';
import { singleNodeClusterView } from '../cluster/cluster-view.ts';
import { silentLogger } from '../logging/logger.ts';
import { renderNodeMetrics } from '../metrics/node-metrics.ts';
import { MetricsEndpoint } from './metrics-endpoint.ts';
import { nodeNames } from './queue-replicas-api.ts';

// The /metrics render cache: the real render over a real broker, counted; never timed.

let broker: Broker;
let http: Server | undefined;

beforeEach(async () => {
  broker = await Broker.start({ nodeName: 'metrics-test', logger: silentLogger(), memoryBudgetBytes: 0 });
});

afterEach(async () => {
  const server = http;
  http = undefined;
  if (server !== undefined) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await broker.shutdown();
});

/**
 * An endpoint over the real render, counting renders, each held until `release` when `gated`; and
 * an HTTP server in front of it counting the scrapes that have reached it.
 */
async function setup(cacheMs: number, gated: boolean) {
  let now = 1_000_000;
  let renders = 0;
  let arrived = 0;
  let release: () => void = () => undefined;
  let gate = Promise.resolve();
  if (gated) {
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
  }
  const cluster = singleNodeClusterView({ nodeName: broker.nodeName });
  const endpoint = new MetricsEndpoint({
    broker,
    cluster,
    logger: silentLogger(),
    cacheMs,
    now: () => now,
    render: async () => {
      renders++;
      await gate;
      // Per object, so a new queue shows by name (the aggregated view sums queues away).
      return renderNodeMetrics(broker.metricsSource(), cluster, nodeNames(broker.metadataView), {
        kind: 'per-object',
      });
    },
  });
  const server = createServer((request, response) => {
    arrived++;
    void endpoint.serve(request.method ?? 'GET', response);
  });
  http = server;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  return {
    scrape: async () => {
      const reply = await fetch(url);
      return { status: reply.status, text: await reply.text() };
    },
    renders: () => renders,
    arrived: () => arrived,
    release: () => release(),
    advance: (ms: number) => {
      now += ms;
    },
  };
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

describe('the /metrics render', () => {
  it('is shared by concurrent scrapes: one render in flight serves them all, even with no cache', async () => {
    const m = await setup(0, true);
    const scrapes = Array.from({ length: 8 }, () => m.scrape());
    await until(() => m.arrived() === 8);
    m.release();
    const replies = await Promise.all(scrapes);
    expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(replies.map((r) => r.text)).size).toBe(1);
    expect(m.renders()).toBe(1);
    // Without a cache, the next scrape renders again.
    await m.scrape();
    expect(m.renders()).toBe(2);
  });

  it('is served again for cacheMs, then rendered afresh with the new figures', async () => {
    const m = await setup(5_000, false);
    await m.scrape();
    await broker.declareQueue(
      { user: 'guest', vhost: '/', connectionId: 'c1' },
      {
        queue: 'fresh',
        passive: false,
        durable: true,
        exclusive: false,
        autoDelete: false,
        arguments: { entries: [] },
      },
    );
    m.advance(4_999);
    expect((await m.scrape()).text).not.toContain('queue="fresh"');
    expect(m.renders()).toBe(1);
    m.advance(1);
    expect((await m.scrape()).text).toContain('queue="fresh"');
    expect(m.renders()).toBe(2);
  });
});
