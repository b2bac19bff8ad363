/**
 * The bench's clock: milliseconds since the process started, monotonic and sub-millisecond. Every
 * time the scenarios compare (publish, reject, arrival) is read in this one process, so no clock
 * synchronisation with the broker is needed.
 */
import { performance } from 'node:perf_hooks';

export function nowMs(): number {
  return performance.now();
}

export function sleep(ms: number): Promise<void> {
  return new Promise((done) => setTimeout(done, ms));
}
