/**
 * How late the node's event loop runs its timers: `nodejs_eventloop_lag_{max,p99,mean}_seconds`
 * (prom-client's names), from `perf_hooks.monitorEventLoopDelay`. A loop held by one long task (a
 * storm of elections, a big batch) delays every heartbeat and client on the node; this is where
 * it shows.
 *
 * The monitor starts at the first scrape (a node nobody scrapes keeps no extra timer: 10,000 idle
 * queues stay at ~0 % CPU), so the first scrape writes nothing; each later scrape writes the delays
 * seen since the one before it and starts a new window (as prom-client does), so the max is the
 * worst stall between two scrapes.
 */
import type { ELDHistogram } from 'node:perf_hooks';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { ExpositionWriter } from './exposition-writer.ts';

/** The monitor's sampling period, ms: a stall shorter than this can go unseen. */
const RESOLUTION_MS = 20;
const NS_PER_S = 1e9;

let monitor: ELDHistogram | undefined;

/** Writes the delays seen since the previous call, then starts a new window. */
export function writeEventLoopLag(w: ExpositionWriter): void {
  if (monitor === undefined) {
    monitor = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    monitor.enable();
    return;
  }
  // No sample yet (scraped twice within the resolution): the histogram's fields are placeholders.
  if (monitor.count > 0) {
    w.single(
      'nodejs_eventloop_lag_max_seconds',
      'gauge',
      'Longest event loop delay since the previous scrape, s',
      monitor.max / NS_PER_S,
    );
    w.single(
      'nodejs_eventloop_lag_p99_seconds',
      'gauge',
      '99th percentile of the event loop delay since the previous scrape, s',
      monitor.percentile(99) / NS_PER_S,
    );
    w.single(
      'nodejs_eventloop_lag_mean_seconds',
      'gauge',
      'Mean event loop delay since the previous scrape, s',
      monitor.mean / NS_PER_S,
    );
  }
  monitor.reset();
}
