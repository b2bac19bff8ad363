import { ReplicatedLogError } from '../errors.ts';

/** A transport could not reach a peer (no connection to it, or it was cut). */
export class PeerUnreachableError extends ReplicatedLogError {
  readonly peer: string;
  constructor(peer: string) {
    super('PEER_UNREACHABLE', `peer ${peer} unreachable`);
    this.peer = peer;
  }
}

/** A replica of the group is already open on this host: one replica per group per node. */
export class GroupAlreadyOpenError extends ReplicatedLogError {
  constructor(groupId: string) {
    super('GROUP_ALREADY_OPEN', `group ${groupId}: a replica is already open on this host`);
  }
}

/**
 * The leader refused a proposal because the group's uncommitted entries reached their bound
 * (`RaftConfig.maxUncommittedEntriesBytes`): nothing was appended; retry once the backlog commits.
 */
export class GroupOverloadedError extends ReplicatedLogError {
  constructor(groupId: string) {
    super('GROUP_OVERLOADED', `group ${groupId}: too many uncommitted bytes, proposal refused`);
  }
}

/**
 * A membership change was refused: another one is still in progress, or the change does not apply
 * to the current membership (adding a voter twice, removing a node that is not a member).
 */
export class MembershipChangeError extends ReplicatedLogError {
  constructor(groupId: string, detail: string) {
    super('MEMBERSHIP_CHANGE_REFUSED', `group ${groupId}: membership change refused: ${detail}`);
  }
}

/** A read barrier was not confirmed by a leader in time (no leader, or cut off from it). */
export class BarrierTimeoutError extends ReplicatedLogError {
  constructor(groupId: string, ms: number) {
    super('BARRIER_TIMEOUT', `group ${groupId}: no leader confirmed the commit index within ${ms} ms`);
  }
}
