/**
 * The redrive audit as the metadata group keeps it: one record per redrive (moving messages from a
 * dead-letter queue back to their source queue or to a named exchange), with who asked, when,
 * what and where, and how far it got. Every node applies the metadata log, so every node shows the
 * same records, and a redrive whose node failed is resumed from its record (see redrive/).
 *
 * Records are plain JSON data (the metadata log and snapshots are JSON): absent values are `null`.
 */
import type { BrowsePosition } from '../queue/message-browse.ts';

/** `running` until it ends: `done` (the selection was dealt with), `cancelled`, or `failed` (why: `error`). */
export const REDRIVE_STATES = ['running', 'done', 'cancelled', 'failed'] as const;
export type RedriveState = (typeof REDRIVE_STATES)[number];

/**
 * Where the messages go:
 * - `source`: back to the queue each message died in last (its first `x-death` entry), published
 *   to the default exchange with that queue's name as routing key, as RabbitMQ's shovel-based
 *   "move messages" does: it reaches that queue only, never other queues bound where it was first
 *   published;
 * - `exchange`: published to `exchange` with `routingKey` (the default exchange is '').
 */
export type RedriveTarget =
  | { readonly kind: 'source' }
  | { readonly kind: 'exchange'; readonly exchange: string; readonly routingKey: string };

/** What was asked, fixed when the redrive starts. */
export interface RedriveSpec {
  /** The message filter in its JSON form (queue/message-filter.ts `filterJson`); `{}` selects all. */
  readonly filter: Readonly<Record<string, unknown>>;
  readonly target: RedriveTarget;
  /** Messages per second at most; null = as fast as the targets confirm. */
  readonly rate: number | null;
  /** Selected messages dealt with (moved or failed) at most; null = all. */
  readonly maxMessages: number | null;
}

/** Messages moved (or, on a dry run, that would move) to one exchange with one routing key. */
export interface RedriveTargetCount {
  readonly exchange: string;
  readonly routingKey: string;
  readonly count: number;
}

/** Messages that stayed in the dead-letter queue for one reason. */
export interface RedriveFailureCount {
  readonly reason: string;
  readonly count: number;
}

/** One selected message as a dry run shows it. */
export interface RedriveSample {
  /** Its id in the dead-letter queue. */
  readonly id: number;
  readonly exchange: string;
  readonly routingKey: string;
  /** The queues it would reach now. */
  readonly queues: readonly string[];
  /** Why it would stay, or null when it would move. */
  readonly failure: string | null;
}

/**
 * How far a redrive got. Counts are absolute (each update replaces the last), so an update applied
 * twice changes nothing.
 */
export interface RedriveProgress {
  /** Selected messages counted when it started (capped by `maxMessages`); null before the count. */
  readonly total: number | null;
  /**
   * The dead-letter queue's applied log index when the count started: messages enqueued after it
   * (a message id is its enqueue's index) are not part of this redrive, so one that dies again
   * into the same queue is not moved twice by it.
   */
  readonly bound: number | null;
  /** The last dead-letter queue message id dealt with (moved or failed); null before the first. */
  readonly cursor: number | null;
  /**
   * That message's place in the queue's delivery order (queue/message-browse.ts `BrowsePosition`),
   * the cursor a resume goes on from; absent or null in records of builds before it (they go on
   * after `cursor`).
   */
  readonly position?: BrowsePosition | null;
  /**
   * Moved: its copy was confirmed by every queue the target routes it to, and it was (or, while
   * listed in `inflight`, is being) removed from the dead-letter queue.
   */
  readonly moved: number;
  /** Left in the dead-letter queue (no route, refused, no source): see `failures`. */
  readonly failed: number;
  /** Ids of moved messages whose removal from the dead-letter queue may not have committed yet. */
  readonly inflight: readonly number[];
  readonly targets: readonly RedriveTargetCount[];
  readonly failures: readonly RedriveFailureCount[];
  /** A dry run's first selected messages (empty for a real run). */
  readonly sample: readonly RedriveSample[];
}

export interface RedriveRecord extends RedriveSpec {
  readonly id: string;
  /** The user who asked. */
  readonly user: string;
  /** The dead-letter queue. */
  readonly vhost: string;
  readonly queue: string;
  /** Its incarnation: a queue deleted and declared again is another queue. */
  readonly groupId: string;
  readonly dryRun: boolean;
  /** The node (id) running it. */
  readonly owner: string;
  readonly state: RedriveState;
  /** A cancel was asked: the owner stops before the next batch and ends it `cancelled`. */
  readonly cancelRequested: boolean;
  /** ms since the epoch, from the metadata log's entries. */
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly finishedAt: number | null;
  readonly error: string | null;
  /** Times another node took it over after its owner was gone. */
  readonly takeovers: number;
  readonly progress: RedriveProgress;
}

/** The metadata commands of the redrive audit (see redrive-ledger.ts for their rules). */
export type RedriveCommand =
  | {
      readonly type: 'startRedrive';
      readonly id: string;
      readonly user: string;
      readonly vhost: string;
      readonly queue: string;
      readonly groupId: string;
      readonly owner: string;
      readonly dryRun: boolean;
      readonly spec: RedriveSpec;
    }
  | {
      readonly type: 'updateRedrive';
      readonly id: string;
      /** Refused unless it is the record's owner: a node that lost it stops. */
      readonly owner: string;
      readonly state: RedriveState;
      readonly progress: RedriveProgress;
      readonly error?: string | null | undefined;
    }
  /** Another node takes over a redrive whose owner is gone (compare-and-set on the owner). */
  | {
      readonly type: 'claimRedrive';
      readonly id: string;
      readonly owner: string;
      readonly previousOwner: string;
    }
  | { readonly type: 'cancelRedrive'; readonly id: string };

export const EMPTY_REDRIVE_PROGRESS: RedriveProgress = Object.freeze({
  total: null,
  bound: null,
  cursor: null,
  moved: 0,
  failed: 0,
  inflight: Object.freeze([]) as readonly number[],
  targets: Object.freeze([]) as readonly RedriveTargetCount[],
  failures: Object.freeze([]) as readonly RedriveFailureCount[],
  sample: Object.freeze([]) as readonly RedriveSample[],
});
