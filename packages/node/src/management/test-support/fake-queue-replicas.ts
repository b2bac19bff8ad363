/**
 * The queue replica operations of a cluster, in memory, for tests of the management API and `styx
 * ctl` on a node alone (the broker's own need a real cluster). Placements are set by the test; grow,
 * shrink and rebalance decide with the real placement functions, and refusals are the broker's
 * ChannelErrors, so the API's mapping of them is what runs in production.
 */
import type { Broker } from '../../broker/broker.ts';
import type { QueueReplicas } from '../../broker/queue-replica-ops.ts';
import type { ClusterMemberStatus } from '../../cluster/cluster-view.ts';
import type {
  Assignment,
  GrowStrategy,
  LeaderTransfer,
  QueueKey,
  QueueSelector,
} from '../../cluster/placement.ts';
import { growPlan, parseQueueKey, queueKey, rebalanceLeaders, shrinkPlan } from '../../cluster/placement.ts';
import type { GroupStatus } from '../../cluster/queue-rpc-codec.ts';
import { ChannelError, Code, notFound } from '../../errors/amqp-error.ts';
import { silentLogger } from '../../logging/logger.ts';
import type { QueueRecord } from '../../metadata/types.ts';
import { ManagementServer } from '../management-server.ts';
import type { QueueReplicaOps } from '../queue-replicas-api.ts';
import { FakeClusterView, threeMembers } from './fake-cluster-view.ts';

interface Placement {
  members: string[];
  leader: string | undefined;
}

export class FakeQueueReplicas implements QueueReplicaOps {
  /** Replicas (node ids, the preferred leader first) and leader, by `queueKey`. */
  readonly placements = new Map<QueueKey, Placement>();
  /** The members (`threeMembers`), and which of them the answering node reaches. */
  readonly members: readonly ClusterMemberStatus[] = threeMembers();
  online = new Set(['id-1', 'id-3']);
  /** When set, quorumStatus rejects with it (a leader that does not answer). */
  statusError: Error | undefined;
  /** Leadership transfers asked by rebalanceQueues. */
  readonly transferred: LeaderTransfer[] = [];

  /** Give `vhost`/`name` these replicas, led by the first unless `leader` says otherwise (null: none). */
  place(vhost: string, name: string, members: string[], leader: string | null = members[0] ?? null): void {
    this.placements.set(queueKey({ vhost, name }), { members, leader: leader ?? undefined });
  }

  private placement(vhost: string, name: string): Placement {
    const placement = this.placements.get(queueKey({ vhost, name }));
    if (placement === undefined) throw new Error(`test set no placement for queue '${name}'`);
    return placement;
  }

  /** A member's id from its id or name, as the broker takes nodes; 404 otherwise. */
  private memberId(node: string): string {
    const member = this.members.find((m) => m.id === node || m.name === node);
    if (member === undefined) throw notFound(`no cluster member '${node}'`);
    return member.id;
  }

  private assignment(): Assignment {
    return new Map(
      [...this.placements].map(([key, p]) => [
        key,
        p.leader === undefined ? { replicas: p.members } : { replicas: p.members, leader: p.leader },
      ]),
    );
  }

  queueReplicas(record: QueueRecord): QueueReplicas | undefined {
    const p = this.placements.get(queueKey(record));
    if (p === undefined) return undefined;
    return {
      members: [...p.members],
      leader: p.leader,
      online: p.members.filter((id) => this.online.has(id)),
    };
  }

  async quorumStatus(vhost: string, name: string): Promise<GroupStatus> {
    if (this.statusError !== undefined) throw this.statusError;
    const p = this.placement(vhost, name);
    return {
      leader: p.leader ?? '',
      term: 4,
      commitIndex: 42,
      replicas: p.members.map((node) => ({
        node,
        role: node === p.leader ? 'leader' : 'follower',
        match: node === p.leader ? 42 : 40,
        active: this.online.has(node),
      })),
    };
  }

  async addQueueMember(vhost: string, name: string, node: string): Promise<readonly string[]> {
    const p = this.placement(vhost, name);
    const id = this.memberId(node);
    if (p.members.includes(id)) {
      throw new ChannelError(Code.PRECONDITION_FAILED, `node ${node} already holds a replica of '${name}'`);
    }
    p.members.push(id);
    return [...p.members];
  }

  async deleteQueueMember(vhost: string, name: string, node: string): Promise<readonly string[]> {
    const p = this.placement(vhost, name);
    const id = this.memberId(node);
    if (!p.members.includes(id)) throw notFound(`node ${node} holds no replica of '${name}'`);
    if (p.members.length === 1) {
      throw new ChannelError(Code.PRECONDITION_FAILED, `node ${node} holds the last replica of '${name}'`);
    }
    p.members = p.members.filter((m) => m !== id);
    return [...p.members];
  }

  async growQueues(node: string, strategy: GrowStrategy, selector: QueueSelector): Promise<number> {
    const id = this.memberId(node);
    const changes = growPlan({ node: id, assignment: this.assignment(), selector, strategy });
    for (const change of changes) this.placements.get(change.queueKey)?.members.push(id);
    return changes.length;
  }

  async shrinkQueues(
    node: string,
  ): Promise<{ readonly removed: number; readonly skipped: readonly string[] }> {
    const id = this.memberId(node);
    const plan = shrinkPlan({ node: id, assignment: this.assignment() });
    for (const change of plan.remove) {
      const { vhost, name } = parseQueueKey(change.queueKey);
      const p = this.placement(vhost, name);
      p.members = p.members.filter((m) => m !== id);
    }
    return { removed: plan.remove.length, skipped: plan.skipped.map((s) => s.queueKey) };
  }

  async rebalanceQueues(): Promise<readonly LeaderTransfer[]> {
    const members = this.members.map(({ id }) => ({ id, online: this.online.has(id) }));
    const transfers = rebalanceLeaders({ members, assignment: this.assignment() });
    // As the groups would once the transfers complete.
    for (const t of transfers) {
      const p = this.placements.get(t.queueKey);
      if (p !== undefined) p.leader = t.to;
    }
    this.transferred.push(...transfers);
    return transfers;
  }
}

/**
 * A started management server of `broker` answering as styx-1 of FakeClusterView's cluster, with
 * the queue replicas of a FakeQueueReplicas and the three members' names in the metadata.
 */
export async function startClusteredManagement(
  broker: Broker,
): Promise<{ readonly server: ManagementServer; readonly replicas: FakeQueueReplicas }> {
  const replicas = new FakeQueueReplicas();
  await recordClusterNodes(broker, replicas.members);
  const server = new ManagementServer({
    broker,
    logger: silentLogger(),
    cluster: new FakeClusterView(),
    queueReplicas: replicas,
  });
  await server.start('127.0.0.1', 0);
  return { server, replicas };
}

/**
 * Record `members` as the cluster's nodes in `broker`'s metadata (a node alone takes the command and
 * applies it like any other), so replies can map their ids to names as a clustered node does.
 */
export async function recordClusterNodes(
  broker: Broker,
  members: readonly ClusterMemberStatus[],
): Promise<void> {
  for (const m of members) {
    const reply = await broker.manage({
      type: 'addClusterNode',
      id: m.id,
      peerId: m.peerId,
      name: m.name,
      address: m.address,
    });
    if (reply.type === 'error') throw new Error(`addClusterNode ${m.name}: ${reply.text}`);
  }
}
