/** Base class of every error a replicated log reports. `code` is stable across releases. */
export class ReplicatedLogError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Thrown by `propose` on a replica that is not the leader. */
export class NotLeaderError extends ReplicatedLogError {
  readonly leader: string | undefined;
  constructor(groupId: string, leader: string | undefined) {
    super('NOT_LEADER', `group ${groupId}: not the leader${leader ? ` (leader: ${leader})` : ''}`);
    this.leader = leader;
  }
}

/** Thrown by `propose` after the log was closed, and by proposals pending at close time. */
export class LogClosedError extends ReplicatedLogError {
  constructor(groupId: string) {
    super('LOG_CLOSED', `group ${groupId}: log closed`);
  }
}

/** The log can no longer commit (storage failure); the group must be restarted. */
export class LogFailedError extends ReplicatedLogError {
  constructor(groupId: string, cause: unknown) {
    super('LOG_FAILED', `group ${groupId}: log failed: ${String(cause)}`, { cause });
  }
}

/** Thrown by `propose` before `open()` has resolved: the log has not replayed its state yet. */
export class LogNotOpenError extends ReplicatedLogError {
  constructor(groupId: string) {
    super('LOG_NOT_OPEN', `group ${groupId}: log not open`);
  }
}

/**
 * Why a log that is not open refuses a call: closed, failed (with the failure that stopped it), or
 * not opened yet (any other `state`).
 */
export function notOpenError(groupId: string, state: string, failure: Error | undefined): Error {
  switch (state) {
    case 'closed':
      return new LogClosedError(groupId);
    case 'failed':
      return failure ?? new LogFailedError(groupId, 'unknown');
    default:
      return new LogNotOpenError(groupId);
  }
}

/** The stored log contradicts an invariant (a gap after the snapshot, an index out of order). */
export class LogCorruptedError extends ReplicatedLogError {
  constructor(groupId: string, detail: string) {
    super('LOG_CORRUPTED', `group ${groupId}: stored log corrupted: ${detail}`);
  }
}

/**
 * A write to the node's log store failed; the store accepts no further writes (a later batch must
 * never become durable after an earlier one was lost) and the node must reopen it.
 */
export class LogStoreFailedError extends ReplicatedLogError {
  constructor(cause: unknown) {
    super('LOG_STORE_FAILED', `log store failed: ${String(cause)}`, { cause });
  }
}

/** A write was queued on a log store that is closing or closed. */
export class LogStoreClosedError extends ReplicatedLogError {
  constructor() {
    super('LOG_STORE_CLOSED', 'log store closed');
  }
}
