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
  constructor(
    groupId: string,
    code = 'GROUP_OVERLOADED',
    message = `group ${groupId}: too many uncommitted bytes, proposal refused`,
  ) {
    super(code, message);
  }
}

/**
 * The node's queue of proposals waiting for its in-flight bound is full
 * (`RaftHostOptions.maxWaitingProposals`): nothing was appended; retry once the node catches up.
 * An overload like `GroupOverloadedError`, so callers that retry that retry this too.
 */
export class AdmissionQueueFullError extends GroupOverloadedError {
  constructor(groupId: string, limit: number) {
    super(
      groupId,
      'ADMISSION_QUEUE_FULL',
      `group ${groupId}: ${limit} proposals already wait for the node's in-flight bound, proposal refused`,
    );
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
