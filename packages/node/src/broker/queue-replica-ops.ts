/**
 * The operators' verbs on the replicas of queues (`rabbitmq-queues`' add_member, delete_member,
 * grow, shrink, rebalance and quorum_status, which the management API and `styx ctl` call), and the
 * rebalance of queue leaders after a member joins or comes back. Membership changes are metadata
 * commands (`setQueueMembers`); each node then starts or drops its replicas as they apply
 * (ClusterQueues). On a node alone every verb refuses: its queues have one replica each.
 */
import type { Assignment, GrowStrategy, LeaderTransfer, QueueSelector } from '../cluster/placement.ts';
import {
  DEFAULT_QUORUM_GROUP_SIZE,
  growPlan,
  INITIAL_GROUP_SIZE_ARG,
  parseQueueKey,
  queueKey,
  rebalanceLeaders,
  shrinkPlan,
} from '../cluster/placement.ts';
import type { GroupStatus } from '../cluster/queue-rpc-codec.ts';
import { ChannelError, Code, notFound } from '../errors/amqp-error.ts';
import type { Logger } from '../logging/logger.ts';
import type { MetadataCommand, MetadataMachine, QueueRecord } from '../metadata/metadata-machine.ts';
import { integerArgument } from '../metadata/queue-arguments.ts';
import type { BrokerCluster } from './broker-cluster.ts';
import type { ClusterQueues } from './cluster-queues.ts';

/** Where a queue's replicas are (`QueueReplicaOperations.queueReplicas`). */
export interface QueueReplicas {
  readonly members: readonly string[];
  readonly leader: string | undefined;
  readonly online: readonly string[];
  /**
   * How many replicas the queue should have: its `x-quorum-initial-group-size` (or the default of
   * 3), at most the cluster's size. Absent: as many as it has.
   */
  readonly target?: number;
}

/** How long after a member joins or returns the queue leaders are rebalanced, ms. */
const REBALANCE_DELAY_MS = 10_000;
/**
 * Leadership transfers a rebalance asks for at once; the next batch follows a pause. A node back
 * from a crash may be owed thousands of leaders: moved all at once they are thousands of elections
 * in one turn, heartbeats late on every node and a publish stall on each queue; moved gradually
 * (as RabbitMQ 4.2 learned to), each queue pauses for one election and the nodes keep up.
 */
export const REBALANCE_BATCH = 50;
/** Pause between two batches of a rebalance, ms (3,000 moves take about 12 s). */
export const REBALANCE_PAUSE_MS = 200;
/** Rebalances in a row run again for transfers whose target was still catching up (about 5 min). */
export const REBALANCE_FOLLOW_UPS = 30;

/** What the replica operations need of their broker. */
export interface QueueReplicaOpsHost {
  readonly metadata: MetadataMachine;
  readonly logger: Logger;
  /** Absent on a node alone, and `clusterQueues` with it. */
  readonly cluster: Pick<BrokerCluster, 'isDown'> | undefined;
  readonly clusterQueues:
    | Pick<ClusterQueues, 'membersOf' | 'handle' | 'status' | 'transferLeadership'>
    | undefined;
  /** Whether this node leads the metadata group. */
  leadsMetadata(): boolean;
  /** Propose a metadata command; error replies are thrown as channel or connection errors. */
  runMeta(command: MetadataCommand): Promise<unknown>;
}

function notClustered(): ChannelError {
  return new ChannelError(
    Code.PRECONDITION_FAILED,
    'this node is not in a cluster: its queues have one replica',
  );
}

export class QueueReplicaOperations {
  readonly #host: QueueReplicaOpsHost;
  #rebalanceTimer: NodeJS.Timeout | undefined;
  /** Rebalances scheduled again in a row for transfers whose target was catching up. */
  #followUps = 0;
  /** The rebalance running on this node, if any (see `rebalanceQueues`). */
  #rebalancing: Promise<readonly LeaderTransfer[]> | undefined;
  #stopped = false;

  constructor(host: QueueReplicaOpsHost) {
    this.#host = host;
  }

  /** Cancel a pending rebalance (the node shuts down). */
  stop(): void {
    this.#stopped = true;
    if (this.#rebalanceTimer !== undefined) clearTimeout(this.#rebalanceTimer);
  }

  /**
   * Where a queue's replicas are: its members (node ids, the preferred leader first), the leader as
   * this node knows it, and which members are online. Undefined on a node alone.
   */
  queueReplicas(record: QueueRecord): QueueReplicas | undefined {
    const { clusterQueues, cluster } = this.#host;
    if (clusterQueues === undefined || cluster === undefined) return undefined;
    const members = clusterQueues.membersOf(record);
    const size = integerArgument(record.arguments, INITIAL_GROUP_SIZE_ARG);
    const wanted = size !== undefined && size >= 1 ? size : DEFAULT_QUORUM_GROUP_SIZE;
    return {
      members,
      leader: clusterQueues.handle(record).leader,
      online: members.filter((id) => !cluster.isDown(id)),
      target: Math.min(wanted, Math.max(this.#host.metadata.clusterNodes().length, 1)),
    };
  }

  /** The queue group's status as its leader reports it (`quorum_status`). */
  async quorumStatus(vhost: string, name: string): Promise<GroupStatus> {
    const { clusterQueues, record } = this.#clusteredQueue(vhost, name);
    return clusterQueues.status(record);
  }

  /** `add_member`: a replica of the queue on `node` (a member's id or name). */
  async addQueueMember(vhost: string, name: string, node: string): Promise<readonly string[]> {
    const { clusterQueues, record } = this.#clusteredQueue(vhost, name);
    const id = this.#memberId(node);
    const members = clusterQueues.membersOf(record);
    if (members.includes(id))
      throw new ChannelError(Code.PRECONDITION_FAILED, `node ${node} already holds a replica of '${name}'`);
    return this.#setQueueMembers(record, [...members, id]);
  }

  /** `delete_member`: remove the queue's replica on `node`; never its last one. */
  async deleteQueueMember(vhost: string, name: string, node: string): Promise<readonly string[]> {
    const { clusterQueues, record } = this.#clusteredQueue(vhost, name);
    const id = this.#memberId(node);
    const members = clusterQueues.membersOf(record);
    if (!members.includes(id)) throw notFound(`node ${node} holds no replica of '${name}'`);
    if (members.length === 1) {
      throw new ChannelError(Code.PRECONDITION_FAILED, `node ${node} holds the last replica of '${name}'`);
    }
    return this.#setQueueMembers(
      record,
      members.filter((m) => m !== id),
    );
  }

  /** `grow NODE all|even`: a replica on `node` for every selected durable queue lacking one. */
  async growQueues(node: string, strategy: GrowStrategy, selector: QueueSelector): Promise<number> {
    const id = this.#memberId(node);
    const changes = growPlan({ node: id, assignment: this.assignment(), selector, strategy });
    for (const change of changes) {
      const { vhost, name } = parseQueueKey(change.queueKey);
      const record = this.#host.metadata.queue(vhost, name);
      const clusterQueues = this.#host.clusterQueues;
      if (record === undefined || clusterQueues === undefined) continue;
      await this.#setQueueMembers(record, [...clusterQueues.membersOf(record), id]);
    }
    return changes.length;
  }

  /** `shrink NODE`: remove `node`'s replica from every queue, except where it is the last. */
  async shrinkQueues(
    node: string,
  ): Promise<{ readonly removed: number; readonly skipped: readonly string[] }> {
    const id = this.#memberId(node);
    const plan = shrinkPlan({ node: id, assignment: this.assignment() });
    for (const change of plan.remove) {
      const { vhost, name } = parseQueueKey(change.queueKey);
      const record = this.#host.metadata.queue(vhost, name);
      const clusterQueues = this.#host.clusterQueues;
      if (record === undefined || clusterQueues === undefined) continue;
      await this.#setQueueMembers(
        record,
        clusterQueues.membersOf(record).filter((m) => m !== id),
      );
    }
    return { removed: plan.remove.length, skipped: plan.skipped.map((s) => s.queueKey) };
  }

  /**
   * `rebalance`: even out queue leaders over the online members, REBALANCE_BATCH transfers at a time
   * with REBALANCE_PAUSE_MS between batches; resolves with the transfers asked for once all are.
   * One rebalance runs at a time on a node: a plan made while an earlier one's transfers are still
   * under way counts leaders that are about to move and moves others in their place (a node back
   * from a crash among 10,000 queues ended up leading 4,113-5,924 of them for a share of 3,333).
   * A transfer whose queue is no longer led by the node the plan moves it from is skipped: an
   * election, or another node's rebalance, moved it meanwhile.
   */
  async rebalanceQueues(): Promise<readonly LeaderTransfer[]> {
    return this.#singleFlight(() => this.#rebalance(false));
  }

  async #singleFlight(run: () => Promise<readonly LeaderTransfer[]>): Promise<readonly LeaderTransfer[]> {
    while (this.#rebalancing !== undefined) await this.#rebalancing.catch(() => undefined);
    const running = run();
    this.#rebalancing = running;
    try {
      return await running;
    } finally {
      if (this.#rebalancing === running) this.#rebalancing = undefined;
    }
  }

  /** `automatic`: the metadata leader's own rebalance, which stops if it loses that leadership. */
  async #rebalance(automatic: boolean): Promise<readonly LeaderTransfer[]> {
    const { cluster, clusterQueues, metadata } = this.#host;
    if (cluster === undefined || clusterQueues === undefined) throw notClustered();
    // A drained node (maintenance mode) counts as offline: no leader moves to it, its own move away.
    const members = metadata
      .clusterNodes()
      .map((n) => ({ id: n.id, online: !cluster.isDown(n.id) && !metadata.isNodeDrained(n.id) }));
    const transfers = rebalanceLeaders({ members, assignment: this.assignment() });
    const asked: LeaderTransfer[] = [];
    let behind = 0;
    const ask = async (transfer: LeaderTransfer): Promise<void> => {
      const { vhost, name } = parseQueueKey(transfer.queueKey);
      const record = metadata.queue(vhost, name);
      if (record === undefined || clusterQueues.handle(record).leader !== transfer.from) return;
      try {
        if (await clusterQueues.transferLeadership(record, transfer.to)) asked.push(transfer);
        else behind++;
      } catch (err) {
        this.#host.logger.warn({ err, queue: name, vhost }, 'leadership transfer not asked');
      }
    };
    for (let i = 0; i < transfers.length && !this.#stopped; i += REBALANCE_BATCH) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, REBALANCE_PAUSE_MS));
      if (automatic && !this.#host.leadsMetadata()) {
        this.#host.logger.info(
          { asked: asked.length, planned: transfers.length },
          'queue leader rebalance stopped: this node no longer leads the metadata group',
        );
        break;
      }
      await Promise.all(transfers.slice(i, i + REBALANCE_BATCH).map(ask));
    }
    if (behind > 0) this.#followUp(behind);
    return asked;
  }

  /**
   * `behind` transfers were not asked because their target does not hold the leader's whole log yet
   * (a node back from a crash catches its groups up gradually): the metadata leader rebalances again
   * later, at most REBALANCE_FOLLOW_UPS times in a row.
   */
  #followUp(behind: number): void {
    if (this.#followUps >= REBALANCE_FOLLOW_UPS) {
      this.#host.logger.warn(
        { behind },
        'queue leader rebalance left transfers whose target is still catching up; run rebalance again later',
      );
      return;
    }
    this.#followUps++;
    this.#host.logger.info({ behind }, 'queue leader transfers wait for their target to catch up');
    this.scheduleRebalance(true);
  }

  /**
   * After a member joins or comes back, the metadata leader evens out queue leaders (once things
   * settle: a restarted node first catches its replicas up, and a flapping one moves nothing).
   */
  scheduleRebalance(followUp = false): void {
    // A member joined or came back: a fresh series of follow-ups.
    if (!followUp) this.#followUps = 0;
    if (this.#rebalanceTimer !== undefined || !this.#host.leadsMetadata()) return;
    this.#rebalanceTimer = setTimeout(() => {
      this.#rebalanceTimer = undefined;
      if (!this.#host.leadsMetadata()) return;
      this.#singleFlight(() => this.#rebalance(true)).then(
        (transfers) => {
          if (transfers.length > 0)
            this.#host.logger.info({ transfers: transfers.length }, 'queue leaders rebalanced');
        },
        (err: unknown) => this.#host.logger.warn({ err }, 'queue leader rebalance failed'),
      );
    }, REBALANCE_DELAY_MS);
    this.#rebalanceTimer.unref();
  }

  /** The placement of every replicated queue, leaders as this node knows them. */
  assignment(): Assignment {
    const assignment = new Map<string, { replicas: readonly string[]; leader?: string }>();
    const clusterQueues = this.#host.clusterQueues;
    if (clusterQueues === undefined) return assignment;
    for (const record of this.#host.metadata.queues()) {
      if (record.members === undefined || !record.durable || record.exclusiveOwner !== undefined) continue;
      const leader = clusterQueues.handle(record).leader;
      assignment.set(
        queueKey(record),
        leader === undefined ? { replicas: record.members } : { replicas: record.members, leader },
      );
    }
    return assignment;
  }

  #clusteredQueue(
    vhost: string,
    name: string,
  ): { clusterQueues: NonNullable<QueueReplicaOpsHost['clusterQueues']>; record: QueueRecord } {
    const clusterQueues = this.#host.clusterQueues;
    if (clusterQueues === undefined) throw notClustered();
    const record = this.#host.metadata.queue(vhost, name);
    if (record === undefined) throw notFound(`no queue '${name}' in vhost '${vhost}'`);
    return { clusterQueues, record };
  }

  /** A member's node id from its id or name; 404 otherwise. */
  #memberId(node: string): string {
    const record = this.#host.metadata.clusterNode(node);
    if (record === undefined) throw notFound(`no cluster member '${node}'`);
    return record.id;
  }

  async #setQueueMembers(record: QueueRecord, members: readonly string[]): Promise<readonly string[]> {
    if (!record.durable || record.exclusiveOwner !== undefined) {
      throw new ChannelError(
        Code.PRECONDITION_FAILED,
        `queue '${record.name}' in vhost '${record.vhost}' is not durable: it lives on its node alone`,
      );
    }
    await this.#host.runMeta({
      type: 'setQueueMembers',
      vhost: record.vhost,
      name: record.name,
      groupId: record.groupId,
      members,
    });
    return members;
  }
}
