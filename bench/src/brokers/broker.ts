/** A broker process under test, started by the bench and stopped by it. */

/**
 * The columns the bench compares: Styx through its SDK (WebSocket), Styx through amqplib over
 * AMQP 0-9-1 (the same broker, the same client code as RabbitMQ's column: the protocol cost apart),
 * and RabbitMQ through amqplib.
 */
export const TARGETS = ['styx', 'styx-amqp', 'rabbitmq'] as const;
export type Target = (typeof TARGETS)[number];

/** The reference every ratio divides by. */
export const REFERENCE_TARGET = 'rabbitmq' satisfies Target;
/** The Styx columns, each compared with RabbitMQ. */
export const STYX_TARGETS = ['styx', 'styx-amqp'] as const satisfies readonly Target[];
export type StyxTarget = (typeof STYX_TARGETS)[number];

/** Display names, for tables and charts. */
export const TARGET_LABELS: Readonly<Record<Target, string>> = {
  styx: 'Styx',
  'styx-amqp': 'Styx AMQP',
  rabbitmq: 'RabbitMQ',
};

export interface BrokerUnderTest {
  readonly target: Target;
  /** Where clients connect (ws:// for Styx's SDK, amqp:// for Styx AMQP and RabbitMQ). */
  readonly url: string;
  /** The OS process of the node clients connect to (beam.smp for RabbitMQ), for memory readings. */
  readonly pid: number;
  /** Every node's OS process (one per cluster node), whose CPU times add up to the broker's. */
  readonly pids: readonly number[];
  /** Where clients connect to each node, node 1 first. */
  readonly urls: readonly string[];
  /**
   * The index (0 = node 1) of the node that leads `queue` (vhost '/'), for cases that need a client
   * on a node that does not; undefined when the broker cannot tell.
   */
  queueLeader(queue: string): Promise<number | undefined>;
  /** SIGKILLs node `index` (0 = node 1): a crash, for the failover scenario (o). */
  killNode(index: number): void;
  readonly version: string;
  /** False once the process has exited. */
  alive(): boolean;
  /** The last lines the broker logged, to explain a failure. */
  recentLogs(): string[];
  /** Stop the broker and remove its data; idempotent. */
  stop(): Promise<void>;
  /**
   * Stops the broker cleanly, keeping its data, and starts it again on the same data (scenario l).
   * `url`, `pid` and `pids` change. Resolves with how long the clean stop took, ms, once the new
   * process accepts connections. Single node only: a cluster throws ClusterUnsupportedError.
   */
  restart(): Promise<{ readonly stopMs: number }>;
}

/** The bench cannot launch a cluster of this broker (yet): its cluster cases are skipped. */
export class ClusterUnsupportedError extends Error {
  readonly code = 'BENCH_CLUSTER_UNSUPPORTED';
  constructor(message: string) {
    super(message);
    this.name = 'ClusterUnsupportedError';
  }
}

/** The broker could not be started (not installed, did not boot in time, ...). */
export class BrokerStartError extends Error {
  readonly code = 'BENCH_BROKER_START';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'BrokerStartError';
  }
}
