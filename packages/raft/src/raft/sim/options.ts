import type { RaftConfig } from '../types.ts';
import type { NetworkFaults } from './network.ts';
import type { Prng } from './prng.ts';

/** Relative weights of the fault and operator actions the nemesis picks from. */
export interface NemesisWeights {
  readonly crash: number;
  readonly partition: number;
  readonly clog: number;
  readonly pause: number;
  readonly membership: number;
  readonly transfer: number;
  readonly snapshot: number;
  readonly skew: number;
  readonly network: number;
}

/**
 * Everything a run's behaviour depends on besides the seed's event order. Drawn from the seed
 * (swarm testing: every seed explores a different corner — tiny windows, lossy links, frequent
 * compaction), and overridable by tests and scenarios.
 */
export interface SwarmParams {
  /** Initial voters (3 or 5). */
  readonly voters: number;
  /** Bound on replicas alive at once, counting learners being added (replicas). */
  readonly maxNodes: number;
  /** Nominal tick interval (ms of simulated time). */
  readonly tickMs: number;
  /** Clock skew bound: each replica ticks at a rate in [1 - skew, 1 + skew] of nominal. */
  readonly skew: number;
  readonly raft: Omit<RaftConfig, 'id' | 'applied'>;
  readonly network: NetworkFaults;
  readonly fsyncMinMs: number;
  readonly fsyncMaxMs: number;
  /**
   * Readys in flight to a replica's disk at once (1 = the next Ready waits for the previous sync;
   * above 1 = pipelined storage writes, see SimNodeOptions.storageDepth).
   */
  readonly storageDepth: number;
  /** With pipelined storage: each sync takes up to this much longer (ms), drawn per write. */
  readonly fsyncLateMs: number;
  /** Mean interval between nemesis actions (ms). */
  readonly nemesisMeanMs: number;
  readonly weights: NemesisWeights;
  /** Upper bounds on fault durations (ms). */
  readonly crashMaxMs: number;
  readonly partitionMaxMs: number;
  readonly pauseMaxMs: number;
  readonly clogMaxMs: number;
  /** Concurrent clients (each with at most one operation outstanding). */
  readonly clients: number;
  readonly keys: number;
  /** Mean think time between a client's operations (ms). */
  readonly thinkMeanMs: number;
  /** A client gives up on an operation after this long (ms); a write then has an unknown outcome. */
  readonly clientTimeoutMs: number;
  /** Fraction of operations that are reads. */
  readonly readRatio: number;
  /** Bound on the body carried by one write (bytes). */
  readonly maxBodyBytes: number;
  /** A replica cuts a snapshot once this many entries were applied since its last one. */
  readonly compactEvery: number;
  /** Replicas fold each pump's appends per follower as the host does (SimNodeOptions.foldAppends). */
  readonly foldAppends: boolean;
}

/** Draw a run's parameters from its PRNG. */
export function drawSwarm(prng: Prng): SwarmParams {
  const electionTicks = prng.between(6, 14);
  return {
    voters: prng.chance(0.5) ? 3 : 5,
    maxNodes: 7,
    tickMs: 10,
    skew: prng.pick([0, 0.05, 0.2, 0.4]),
    raft: {
      electionTicks,
      heartbeatTicks: prng.between(1, 3),
      preVote: prng.chance(0.85),
      checkQuorum: prng.chance(0.85),
      maxSizePerMsg: prng.pick([32, 256, 4096, 1 << 20]),
      maxInflightMsgs: prng.pick([1, 2, 8, 64]),
      maxInflightBytes: prng.pick([64, 1024, 1 << 20]),
      maxUncommittedEntriesBytes: prng.pick([512, 8192, 1 << 20]),
      maxCommittedBytesPerReady: prng.pick([64, 4096, 1 << 20]),
      snapshotChunkBytes: prng.pick([16, 64, 512, 1 << 20]),
      maxSnapshotChunksInflight: prng.between(1, 4),
      maxPendingReadIndex: prng.pick([4, 64, 4096]),
    },
    network: {
      dropRate: prng.pick([0, 0.01, 0.05, 0.15]),
      duplicateRate: prng.pick([0, 0.01, 0.05]),
      delayMinMs: prng.pick([0.1, 0.5, 1]),
      delayMeanMs: prng.pick([0.5, 2, 5, 12]),
    },
    fsyncMinMs: 0.05,
    fsyncMaxMs: prng.pick([0.5, 2, 6]),
    nemesisMeanMs: prng.pick([40, 80, 160]),
    weights: {
      crash: 3,
      partition: 3,
      clog: 1,
      pause: 1,
      membership: 2,
      transfer: 1,
      snapshot: 1,
      skew: 0.5,
      network: 0.5,
    },
    crashMaxMs: prng.pick([100, 400, 1200]),
    partitionMaxMs: prng.pick([150, 500, 1500]),
    pauseMaxMs: prng.pick([100, 400]),
    clogMaxMs: prng.pick([50, 300]),
    clients: prng.between(2, 5),
    keys: prng.between(1, 6),
    thinkMeanMs: prng.pick([2, 8, 25]),
    clientTimeoutMs: prng.pick([100, 300, 800]),
    readRatio: prng.pick([0.3, 0.5, 0.7]),
    maxBodyBytes: prng.pick([0, 8, 64]),
    compactEvery: prng.pick([8, 30, 100, 400]),
    // Drawn last, so every earlier parameter of a seed is what it was before pipelining existed.
    storageDepth: prng.pick([1, 2, 3, 4]),
    fsyncLateMs: prng.pick([0, 3, 15]),
    foldAppends: prng.chance(0.5),
  };
}
