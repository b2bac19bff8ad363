import type { Logger } from '../logging/logger.ts';
import type { EffectiveQueueConfig } from '../metadata/effective-config.ts';
import type { MetadataMachine, QueueRecord } from '../metadata/metadata-machine.ts';
import type { OwnerSink } from '../queue/queue-actor.ts';
import type { QueueHandle } from '../queue/queue-handle.ts';
import type { QueueCounts } from '../queue/types.ts';
import type { QueueActors } from './queue-actors.ts';
import type { QueueDirectory } from './queue-directory.ts';

/** What a node alone gives its queue directory. */
export interface LocalQueueDirectoryHost {
  readonly nodeId: string;
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  readonly actors: QueueActors;
  /** Queue incarnations this node is deleting itself (it reports their message counts). */
  readonly localDeletes: Set<string>;
  effectiveConfig(record: QueueRecord): EffectiveQueueConfig;
  /** The open channel here with owner id `owner`. */
  localChannel(owner: string): OwnerSink | undefined;
  /** A new queue may give waiting dead-letter hand-offs of `vhost` somewhere to go. */
  wakeDeadLetters(vhost: string): void;
}

/**
 * The queues of a node alone: each is the actor running here (its handle is the actor itself), on
 * a single-voter log; a queue whose actor is not running (yet) cannot be reached.
 */
export class LocalQueueDirectory implements QueueDirectory {
  readonly #host: LocalQueueDirectoryHost;

  constructor(host: LocalQueueDirectoryHost) {
    this.#host = host;
  }

  /**
   * The queue was declared here (a queue declared on another node before clustering names that
   * node, which runs it).
   */
  serves(record: QueueRecord): boolean {
    return record.node === undefined;
  }

  membersOf(): readonly string[] {
    return [this.#host.nodeId];
  }

  group(): undefined {
    return undefined;
  }

  leaderHint(): undefined {
    return undefined;
  }

  handle(record: QueueRecord): QueueHandle | undefined {
    return this.#host.actors.get(record.vhost, record.name);
  }

  isLive(queue: QueueHandle): boolean {
    return this.#host.actors.get(queue.vhost, queue.name) === queue;
  }

  leaderCounts(queue: QueueHandle): Promise<QueueCounts> {
    return Promise.resolve(queue.counts());
  }

  resolveOwner(owner: string): OwnerSink | undefined {
    return this.#host.localChannel(owner);
  }

  async declared(record: QueueRecord, created: boolean): Promise<QueueCounts> {
    const host = this.#host;
    let actor = host.actors.get(record.vhost, record.name);
    if (created || actor === undefined) {
      actor = await host.actors.start(record, host.effectiveConfig(record).config);
      // The default exchange routes to it now: a hand-off to '' may have somewhere to go.
      host.wakeDeadLetters(record.vhost);
    } else {
      actor.touch().catch(() => undefined);
    }
    return actor.counts();
  }

  /** The actor counts its messages as it stops (not the deletion's apply, which skips it). */
  async delete(queue: QueueHandle, _counts: QueueCounts, commit: () => Promise<void>): Promise<number> {
    const deletes = this.#host.localDeletes;
    deletes.add(queue.groupId);
    try {
      await commit();
    } finally {
      deletes.delete(queue.groupId);
    }
    return this.#host.actors.stop(queue.vhost, queue.name, true);
  }

  metadataApplied(): void {}

  metadataRestored(): void {}

  async recover(): Promise<void> {
    const host = this.#host;
    for (const record of host.metadata.queues()) {
      if (!this.serves(record)) continue;
      await host.actors.start(record, host.effectiveConfig(record).config);
    }
  }

  stop(): void {}
}
