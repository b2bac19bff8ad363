/**
 * Maintenance mode on this node (`styx ctl drain` / `revive`, RabbitMQ's `rabbitmq-upgrade drain`):
 * a drained node hands every leadership it holds to other replicas, closes its client connections,
 * refuses new ones, and stays a voter in every group, so a rolling restart can stop it without a
 * queue or the metadata group losing its leader under load.
 *
 * Where the state lives: in the metadata group (`setNodeMaintenance`), not in a local file. Every
 * node then knows who is drained (a rebalance moves no leader to a drained node; a drained node
 * hands over to one that is not), `revive` works through any node, even while the drained one is
 * stopped, and the node finds itself drained again when it restarts (its metadata replica replays
 * the entry) until it is revived. This module only reacts to that state here (`refresh`, called
 * on every applied metadata change).
 *
 * How a drained node keeps off leadership: it stays a full voter and may still win an election
 * (its peers may pick it, or a leader may die while it is drained); every `HAND_OVER_CHECK_MS` it
 * hands each group it leads to the answering, furthest-along voter that is not drained itself.
 * Refusing to campaign instead (a flag in the Raft core) was weighed and rejected: when the
 * drained node holds the only up-to-date log among the online voters (a follower behind when its
 * leader died), the group could then elect nobody until revive, while winning and handing over
 * catches the other voter up first and keeps the queue available. A group with no other voter
 * online (a queue with one replica, or its other replicas down) stays led here: it serves its
 * queue until a voter is back, as RabbitMQ keeps such queues on a drained node.
 *
 * Clients: every connection is closed with 320 CONNECTION_FORCED and a reason naming maintenance
 * mode, which the SDK's recovery treats as a lost node (not a refusal) and answers by reconnecting
 * to the next URL; a client connecting while the node is drained gets the same code at its hello.
 * The close is graceful (`Connection.closeGracefully`): no new publish is taken, and the close waits
 * for the outcome of every publish taken, so a publisher never re-sends one that may still commit.
 */
import { Code, ConnectionError } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetadataMachine } from '../metadata/metadata-machine.ts';
import type { VoterProgress } from './handover-target.ts';
import { handOverTarget } from './handover-target.ts';

/** How often a drained node hands over the leaderships it holds (a transfer takes a few heartbeats), ms. */
export const HAND_OVER_CHECK_MS = 500;

/** A Raft group with a replica here, as the hand-over sees it (`RaftGroupLog`). */
export interface HandOverGroup {
  readonly role: string;
  readonly membership: { readonly voters: readonly string[] };
  progress(): ReadonlyMap<string, VoterProgress>;
  transferLeadership(to: string): void;
}

/** What maintenance mode needs of its node. */
export interface NodeMaintenanceHost {
  /** This node's id (its Raft node id). */
  readonly selfId: string;
  /** Its name, for the clients' close reason. */
  readonly selfName: string;
  readonly metadata: Pick<MetadataMachine, 'isNodeDrained'>;
  readonly logger: Logger;
  /** The queue replicas running here. */
  replicas(): Iterable<{ readonly vhost: string; readonly name: string; readonly groupId: string }>;
  /** The Raft group of a replica here (none for a queue that is not replicated). */
  queueGroup(groupId: string): HandOverGroup | undefined;
  /** The metadata group's replica here (none on a node alone). */
  readonly metadataGroup: HandOverGroup | undefined;
  /**
   * Close every client connection with 320 CONNECTION_FORCED and `reason`, each once its publishes
   * in flight are settled (in the background); how many there were.
   */
  closeClients(reason: string): number;
}

export class NodeMaintenance {
  readonly #host: NodeMaintenanceHost;
  readonly #log: Logger;
  #drained = false;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  /** When this node was drained (performance.now()), until it reports leading nothing. */
  #drainedAt: number | undefined;

  constructor(host: NodeMaintenanceHost) {
    this.#host = host;
    this.#log = host.logger.child({ component: 'maintenance' });
  }

  /** Whether this node is in maintenance mode as its metadata replica has it. */
  get drained(): boolean {
    return this.#drained;
  }

  /**
   * Follow the metadata: enter maintenance mode when this node was drained, leave it when revived.
   * Cheap when nothing changed (called on every applied metadata command).
   */
  refresh(): void {
    if (this.#stopped) return;
    const drained = this.#host.metadata.isNodeDrained(this.#host.selfId);
    if (drained === this.#drained) return;
    this.#drained = drained;
    if (drained) this.#enter();
    else this.#leave();
  }

  /** Refuse a client's connection while drained: 320, so the SDK tries another node (not a refusal). */
  checkAcceptsClients(): void {
    if (!this.#drained) return;
    throw new ConnectionError(
      Code.CONNECTION_FORCED,
      `node '${this.#host.selfName}' is in maintenance mode (drained): connect to another node of the cluster`,
    );
  }

  /**
   * One hand-over pass: ask each group led here to move its leadership to an eligible voter.
   * Returns how many groups this node still leads (those asked included: a transfer completes
   * within a few heartbeats).
   */
  handOver(): number {
    const { selfId, metadata } = this.#host;
    let leading = 0;
    for (const { label, group } of this.#groups()) {
      if (group.role !== 'leader') continue;
      leading++;
      const to = handOverTarget({
        self: selfId,
        voters: group.membership.voters,
        progress: group.progress(),
        eligible: (id) => !metadata.isNodeDrained(id),
      });
      if (to === undefined) continue;
      try {
        group.transferLeadership(to);
      } catch (err) {
        // Closed under us (the queue was deleted): nothing left to hand over.
        this.#log.debug({ err, group: label }, 'leadership hand-over not asked');
      }
    }
    if (leading === 0 && this.#drainedAt !== undefined) {
      const ms = Math.round(performance.now() - this.#drainedAt);
      this.#drainedAt = undefined;
      this.#log.info({ ms }, 'maintenance mode: this node leads no group any more');
    }
    return leading;
  }

  /** The node shuts down: stop handing over. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Every Raft group with a replica here, named for logs. */
  *#groups(): Generator<{ label: string; group: HandOverGroup }> {
    for (const replica of this.#host.replicas()) {
      const group = this.#host.queueGroup(replica.groupId);
      if (group !== undefined) yield { label: `queue '${replica.name}' in vhost '${replica.vhost}'`, group };
    }
    const metadata = this.#host.metadataGroup;
    if (metadata !== undefined) yield { label: 'the metadata group', group: metadata };
  }

  #enter(): void {
    this.#drainedAt = performance.now();
    const closed = this.#host.closeClients(
      `node '${this.#host.selfName}' was put into maintenance mode (drained): reconnect to another node`,
    );
    const leading = this.handOver();
    this.#log.info(
      { closedConnections: closed, leading },
      'maintenance mode: drained, handing leaderships over',
    );
    this.#timer = setInterval(() => this.handOver(), HAND_OVER_CHECK_MS);
    this.#timer.unref();
  }

  #leave(): void {
    this.#drainedAt = undefined;
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#log.info('maintenance mode: revived, accepting clients again');
  }
}
