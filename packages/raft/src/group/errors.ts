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
