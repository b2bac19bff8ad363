/**
 * A ClusterView for tests of the management API and `styx ctl`: a cluster in memory whose members,
 * leader and refusals a test sets, recording the joins and forgets asked of it.
 */
import type { ClusterMemberStatus, ClusterView } from '../../cluster/cluster-view.ts';
import {
  ClusterChangeRefusedError,
  ClusterNodeNotFoundError,
  ClusterUnavailableError,
} from '../../cluster/cluster-view.ts';

/** Three members: styx-1 (the node answering, leader), styx-2 (voter, offline), styx-3 (learner). */
export function threeMembers(): ClusterMemberStatus[] {
  return [
    {
      id: 'id-1',
      peerId: 'peer-1',
      name: 'styx-1',
      address: '10.0.0.1:25680',
      online: true,
      isSelf: true,
      voter: 'voter',
    },
    {
      id: 'id-2',
      peerId: 'peer-2',
      name: 'styx-2',
      address: '10.0.0.2:25680',
      online: false,
      isSelf: false,
      voter: 'voter',
    },
    {
      id: 'id-3',
      peerId: 'peer-3',
      name: 'styx-3',
      address: '10.0.0.3:25680',
      online: true,
      isSelf: false,
      voter: 'learner',
    },
  ];
}

export class FakeClusterView implements ClusterView {
  memberList: ClusterMemberStatus[] = threeMembers();
  leader: string | undefined = 'id-1';
  /** When set, join and forget reject with ClusterUnavailableError. */
  unavailable = false;
  readonly joined: string[] = [];
  readonly forgotten: string[] = [];

  members(): ClusterMemberStatus[] {
    return this.memberList;
  }

  metadataLeader(): string | undefined {
    return this.leader;
  }

  self(): { id: string; name: string } {
    return { id: 'id-1', name: 'styx-1' };
  }

  async join(address: string): Promise<void> {
    if (this.unavailable) throw new ClusterUnavailableError('no metadata leader is reachable');
    this.joined.push(address);
  }

  async forget(idOrName: string): Promise<void> {
    if (this.unavailable) throw new ClusterUnavailableError('no metadata leader is reachable');
    const member = this.memberList.find((m) => m.id === idOrName || m.name === idOrName);
    if (member === undefined) throw new ClusterNodeNotFoundError(`no cluster node '${idOrName}'`);
    if (this.memberList.length === 1) {
      throw new ClusterChangeRefusedError(
        `cannot forget node '${member.name}': it is the last member of the cluster`,
      );
    }
    this.memberList = this.memberList.filter((m) => m !== member);
    this.forgotten.push(idOrName);
  }
}
