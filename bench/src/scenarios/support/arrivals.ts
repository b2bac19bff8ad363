/**
 * Counts the messages that arrive at a consumer, once each, and how late they are. Arrival time is
 * the bench clock when the delivery callback runs.
 */
import { HdrHistogram } from '../../histogram/hdr-histogram.ts';
import { readStamp } from './body.ts';
import { nowMs } from './clock.ts';

export class ArrivalRecorder {
  /** Arrival of message seq - firstSeq, or 0 while it has not arrived. */
  readonly #arrivedAt: Float64Array;
  readonly #firstSeq: number;
  #unique = 0;
  #duplicates = 0;
  #unexpected = 0;
  #firstMs = Number.POSITIVE_INFINITY;
  #lastMs = 0;

  /** Expects sequence numbers firstSeq .. firstSeq + count - 1. */
  constructor(count: number, firstSeq = 0) {
    this.#arrivedAt = new Float64Array(count);
    this.#firstSeq = firstSeq;
  }

  /**
   * Records one delivery; returns its stamp's publish time (ms) and sequence number, or undefined for a
   * duplicate or a message outside the expected range.
   */
  record(content: Buffer): { seq: number; publishedAtMs: number; arrivedAtMs: number } | undefined {
    const t = nowMs();
    const stamp = readStamp(content);
    const i = stamp.seq - this.#firstSeq;
    if (i < 0 || i >= this.#arrivedAt.length) {
      this.#unexpected++;
      return undefined;
    }
    if (this.#arrivedAt[i] !== 0) {
      this.#duplicates++;
      return undefined;
    }
    this.#arrivedAt[i] = t;
    this.#unique++;
    if (t < this.#firstMs) this.#firstMs = t;
    this.#lastMs = t;
    return { seq: stamp.seq, publishedAtMs: stamp.publishedAtMs, arrivedAtMs: t };
  }

  get unique(): number {
    return this.#unique;
  }
  get duplicates(): number {
    return this.#duplicates;
  }
  get unexpected(): number {
    return this.#unexpected;
  }
  get firstMs(): number {
    return this.#firstMs;
  }
  get lastMs(): number {
    return this.#lastMs;
  }
  get complete(): boolean {
    return this.#unique === this.#arrivedAt.length;
  }

  /** Notes for the report about anything but one clean arrival per message. */
  notes(): string[] {
    const notes: string[] = [];
    if (this.#duplicates > 0) notes.push(`${this.#duplicates} duplicate deliveries (ignored)`);
    if (this.#unexpected > 0) notes.push(`${this.#unexpected} deliveries of unexpected messages`);
    return notes;
  }
}

/** A histogram for latencies in microseconds, with an upper bound of one hour. */
export function latencyHistogram(): HdrHistogram {
  return new HdrHistogram();
}

/** Records a latency given in ms into a microsecond histogram. */
export function recordMs(h: HdrHistogram, ms: number): void {
  h.record(ms * 1000);
}
