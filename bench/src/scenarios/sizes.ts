/**
 * How big each case is. Full mode follows the issue (100k messages, 1M for memory, 60 s for the long
 * TTL); quick mode shrinks every case so `pnpm bench --target both` takes about three minutes on
 * the 2-core reference machine, and the report says so.
 */

export type Mode = 'quick' | 'full';

export interface Sizes {
  readonly mode: Mode;
  /** a: messages published with confirms. */
  readonly publish: number;
  /** b: messages consumed and acked. */
  readonly consume: number;
  /** c burst: messages held, then expired at once. */
  readonly burst: number;
  /** c stream at full speed: messages published. */
  readonly stream: number;
  /** c stream paced: how long each paced run publishes at most, s (messages = min(stream, pace × this)). */
  readonly pacedSeconds: number;
  /** d: messages rejected into the dead-letter exchange. */
  readonly reject: number;
  /** e: the long message's TTL, ms (the 60 s). */
  readonly longTtlMs: number;
  /** f: messages queued for the memory reading. */
  readonly memory: number;
  /** h–k: how long each point of a scaling sweep publishes, s. */
  readonly sweepSeconds: number;
  /** h: queue counts; i: connection counts (the sweeps' x values). */
  readonly sweepQueues: readonly number[];
  readonly sweepConnections: readonly number[];
  /** j: message sizes, bytes. */
  readonly sweepBodyBytes: readonly number[];
  /** k: cluster sizes. */
  readonly sweepNodes: readonly number[];
  /** l: messages queued before the restart. */
  readonly restart: number;
  /** m: publish/drain cycles, and messages per cycle. */
  readonly soakCycles: number;
  readonly soakMessages: number;
  /** n: idle queues declared. */
  readonly idleQueues: number;
  /** o: queues whose leader node is killed. */
  readonly failoverQueues: number;
}

/** j's sizes: 64 B, 1 KiB, 64 KiB, 1 MiB (the issue's). */
const BODY_SIZES = [64, 1024, 64 * 1024, 1024 * 1024] as const;

export const FULL_SIZES: Sizes = {
  mode: 'full',
  publish: 100_000,
  consume: 100_000,
  burst: 100_000,
  stream: 100_000,
  pacedSeconds: 50,
  reject: 100_000,
  longTtlMs: 60_000,
  memory: 1_000_000,
  sweepSeconds: 8,
  sweepQueues: [1, 10, 100, 1000],
  sweepConnections: [1, 10, 100, 1000],
  sweepBodyBytes: BODY_SIZES,
  sweepNodes: [1, 3, 5],
  restart: 1_000_000,
  soakCycles: 20,
  soakMessages: 100_000,
  idleQueues: 10_000,
  failoverQueues: 2_000,
};

export const QUICK_SIZES: Sizes = {
  mode: 'quick',
  publish: 30_000,
  consume: 30_000,
  burst: 10_000,
  stream: 20_000,
  pacedSeconds: 4,
  reject: 10_000,
  longTtlMs: 5_000,
  memory: 100_000,
  sweepSeconds: 3,
  sweepQueues: [1, 10, 100],
  sweepConnections: [1, 10, 100],
  sweepBodyBytes: BODY_SIZES,
  sweepNodes: [1, 3],
  restart: 100_000,
  soakCycles: 5,
  soakMessages: 20_000,
  idleQueues: 1_000,
  failoverQueues: 500,
};

/** `sizes` with every message count set to `messages` (a developer's override). */
export function withMessageCount(sizes: Sizes, messages: number): Sizes {
  return {
    ...sizes,
    publish: messages,
    consume: messages,
    burst: messages,
    stream: messages,
    reject: messages,
    restart: messages,
    soakMessages: messages,
  };
}

/** `sizes` with the queue counts of n (idle queues) and o (failover) replaced by `queues` (`--queues`). */
export function withQueueCount(sizes: Sizes, queues: number): Sizes {
  return { ...sizes, idleQueues: queues, failoverQueues: queues };
}
