/**
 * What the node's metrics read of the broker: its queue replicas and their Raft groups, its
 * connections, the node-wide flow totals and the log store's sync latency. The broker hands one
 * out (`Broker.metricsSource`); this interface keeps the metrics code from depending on the
 * broker's class (and the broker from depending on how figures are written).
 */
import type { LatencyHistogram, RaftGroupLog, RaftHostStats } from '@styx/raft';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { DeadLetterTimings } from '../queue/dead-letter-timings.ts';
import type { QueueActor } from '../queue/queue-actor.ts';
import type { QueueFlowTotals } from '../queue/queue-flow-counters.ts';
import type { QueueApplyResult, QueueCommand } from '../queue/types.ts';
import type { BrokerCounters } from './broker-counters.ts';

/** The Raft facts of a group replica that metrics read (a `RaftGroupLog` has them all). */
export type RaftReplicaView = Pick<
  RaftGroupLog<QueueCommand, QueueApplyResult>,
  | 'term'
  | 'commitIndex'
  | 'appliedIndex'
  | 'lastWrittenIndex'
  | 'snapshotIndex'
  | 'commitLatencyMs'
  | 'elections'
  | 'preVotes'
  | 'electionsWon'
  | 'role'
  | 'membership'
  | 'progress'
>;

/** The Raft host's sending counters (`RaftHostStats`). */
export type RaftTraffic = Pick<
  RaftHostStats,
  'batchesSent' | 'messagesSent' | 'appendsSent' | 'entriesSent' | 'appendRejectsReceived' | 'transportWrites'
>;

export interface NodeMetricsSource {
  readonly nodeName: string;
  /** The metadata store: node ids → names, queue records. */
  readonly metadata: MetadataMachine;
  /** Every queue replica running on this node (leaders and followers). */
  replicas(): Iterable<QueueActor>;
  /** The Raft group under a durable replica; undefined for an in-memory queue. */
  raftGroupOf(groupId: string): RaftReplicaView | undefined;
  /** The metadata store's Raft replica here; undefined on a node without durable storage. */
  metadataRaft(): Pick<RaftReplicaView, 'term' | 'commitIndex' | 'elections' | 'role'> | undefined;
  connectionCount(): number;
  channelCount(): number;
  /** Open channels of this node's clients that have published. */
  publisherCount(): number;
  /** Consumers registered on this node's clients' channels (wherever their queues lead). */
  clientConsumerCount(): number;
  /** What this node's queue leaders applied since it started (queue-flow-counters.ts). */
  readonly nodeFlow: QueueFlowTotals;
  /** How long this node's queue leaders took over each stage of dead-lettering (dead-letter-timings.ts). */
  readonly deadLetterTimings: DeadLetterTimings;
  /** What this node's Raft host sent its peers; undefined without durable storage. */
  raftTraffic(): RaftTraffic | undefined;
  /** The log store's batch sync latency; undefined without durable storage. */
  readonly logSync: LatencyHistogram | undefined;
  /** What this node's clients published, were delivered and acked; connection churn. */
  readonly counters: BrokerCounters;
  /** Styx's version (`rabbitmq_build_info`). */
  readonly version: string;
  /** The cluster's name (`rabbitmq_cluster`), the same on every member. */
  readonly clusterName: string;
  /** The data directory (its filesystem's free space); undefined without durable storage. */
  readonly dataDir: string | undefined;
  /** The node's memory budget: publishers are blocked above it; 0 when unlimited. */
  readonly memoryLimitBytes: number;
  /** Whether the node is over its memory budget now (its memory alarm). */
  memoryAlarm(): boolean;
  /** Free disk space below which the disk alarm is raised, bytes; undefined when no disk is watched. */
  readonly diskFreeLimitBytes: number | undefined;
  /** Whether free disk space is below the limit now (the node's disk alarm). */
  diskAlarm(): boolean;
}
