/**
 * h–k. Scaling sweeps: publish with confirms for a few seconds per point while one dimension grows,
 * for throughput and broker CPU per message at each point (charted in scaling.svg, x on a log scale):
 *
 * - h. queues 1 → 10 → 100 → 1,000, publishers (one per queue, at most 10) spread over them;
 * - i. connections 1 → 10 → 100 → 1,000, each one confirm channel, into one queue;
 * - j. message size 64 B → 1 KiB → 64 KiB → 1 MiB, one publisher, one queue;
 * - k. cluster size 1 → 3 → 5 nodes, one publisher on node 1, one queue.
 *
 * 1,000 messages in flight in all, shared by the publishers (at least one each), and at most 64 MiB
 * in flight for big bodies. Quick mode shortens the points and drops the largest counts.
 */
import type { BenchConfirmChannel } from '../adapters/client-api.ts';
import type { BenchCase, CaseContext, Metric, Scenario, ScenarioId } from './scenario.ts';
import { perSecond } from './scenario.ts';
import { BODY_BYTES } from './support/body.ts';
import { openCpuWindow, withCpuFirst } from './support/cpu-window.ts';
import { declareQueues } from './support/declare-many.ts';
import type { TimedLane } from './support/timed-publisher.ts';
import { publishFor } from './support/timed-publisher.ts';

/** Messages in flight across all publishers of a point. */
export const SWEEP_IN_FLIGHT = 1000;
/** Bytes in flight at most (1 MiB bodies get 64 in flight, not 1,000). */
export const SWEEP_IN_FLIGHT_BYTES = 64 * 2 ** 20;
/** Most publishers of the queue sweep (one per queue up to this). */
export const QUEUE_SWEEP_PUBLISHERS = 10;

/** What the sweeps vary; the x axis of their charts. */
export type SweepDimension = 'queues' | 'connections' | 'size' | 'nodes';

/** One point of a sweep. */
export interface SweepPoint {
  readonly queues: number;
  readonly publishers: number;
  readonly bodyBytes: number;
  readonly nodes: number;
}

/** Unconfirmed messages each publisher may have: the total shared out, capped by bytes. */
export function windowPerPublisher(p: SweepPoint): number {
  const total = Math.min(SWEEP_IN_FLIGHT, Math.max(1, Math.floor(SWEEP_IN_FLIGHT_BYTES / p.bodyBytes)));
  return Math.max(1, Math.floor(total / p.publishers));
}

/** Queue j goes to publisher j mod P: each publisher's share, round-robin. */
export function spreadQueues(queues: readonly string[], publishers: number): string[][] {
  const lanes: string[][] = Array.from({ length: publishers }, () => []);
  for (const [j, q] of queues.entries()) lanes[j % publishers]?.push(q);
  return lanes.map((l, i) => (l.length > 0 ? l : [queues[i % queues.length] ?? '']));
}

async function runPoint(ctx: CaseContext, p: SweepPoint, seconds: number): Promise<Metric[]> {
  const queues = await declareQueues(ctx, p.queues);
  ctx.status(`opening ${p.publishers} connections`);
  const spread = spreadQueues(queues, p.publishers);
  const lanes: TimedLane[] = [];
  for (const share of spread) {
    const channel: BenchConfirmChannel = await (await ctx.connect()).createConfirmChannel();
    lanes.push({ channel, queues: share });
  }
  const window = openCpuWindow(ctx);
  const r = await publishFor({
    lanes,
    durationMs: seconds * 1000,
    windowPerLane: windowPerPublisher(p),
    bodyBytes: p.bodyBytes,
    stallMs: ctx.stallTimeoutMs,
    onProgress: (n) => ctx.status(`${n} confirmed`),
  });
  const rate = perSecond(r.confirmed, r.endMs - r.startMs);
  return withCpuFirst(window.close(r.confirmed), [
    { key: 'throughput', label: 'published', unit: 'msg/s', value: rate, better: 'higher' },
    {
      key: 'bandwidth',
      label: 'payload published',
      unit: 'MiB/s',
      value: (rate * p.bodyBytes) / 2 ** 20,
      better: 'higher',
    },
  ]);
}

interface SweepDefinition {
  readonly id: ScenarioId;
  readonly dimension: SweepDimension;
  readonly title: string;
  /** The x values of the sweep in `sizes`. */
  readonly xs: (sizes: Parameters<Scenario['cases']>[0]) => readonly number[];
  readonly point: (x: number) => SweepPoint;
}

const ONE: SweepPoint = { queues: 1, publishers: 1, bodyBytes: BODY_BYTES, nodes: 1 };

const SWEEPS: readonly SweepDefinition[] = [
  {
    id: 'h',
    dimension: 'queues',
    title: 'Scaling: queues 1 → 1,000, publishers spread over them',
    xs: (s) => s.sweepQueues,
    point: (x) => ({ ...ONE, queues: x, publishers: Math.min(x, QUEUE_SWEEP_PUBLISHERS) }),
  },
  {
    id: 'i',
    dimension: 'connections',
    title: 'Scaling: publishing connections 1 → 1,000, one queue',
    xs: (s) => s.sweepConnections,
    point: (x) => ({ ...ONE, publishers: x }),
  },
  {
    id: 'j',
    dimension: 'size',
    title: 'Scaling: message size 64 B → 1 MiB',
    xs: (s) => s.sweepBodyBytes,
    point: (x) => ({ ...ONE, bodyBytes: x }),
  },
  {
    id: 'k',
    dimension: 'nodes',
    title: 'Scaling: cluster size 1 → 5 nodes (clients on node 1)',
    xs: (s) => s.sweepNodes,
    point: (x) => ({ ...ONE, nodes: x }),
  },
];

function sweepScenario(d: SweepDefinition): Scenario {
  return {
    id: d.id,
    name: `scale-${d.dimension}`,
    title: d.title,
    cases: (sizes) =>
      d.xs(sizes).map((x): BenchCase => {
        const p = d.point(x);
        return {
          id: `${d.id}.${d.dimension}.${x}`,
          scenario: d.id,
          title: `${d.dimension} ${x}`,
          params: {
            sweep: d.dimension,
            x,
            seconds: sizes.sweepSeconds,
            queues: p.queues,
            publishers: p.publishers,
            bodyBytes: p.bodyBytes,
            inFlightPerPublisher: windowPerPublisher(p),
            nodes: p.nodes,
          },
          requires: [],
          ...(p.nodes > 1 ? { nodes: p.nodes } : {}),
          run: async (ctx) => ({
            metrics: await runPoint(ctx, p, sizes.sweepSeconds),
            histograms: [],
            notes: [],
          }),
        };
      }),
  };
}

export const SCALING_SCENARIOS: readonly Scenario[] = SWEEPS.map(sweepScenario);
