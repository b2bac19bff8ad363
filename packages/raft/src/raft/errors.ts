/** Base class of the Raft core's errors. `code` is stable across releases. */
export class RaftError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/**
 * A broken invariant: the log, the storage or the caller contradicts what Raft guarantees (a commit
 * past the last index, a truncation of committed entries, a Ready advanced twice). Like etcd's
 * panics, it is never caught and retried: the replica must stop, since continuing could acknowledge
 * or apply something wrong.
 */
export class RaftInvariantError extends RaftError {
  constructor(message: string) {
    super('RAFT_INVARIANT', message);
  }
}

/** Why a proposal was not appended. */
export const DropReason = {
  /** This replica is not the leader (`leader` on the error says who is, when known). */
  NotLeader: 'NOT_LEADER',
  /** A leadership transfer is in progress; proposals resume when it ends. */
  Transferring: 'TRANSFERRING',
  /** The uncommitted bytes bound (`maxUncommittedEntriesBytes`) is reached. */
  UncommittedLimit: 'UNCOMMITTED_LIMIT',
  /** A configuration change is already pending (proposed and not yet applied). */
  ConfChangePending: 'CONF_CHANGE_PENDING',
  /** The configuration change does not apply to the current configuration. */
  ConfChangeInvalid: 'CONF_CHANGE_INVALID',
  /** This replica is not a voter: learners never lead. */
  NotVoter: 'NOT_VOTER',
} as const;
export type DropReason = (typeof DropReason)[keyof typeof DropReason];

/** An expected refusal of `propose`/`proposeConfChange`: nothing was appended, retry elsewhere or later. */
export class ProposalDroppedError extends RaftError {
  readonly reason: DropReason;
  readonly leader: string | undefined;
  constructor(reason: DropReason, leader: string | undefined, detail?: string) {
    super('PROPOSAL_DROPPED', `proposal dropped: ${reason}${detail ? ` (${detail})` : ''}`);
    this.reason = reason;
    this.leader = leader;
  }
}

/** A configuration value is out of its documented range. */
export class RaftConfigError extends RaftError {
  constructor(message: string) {
    super('RAFT_CONFIG', message);
  }
}

/** A membership change that cannot be applied to the configuration it targets. */
export class ConfChangeError extends RaftError {
  constructor(message: string) {
    super('CONF_CHANGE_INVALID', message);
  }
}

/** A message type that only the replica itself may produce arrived through `step`. */
export class UnexpectedMessageError extends RaftError {
  constructor(message: string) {
    super('RAFT_UNEXPECTED_MESSAGE', message);
  }
}

/** Bytes that are not a valid encoded message or conf change. */
export class RaftDecodeError extends RaftError {
  constructor(message: string) {
    super('RAFT_DECODE', message);
  }
}

/** Throw a `RaftInvariantError` unless `condition` holds. */
export function invariant(condition: boolean, message: string | (() => string)): asserts condition {
  if (!condition) throw new RaftInvariantError(typeof message === 'string' ? message : message());
}
